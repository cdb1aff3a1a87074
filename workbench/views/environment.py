"""The Environment screen's model: the latest env job's checks, devices, probes and device resolution."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.ascend import chipstatus
from workbench.events.protocol import Evidence
from workbench.fold.record import JobRecord, SessionModel
from workbench.views.base import View

# Display order of the check groups: the device probes answer the main question, and run first.
GROUP_ORDER = ("probes", "python", "packages", "cann", "driver", "npu", "settings")
FAILING = (Evidence.FAIL, Evidence.BLOCKED)


class EnvironmentView(View):
    """Reads `env` job records: a full run replaces everything, a probes-only run replaces the probes."""

    kinds = ("env",)

    def __init__(self, model: SessionModel) -> None:
        super().__init__(model)
        self.jid: Optional[str] = None
        self.full_jid: Optional[str] = None
        self.scope = ""
        self.status = ""
        self.state = ""
        self.started: Dict[str, Any] = {}
        self.checks: Dict[str, Dict[str, Any]] = {}
        self.check_jid: Dict[str, str] = {}
        self.summary: Dict[str, Any] = {}
        self.error: Optional[Dict[str, Any]] = None
        self.progress: Dict[str, Any] = {}
        self.notice = ""  # a newer env job that ended before it started (refused, crashed)
        self._base: Optional[tuple] = None  # (probes jid, full jid, its checks, its summary) when it started

    def refresh(self) -> None:
        """Follow the newest env job that started; merge a probes-only run over the full run before it."""
        followed = self.model.newest(*self.kinds, started=True)
        records = self.model.of_kind(*self.kinds)
        if followed is None:
            newest = records[-1] if records else None
            if newest is not None and self.jid is None:  # nothing started yet: show the newest job's status
                self.jid, self.status, self.state = newest.jid, newest.label, newest.state
            return
        self.jid, self.started = followed.jid, followed.started
        self.status = followed.label or "running"
        self.state = followed.state or "running"
        scope = followed.started.get("scope")
        self.scope = scope if isinstance(scope, str) and scope else "all"
        self.progress = {} if followed.finished else followed.progress
        err = followed.error
        self.error = err if isinstance(err, dict) and err else None
        if self.scope != "probes":
            self.full_jid, base_checks, base_summary = followed.jid, {}, {}
        else:  # the full run as it stood when the probes run started: its late lines are not merged
            if self._base is None or self._base[0] != followed.jid:
                before = [r for r in records[: records.index(followed)] if r.started and _scope(r) != "probes"]
                full = before[-1] if before else None
                self._base = (
                    followed.jid,
                    full.jid if full else None,
                    dict(full.checks) if full else {},
                    dict(_dict(full.result)) if full else {},
                )
            _, self.full_jid, base_checks, base_summary = self._base
        self.checks, self.check_jid = {}, {}
        for cid, ev in base_checks.items():
            if not (cid.startswith("probe-") or cid == "device-setting"):
                self.checks[cid], self.check_jid[cid] = ev, self.full_jid or ""
        for cid, ev in followed.checks.items():
            self.checks[cid], self.check_jid[cid] = ev, followed.jid
        self.summary = dict(base_summary)
        if self.scope != "probes":
            self.summary = dict(_dict(followed.result))
        else:
            probes = _dict(followed.result).get("probes")
            self.summary["probes"] = probes if isinstance(probes, list) else []
        later = [
            r
            for r in records[records.index(followed) + 1 :]
            if not r.started and r.status is not None and r.status.done
        ]
        self.notice = "%s %s" % (later[-1].jid, later[-1].label) if later else ""

    # -- what the screen asks ----------------------------------------------------------------
    def ordered_checks(self) -> List[Dict[str, Any]]:
        """Checks in display order: by group, then in the order they were emitted."""
        rank = {g: i for i, g in enumerate(GROUP_ORDER)}
        items = list(self.checks.values())
        return [
            c
            for _, _, c in sorted(
                ((rank.get(str(c.get("group")), len(rank)), n, c) for n, c in enumerate(items)),
                key=lambda t: (t[0], t[1]),
            )
        ]

    def counts(self) -> Dict[str, int]:
        """How many checks per evidence level."""
        out = {level: 0 for level in Evidence.ALL}
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
        return [d for d in _list(self.summary.get("devices")) if isinstance(d, dict)]

    @property
    def processes(self) -> List[Dict[str, Any]]:
        """Device processes npu-smi listed in the latest full run."""
        return [p for p in _list(self.summary.get("processes")) if isinstance(p, dict)]

    @property
    def cards(self) -> List[Dict[str, Any]]:
        """Per-card chip status (`npu-smi info -t ...`) from the latest full run."""
        return [c for c in _list(self.summary.get("cards")) if isinstance(c, dict) and isinstance(c.get("chips"), list)]

    @property
    def chip_rows(self) -> List[Dict[str, str]]:
        """The chip status table's rows (chipstatus.CHIP_COLUMNS keys), each card's MCU after its chips."""
        return chipstatus.chip_status_rows(self.cards)

    @property
    def chip_errors(self) -> List[str]:
        """The `-t` queries that failed, per NPU (their values stay dashes)."""
        return [
            "NPU %s -t %s: %s" % (c.get("npu"), kind, text)
            for c in self.cards
            for kind, text in sorted(_dict(c.get("errors")).items())
        ]

    @property
    def device(self) -> Dict[str, Any]:
        """The followed job's device resolution: {requested, resolved, id, why}."""
        return dict(self.started.get("device") or {})


def _scope(record: JobRecord) -> str:
    scope = record.started.get("scope")
    return scope if isinstance(scope, str) and scope else "all"


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []
