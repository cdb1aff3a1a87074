"""Feeding a screen model as the app does: the batch folded into the one SessionModel, then the view told."""

from __future__ import annotations

from typing import Any, Dict, List


def feed(view: Any, job: Any, events: List[Dict[str, Any]]) -> None:
    """Fold a batch of one job's events into the view's model (as the tracker does) and hand the view what was kept."""
    view.ingest(job, view.model.record_for(job).ingest(events))


def changed(view: Any, job: Any) -> None:
    """The job's status changed: the record takes it (as the tracker sets it) and the view is told."""
    view.model.record_for(job).status = job.status
    view.job_changed(job)
