"""`python -m jobs.shift --job-dir DIR`: run the shift job."""

import sys

from jobs.shift.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
