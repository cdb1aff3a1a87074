"""The Session screen's model: every job, its status and its recent events."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional

from workbench.events.text import format_event
from workbench.fold.record import SessionModel
from workbench.views.base import View

RECENT_EVENTS = 400
VERBOSE_STEPS = 50  # a step's line every this many steps


def listed(events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Of a job's latest events, those the Session screen keeps a line of: the last RECENT_EVENTS that print one."""
    kept: List[Dict[str, Any]] = []
    for ev in reversed(events):
        if format_event(ev, verbose_steps=VERBOSE_STEPS, folded=True):
            kept.append(ev)
            if len(kept) == RECENT_EVENTS:
                break
    kept.reverse()
    return kept


@dataclass
class JobRow:
    """One line of the jobs table."""

    jid: str
    kind: str
    state: str
    reason: str
    duration_s: Optional[float]
    device: str
    events: int = 0
    written: int = 0  # lines appended (monotonic; at most RECENT_EVENTS a batch): a screen appends only the new
    lines: Deque[str] = field(default_factory=lambda: deque(maxlen=RECENT_EVENTS))
    damaged_seen: int = 0  # damaged lines of the job's record already shown
    created: float = 0.0  # when the job was made (job.json): the table's order


class SessionView(View):
    """Jobs of the session in start order, with the latest lines of each."""

    def __init__(self, model: SessionModel) -> None:
        super().__init__(model)
        self.rows: Dict[str, JobRow] = {}

    def _row(self, job: Any) -> JobRow:
        row = self.rows.get(job.jid)
        if row is None:
            dev = job.spec["device"] if isinstance(job.spec.get("device"), dict) else {}
            row = JobRow(
                job.jid,
                job.kind,
                job.status.state,
                job.status.reason,
                job.status.duration_s,
                "%s:%s" % (dev.get("resolved", "?"), dev.get("id", 0)),
                created=_created(job.spec),
            )
            self.rows[job.jid] = row
        return row

    def ingest(self, job: Any, events: List[Dict[str, Any]]) -> None:
        """Keep a readable line per event (steps every 50th) and one per newly damaged line.

        Only the lines the row keeps are formatted: a big batch (a backlog read at attach) is walked
        from its end until RECENT_EVENTS lines are found, which leaves the same lines as formatting all.
        """
        row = self._row(job)
        rec = self.model.records.get(job.jid)
        # the fold's count: the same as adding up the batches, also when a batch is only a job's last lines
        row.events = rec.events if rec is not None else row.events + len(events)
        tail: List[str] = []
        for ev in reversed(events):
            line = format_event(ev, verbose_steps=VERBOSE_STEPS, folded=True)  # the fold passes on no damaged line
            if line:
                tail.append(line)
                if len(tail) == RECENT_EVENTS:
                    break
        for line in reversed(tail):
            self._line(row, line)
        damaged = rec.damaged if rec is not None else []
        for damage in damaged[row.damaged_seen :]:
            self._line(
                row,
                "damaged line %s:%s (%s) skipped: %s"
                % (damage["file"], damage["line"], damage["what"], damage["problem"]),
            )
        row.damaged_seen = len(damaged)
        self.version += 1

    @staticmethod
    def _line(row: JobRow, line: Optional[str]) -> None:
        if line:
            row.lines.append(line)
            row.written += 1

    def job_changed(self, job: Any) -> None:
        """Refresh the row's status."""
        row = self._row(job)
        row.state, row.reason, row.duration_s = job.status.state, job.status.reason, job.status.duration_s
        self.version += 1

    def ordered(self) -> List[JobRow]:
        """Rows in start order (creation time, then id), whatever order the jobs were found in."""
        return sorted(self.rows.values(), key=lambda row: (row.created, row.jid))


def _created(spec: Dict[str, Any]) -> float:
    value = spec.get("created")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
