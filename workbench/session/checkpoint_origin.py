"""Where a checkpoint came from: a warning when the training run that wrote it did not end ok."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from workbench.session.store import job_status


def run_not_ok_warning(train_dir: Path) -> Optional[str]:
    """None when the train job at `train_dir` ended ok; else one line saying how it ended.

    A run that crashed, ran out of disk, was cancelled or timed out may have left a best
    checkpoint of an early epoch (or, before this was fixed, a partial one): it can still be
    tested, but the record must say so.
    """
    train_dir = Path(train_dir)
    if not (train_dir / "job.json").is_file():
        return "%s is not a job folder (no job.json): the run that wrote its checkpoint is unknown" % train_dir
    status = job_status(train_dir)
    if status.state == "ok":
        return None
    return (
        "the checkpoint comes from %s, which did not end ok (%s): it holds the best epoch seen "
        "before the run ended, not necessarily the run's result" % (train_dir.name, status.label())
    )
