"""Plain models of what each screen shows, fed by events; no textual here."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


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


class LatestJobView(View):
    """A view that follows one job of its kinds at a time: a newer job's events replace the old one's."""

    def __init__(self) -> None:
        super().__init__()
        self.reset(None)

    def reset(self, jid: Optional[str]) -> None:
        """Start following job `jid` (extend to clear the subclass's own fields)."""
        self.jid = jid
        self.status = ""
        self.state = ""

    def follow(self, job: Any) -> None:
        """Switch to `job` when it is not the followed one."""
        if job.jid != self.jid:
            self.reset(job.jid)

    def job_changed(self, job: Any) -> None:
        """Track the followed job's status."""
        if job.jid == self.jid or self.jid is None:
            if self.jid is None:
                self.reset(job.jid)
            self.status = job.status.label()
            self.state = job.status.state
        self.version += 1
