"""`python -m jobs.resume --job-dir DIR`: run the resume job."""

import sys

from jobs.resume.job import main
from workbench.jobkit.context import run

if __name__ == "__main__":
    sys.exit(run(main))
