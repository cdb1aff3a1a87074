"""`python -m jobs.numerics --job-dir DIR`: run the numerics job."""

import sys

from jobs.numerics.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
