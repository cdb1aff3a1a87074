"""`python -m jobs.train --job-dir DIR`: run the train job."""

import sys

from jobs.train.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
