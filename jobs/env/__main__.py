"""`python -m jobs.env --job-dir DIR`: run the env job."""

import sys

from workbench.jobkit import run

from jobs.env.job import main

if __name__ == "__main__":
    sys.exit(run(main))
