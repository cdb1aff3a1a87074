"""MindSpore Lite: build the MindIR on CPU, then on the target, each in its own process — where Lite imports."""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional

import numpy as np

from jobs.export.common import DEVICE_CONTEXT_NOTE, TOLERANCE, fmt
from jobs.export.fresh_process import loader_problem, run_loader
from jobs.export.mindir import MindirExport
from jobs.export.reference import ReferenceSet
from jobs.export.state import ExportRun
from workbench.analysis.lite_gate import GATE_HINT, describe_gate, parse_lite_version_gate
from workbench.analysis.tensordiff import diff_tensors
from workbench.events.protocol import Evidence

LITE_HINT = (
    "MindSpore Lite is a separate runtime with per-Python wheels (boards install the vendor's cp39 "
    "aarch64 wheel); PyPI's mindspore-lite has only 2.0.0 for cp37, nothing for this Python"
)


def lite_checks(run: ExportRun, mindir: Optional[MindirExport], ref: ReferenceSet) -> Optional[str]:
    """The lite-cpu and lite-target checks; returns why Lite did not run at all (None when it did)."""
    base = {"format": "lite"}
    pairs = (
        ("lite-cpu", "cpu", "MindSpore Lite build (CPU)"),
        ("lite-target", run.target.lower(), "MindSpore Lite build (target %s)" % run.target),
    )
    if mindir is None:
        for id_, backend, title in pairs:
            run.check(
                id_, title, Evidence.NOT_RUN, "no MindIR was exported", {}, backend=backend, batch_size=None, **base
            )
        return None
    probe = run_loader(run, "lite-probe", "lite-probe", [])
    lite = (probe["report"] or {}).get("lite") or {}
    python = "%s (Python %s)" % (sys.executable, "%d.%d" % sys.version_info[:2])
    if not lite.get("imported"):
        reason = "mindspore_lite does not import in the jobs interpreter %s: %s" % (
            python,
            lite.get("error") or "the probe process reported nothing",
        )
        run.ctx.log("MindSpore Lite not run: " + reason)
        for id_, backend, title in pairs:
            run.check(
                id_,
                title,
                Evidence.NOT_RUN,
                reason,
                {"probe": probe["report_path"], "pids": probe["pids"]},
                hint=LITE_HINT,
                backend=backend,
                batch_size=None,
                **base,
            )
        return reason
    lite_build(run, "lite-cpu", "cpu", pairs[0][2], mindir, ref, lite)
    target_backend = {"Ascend": "ascend", "GPU": "gpu"}.get(run.target)
    if target_backend is None:
        run.check(
            "lite-target",
            pairs[1][2],
            Evidence.NOT_RUN,
            "the target is %s: the CPU build above is the target build" % run.target,
            {"target": run.target},
            backend="cpu",
            batch_size=None,
            **base,
        )
    else:
        lite_build(run, "lite-target", target_backend, pairs[1][2], mindir, ref, lite)
    return None


def lite_build(
    run: ExportRun, id_: str, backend: str, title: str, mindir: MindirExport, ref: ReferenceSet, lite: Dict[str, Any]
) -> None:
    """One Lite backend in its own process: build_from_file, predict, diff — or the gate that stopped it."""
    size = mindir.signature[0] if mindir.signature[0] > 0 else run.batch_sizes[0]
    outcome = run_loader(
        run,
        id_,
        "lite",
        [
            "--mindir",
            str(mindir.path),
            "--inputs",
            str(ref.inputs_path),
            "--backend",
            backend,
            "--batch-size",
            str(size),
        ],
    )
    report = outcome["report"] or {}
    evidence: Dict[str, Any] = {
        "lite": lite,
        "backend": backend,
        "pids": outcome["pids"],
        "report": outcome["report_path"],
        "mindir": mindir.info,
    }
    base = {"format": "lite", "backend": backend, "batch_size": size}
    text = "%s\n%s" % ((report.get("error") or {}).get("message", ""), outcome["stderr_tail"])
    gate = parse_lite_version_gate(text)
    if gate is not None:
        evidence["gate"] = gate
        run.check(
            id_,
            title,
            Evidence.FAIL,
            describe_gate(gate, backend) + ": " + gate["message"],
            evidence,
            hint=GATE_HINT,
            max_abs=None,
            **base,
        )
        return
    problem = loader_problem(outcome, "the Lite loader (%s)" % backend)
    if report.get("error") or problem is not None:
        detail = report["error"]["message"] if report.get("error") or problem is None else problem[1]
        run.check(
            id_,
            title,
            Evidence.FAIL if not outcome["timed_out"] else Evidence.BLOCKED,
            detail,
            evidence,
            hint=None if not outcome["timed_out"] else DEVICE_CONTEXT_NOTE,
            max_abs=None,
            **base,
        )
        return
    predict: Dict[str, Any] = next((s for s in report.get("steps") or [] if s.get("step") == "predict"), {})
    cand = np.load(str(run.loads / predict["outputs"]), allow_pickle=False)
    rows = np.load(str(run.loads / predict["rows"]), allow_pickle=False)
    diff = diff_tensors("Lite %s logits" % backend, ref.logits[rows], cand, TOLERANCE.atol, TOLERANCE.rtol)
    evidence["diff"] = diff
    status = Evidence.PASS if diff["passed"] else Evidence.FAIL
    run.check(
        id_,
        title,
        status,
        "Lite %s built and predicted batch %d: max |diff| %s vs the checkpoint outputs"
        % (lite.get("version"), size, fmt(diff["max_abs"], "%.3g")),
        evidence,
        hint=None if diff["passed"] else diff.get("reason"),
        max_abs=diff["max_abs"],
        **base,
    )
