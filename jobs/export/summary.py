"""The export job's `result` summary: artefacts, checks per format and batch size, the reference set."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from jobs.export.common import EXPORT_MODE
from jobs.export.reference import ReferenceSet
from jobs.export.source import SourceNet
from jobs.export.state import ExportRun


def checks_by_format(checks: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Each check under its format (and the MindIR ones under their batch size)."""
    by_format: Dict[str, Any] = {"ckpt": {}, "mindir": {"batches": {}}, "lite": {}, "other": {}}
    for ev in checks:
        entry = {"id": ev["id"], "status": ev["status"], "max_abs": ev.get("max_abs"), "detail": ev["detail"]}
        fmt = ev.get("format")
        if fmt == "mindir" and ev.get("batch_size") is not None:
            by_format["mindir"]["batches"][str(ev["batch_size"])] = entry
        elif fmt == "mindir":
            by_format["mindir"][ev["id"].split("-", 1)[1]] = entry
        elif fmt == "ckpt":
            by_format["ckpt"]["reload"] = entry
        elif fmt == "lite":
            by_format["lite"][ev["id"].split("-", 1)[1]] = entry
        else:
            by_format["other"][ev["id"]] = entry
    return by_format


def reference_summary(ref: ReferenceSet) -> Optional[Dict[str, Any]]:
    """What the handed-over reference package holds (None when it was not written)."""
    if not ref.written:
        return None
    package = ref.package
    return {
        "dir": "artifacts/reference",
        "samples": len(package.get("samples") or []),
        "classes_covered": len(package.get("classes_covered") or []),
        "samples_per_class": package.get("samples_per_class"),
        "confused_pairs": package.get("confused_pairs") or [],
        "tolerance": package.get("tolerance"),
        "preprocessing": package.get("preprocessing"),
        "class_names": package.get("class_names"),
    }


def summary(run: ExportRun, loaded: SourceNet, ref: ReferenceSet, lite_reason: Optional[str]) -> Dict[str, Any]:
    """The result event's summary."""
    return {
        "source": loaded.source.describe(),
        "model": loaded.model,
        "device": {"target": run.target, "id": run.device_id, "mode": EXPORT_MODE},
        "formats": run.formats,
        "batch_sizes": run.batch_sizes,
        "dynamic_batch": run.export.dynamic_batch,
        "artifacts": run.artifacts,
        "checks": checks_by_format(run.checks),
        "reference": reference_summary(ref),
        "pids": {"job": os.getpid(), "loaders": run.loaders},
        "lite": {"reason": lite_reason},
        "timing_s": run.timing_s,
        "failed": [ev["id"] for ev in run.failed_checks()],
    }
