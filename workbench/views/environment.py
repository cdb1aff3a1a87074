"""The Environment screen's model: the latest env job's checks, devices, probes and device resolution."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.views import View

# Display order of the check groups: the device probes answer the main question, and run first.
GROUP_ORDER = ("probes", "python", "packages", "cann", "driver", "npu", "settings")
FAILING = ("observed-fail", "blocked")


class EnvironmentView(View):
    """Folds `env` job events: a full run replaces everything, a probes-only run replaces the probes."""

    kinds = ("env",)

    def __init__(self) -> None:
        super().__init__()
        self.jid: Optional[str] = None
        self.scope = ""
        self.status = ""
        self.state = ""
        self.started: Dict[str, Any] = {}
        self.checks: Dict[str, Dict[str, Any]] = {}
        self.check_jid: Dict[str, str] = {}
        self.summary: Dict[str, Any] = {}
        self.error: Optional[Dict[str, Any]] = None
        self.progress: Dict[str, Any] = {}
        self.full_jid: Optional[str] = None
        self.started_jid: Optional[str] = None
        self.created = 0.0
        self.notice = ""  # a newer env job that ended before it started (refused, crashed)

    def apply(self, job: Any, ev: Dict[str, Any]) -> None:
        """Follow the newest env job; ignore late lines of older ones."""
        kind = ev.get("type")
        if kind == "started" and job.jid != self.started_jid:
            self._begin(job.jid, str(ev.get("scope") or "all"), ev)
            self.started_jid, self.created, self.notice = job.jid, float(job.spec.get("created") or 0), ""
            return
        if job.jid != self.jid:
            return
        if kind == "check":
            self.checks[str(ev.get("id"))] = ev
            self.check_jid[str(ev.get("id"))] = job.jid
        elif kind == "result":
            summary = ev.get("summary") or {}
            if self.scope == "probes":
                self.summary["probes"] = summary.get("probes") or []
            else:
                self.summary = dict(summary)
        elif kind == "progress":
            self.progress = ev
        elif kind == "finished":
            self.error = ev.get("error")
            self.progress = {}

    def _begin(self, jid: str, scope: str, started: Dict[str, Any]) -> None:
        """A newer job started: a full run starts from nothing, a probes-only run keeps the rest."""
        self.jid, self.scope, self.started, self.error, self.progress = jid, scope, started, None, {}
        self.status, self.state = "running", "running"
        if scope == "probes":
            for cid in [c for c in self.checks if c.startswith("probe-") or c == "device-setting"]:
                del self.checks[cid]
                self.check_jid.pop(cid, None)
            self.summary["probes"] = []
        else:
            self.full_jid = jid
            self.checks, self.check_jid, self.summary = {}, {}, {}

    def job_changed(self, job: Any) -> None:
        """Track the followed job's status (crashed, failed, ok ...)."""
        if job.jid == self.jid or self.jid is None:
            self.jid = job.jid
            self.status = job.status.label()
            self.state = job.status.state
        elif float(job.spec.get("created") or 0) >= self.created and job.status.done:
            self.notice = "%s %s" % (job.jid, job.status.label())
        self.version += 1

    # -- what the screen asks ----------------------------------------------------------------
    def ordered_checks(self) -> List[Dict[str, Any]]:
        """Checks in display order: by group, then in the order they were emitted."""
        rank = {g: i for i, g in enumerate(GROUP_ORDER)}
        items = list(self.checks.values())
        return [c for _, _, c in sorted(
            ((rank.get(str(c.get("group")), len(rank)), n, c) for n, c in enumerate(items)),
            key=lambda t: (t[0], t[1]))]

    def counts(self) -> Dict[str, int]:
        """How many checks per evidence level."""
        out = {"observed-pass": 0, "observed-fail": 0, "blocked": 0, "not-run": 0}
        for check in self.checks.values():
            status = str(check.get("status"))
            out[status] = out.get(status, 0) + 1
        return out

    def first_failing(self) -> Optional[str]:
        """Id of the first failed or blocked check in display order (where to look first)."""
        for check in self.ordered_checks():
            if check.get("status") in FAILING:
                return str(check.get("id"))
        return None

    @property
    def devices(self) -> List[Dict[str, Any]]:
        """Devices npu-smi listed in the latest full run."""
        return list(self.summary.get("devices") or [])

    @property
    def processes(self) -> List[Dict[str, Any]]:
        """Device processes npu-smi listed in the latest full run."""
        return list(self.summary.get("processes") or [])

    @property
    def device(self) -> Dict[str, Any]:
        """The followed job's device resolution: {requested, resolved, id, why}."""
        return dict(self.started.get("device") or {})
