"""Plain models of what each screen shows, fed by events; no textual here."""

from __future__ import annotations

from typing import Any, Dict, List


class View:
    """Base of the screen models: ingest events, count changes so screens redraw only when needed."""

    kinds: tuple = ()  # job kinds this view follows; empty = all

    def __init__(self) -> None:
        self.version = 0

    def wants(self, kind: str) -> bool:
        """True when this view follows jobs of `kind`."""
        return not self.kinds or kind in self.kinds

    def ingest(self, job: Any, events: List[Dict[str, Any]]) -> None:
        """Fold a batch of one job's events into the model."""
        for ev in events:
            self.apply(job, ev)
        self.version += 1

    def apply(self, job: Any, ev: Dict[str, Any]) -> None:
        """Fold one event (override)."""

    def job_changed(self, job: Any) -> None:
        """A job's status changed (override when the view shows it)."""
        self.version += 1
