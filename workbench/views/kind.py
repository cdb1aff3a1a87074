"""A simple model of the latest job of some kinds: its checks, lines and result."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional

from workbench.textlog import format_event
from workbench.views import View


class KindView(View):
    """Follows the latest job of the given kinds."""

    def __init__(self, *kinds: str) -> None:
        super().__init__()
        self.kinds = kinds
        self.jid: Optional[str] = None
        self.status = ""
        self.lines: Deque[str] = deque(maxlen=500)
        self.checks: Dict[str, Dict[str, Any]] = {}
        self.result: Optional[Dict[str, Any]] = None

    def apply(self, job: Any, ev: Dict[str, Any]) -> None:
        """Reset on a newer job; keep checks, lines and the result."""
        if job.jid != self.jid:
            self.jid, self.lines, self.checks, self.result = job.jid, deque(maxlen=500), {}, None
        if ev.get("type") == "check":
            self.checks[str(ev.get("id"))] = ev
        elif ev.get("type") == "result":
            self.result = ev.get("summary")
        line = format_event(ev, verbose_steps=100)
        if line:
            self.lines.append(line)

    def job_changed(self, job: Any) -> None:
        """Track the status of the followed job."""
        if job.jid == self.jid or self.jid is None:
            self.jid = job.jid
            self.status = job.status.label()
        self.version += 1

    def recent(self, n: int) -> List[str]:
        """The last n lines."""
        return list(self.lines)[-n:]
