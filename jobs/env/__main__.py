"""`python -m jobs.env --job-dir DIR`: run the env job."""

import sys

from jobs.env.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
