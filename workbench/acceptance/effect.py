"""The task layer's cross-device effect consistency, from the comparison of two runs (workbench.compare.runs)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.compare import runs as runcompare
from workbench.events.protocol import Evidence
from workbench.fold.record import JobRecord, SessionModel


def _device(rec: JobRecord) -> str:
    return str(rec.device.get("resolved") or "").split(":", 1)[0]


def effect_row(model: SessionModel, target: str, compare_cfg: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """{job, check, level, device, value, threshold, detail} for `effect-consistency` (not-run saying why)."""
    row: Dict[str, Any] = {
        "job": None,
        "check": "effect-consistency",
        "level": Evidence.NOT_RUN,
        "device": None,
        "value": None,
        "threshold": None,
        "detail": "",
    }
    runs: List[JobRecord] = [r for r in model.of_kind("train") if r.best_epoch is not None]
    on = [r for r in runs if _device(r).lower() == target.lower()]
    off = [r for r in runs if _device(r).lower() != target.lower()]
    if not on or not off:
        row["detail"] = "needs a finished training run on %s and one on another device" % target
        return row
    a, b = off[-1], on[-1]
    if compare_cfg is None:
        row["detail"] = "no `compare` tolerances in the config"
        return row
    result = runcompare.compare_runs(
        a,
        b,
        runcompare.Tolerances.from_config(compare_cfg),
        model.test_evaluations(a.jid),
        model.test_evaluations(b.jid),
        names=(a.jid, b.jid),
    )
    evidence = runcompare.cross_device_evidence(result)
    row.update(job=b.jid, device=_device(b))
    if evidence is None:
        row["detail"] = "%s and %s differ in more than the device: not a cross-device pair" % (a.jid, b.jid)
        return row
    numbers = evidence.get("numbers") or []
    deciding = next((n for n in numbers if not n.get("passed")), numbers[0] if numbers else {})
    row.update(
        level=evidence["status"],
        value=deciding.get("value"),
        threshold="<= %s" % deciding.get("limit") if deciding else None,
        detail="%s vs %s: %s" % (a.jid, b.jid, evidence.get("detail")),
    )
    return row
