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


def refused(record: JobRecord) -> bool:
    """True for a job its supervisor refused at once (its device was held): it never ran."""
    return str(getattr(record.status, "reason", "") or "").startswith("refused:")


class LatestJobView(View):
    """A view that follows one job of its kinds: the one the user chose, else the newest that was not refused."""

    follows: tuple = ()  # the kinds it follows (default: all its kinds)

    def __init__(self, model: SessionModel) -> None:
        super().__init__(model)
        self.record = JobRecord("")
        self.pinned: Optional[str] = None  # a job the user chose (Session screen's Enter); None: the newest
        self.reset(None)

    def reset(self, jid: Optional[str]) -> None:
        """A newer job is followed (extend to clear the subclass's own fields)."""

    def candidates(self) -> List[JobRecord]:
        """The jobs this view can follow, oldest first: refused ones are left out (they never ran)."""
        return [r for r in self.model.of_kind(*(self.follows or self.kinds)) if not refused(r)]

    def choose(self) -> Optional[JobRecord]:
        """The job to follow: the pinned one while it exists, else the newest that was not refused."""
        if self.pinned is not None and self.pinned in self.model.records:
            return self.model.records[self.pinned]
        found = self.candidates()
        return found[-1] if found else None

    def follow(self, jid: Optional[str]) -> None:
        """Follow this job from now on (None: the newest again)."""
        self.pinned = jid
        self.refresh()
        self.version += 1

    def refused_after(self) -> Optional[JobRecord]:
        """The newest refused job started after the followed one (its reason belongs on the screen), else None."""
        records = self.model.of_kind(*(self.follows or self.kinds))
        newest = records[-1] if records else None
        if newest is None or newest is self.record or not refused(newest):
            return None
        return newest

    def refresh(self) -> None:
        """Follow the chosen job of the kinds."""
        chosen = self.choose()
        if chosen is not None and chosen is not self.record:
            self.record = chosen
            self.reset(chosen.jid)

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
