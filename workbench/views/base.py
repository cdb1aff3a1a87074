"""The base of the screen models: View reads job records from the one fold; LatestJobView follows the newest job."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.fold.record import JobRecord, SessionModel


class View:
    """Base of the screen models: reads the session's one fold, counts changes so screens redraw only when needed."""

    kinds: tuple = ()  # job kinds this view follows; empty = all

    def __init__(self, model: SessionModel) -> None:
        self.version = 0
        self.model = model  # the tracker's fold of every job: views read it, never fold into it

    def wants(self, kind: str) -> bool:
        """True when this view follows jobs of `kind`."""
        return not self.kinds or kind in self.kinds

    def ingest(self, job: Any, events: List[Dict[str, Any]]) -> None:
        """A batch of one job's events was folded into the model (override `refresh` to re-read the records)."""
        self.refresh()
        self.version += 1

    def job_changed(self, job: Any) -> None:
        """A job's status changed (the model's record holds it)."""
        self.refresh()
        self.version += 1

    def refresh(self) -> None:
        """Re-read what the screen shows from the records (override)."""


class LatestJobView(View):
    """A view that follows the newest job of its kinds (the session model's one rule)."""

    def __init__(self, model: SessionModel) -> None:
        super().__init__(model)
        self.record = JobRecord("")
        self.reset(None)

    def reset(self, jid: Optional[str]) -> None:
        """A newer job is followed (extend to clear the subclass's own fields)."""

    def refresh(self) -> None:
        """Follow the newest job of the kinds."""
        newest = self.model.newest(*self.kinds)
        if newest is not None and newest is not self.record:
            self.record = newest
            self.reset(newest.jid)

    @property
    def jid(self) -> Optional[str]:
        """The followed job's id (None before any)."""
        return self.record.jid or None

    @property
    def status(self) -> str:
        """The followed job's status line."""
        return self.record.label

    @property
    def state(self) -> str:
        """The followed job's state (running, ok, failed …)."""
        return self.record.state

    @property
    def started(self) -> Dict[str, Any]:
        """Its `started` event."""
        return self.record.started

    @property
    def checks(self) -> Dict[str, Dict[str, Any]]:
        """Its checks by id."""
        return self.record.checks

    @property
    def progress(self) -> Dict[str, Any]:
        """Its latest progress event."""
        return self.record.progress

    @property
    def result(self) -> Dict[str, Any]:
        """Its result summary ({} before it)."""
        return self.record.result

    @property
    def error(self) -> Optional[Dict[str, Any]]:
        """Why it failed (None unless it did)."""
        err = self.record.error
        return err if isinstance(err, dict) and err else None
