"""`python -m jobs.export --job-dir DIR`: run the export job."""

import sys

from workbench.jobkit import run

from jobs.export.job import main

if __name__ == "__main__":
    sys.exit(run(main))
