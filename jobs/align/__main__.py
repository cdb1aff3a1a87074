"""`python -m jobs.align --job-dir DIR`: run the align job."""

import sys

from jobs.align.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
