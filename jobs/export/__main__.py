"""`python -m jobs.export --job-dir DIR`: run the export job."""

import sys

from jobs.export.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
