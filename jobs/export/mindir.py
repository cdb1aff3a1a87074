"""The MindIR: export it with its input signature, then load it in a fresh process and run every batch size."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jobs.export.common import TOLERANCE, fmt, short
from jobs.export.fresh_process import loader_evidence, loader_problem, not_fresh, run_loader, where
from jobs.export.reference import ReferenceSet
from jobs.export.source import SourceNet
from jobs.export.state import ExportRun
from workbench.analysis.tensordiff import class_flips, diff_tensors
from workbench.events.protocol import Evidence

LOAD_TITLE = "MindIR loads in a fresh process"


class MindirExport:
    """The exported MindIR file, its input signature ([-1, …] for a dynamic batch) and its header."""

    def __init__(self, path: Path, signature: List[int], info: Dict[str, Any]):
        self.path = path
        self.signature = signature
        self.info = info


def batch_checks(sizes: List[int]) -> List[Tuple[str, str, Dict[str, Any]]]:
    """(id, title, extra) of the per-batch-size MindIR checks, for not_run."""
    return [("mindir-b%d" % b, "MindIR runs batch %d" % b, {"format": "mindir", "batch_size": b}) for b in sizes]


def export_mindir(run: ExportRun, loaded: SourceNet) -> Optional[MindirExport]:
    """mindspore.export with the configured signature; the artefact records it."""
    import mindspore as ms
    from mindspore import Tensor

    dynamic = run.export.dynamic_batch
    signature = [-1 if dynamic else run.batch_sizes[0], 1, 28, 28]
    title = "MindIR export"
    base = {"format": "mindir", "batch_size": None}
    try:
        if dynamic:
            # A None dimension marks the batch as dynamic (feature-detected: older builds reject it).
            example = Tensor(shape=[None, 1, 28, 28], dtype=ms.float32)
        else:
            example = Tensor(np.zeros(signature, dtype=np.float32))
    except Exception as exc:
        run.check(
            "mindir-export",
            title,
            Evidence.FAIL,
            "export.dynamic_batch is true but this MindSpore %s rejects a None batch dimension: %s"
            % (ms.__version__, short(exc)),
            {"signature": signature},
            **base,
        )
        return None
    dst = run.ctx.artifacts / "model.mindir"
    stem = run.ctx.artifacts / (".model.%d.tmp" % os.getpid())
    t0 = time.perf_counter()
    try:
        ms.export(loaded.net, example, file_name=str(stem), file_format="MINDIR")
        written = Path(str(stem) + ".mindir")
        os.replace(str(written), str(dst))
    except Exception as exc:
        run.check(
            "mindir-export",
            title,
            Evidence.FAIL,
            "mindspore.export failed: %s" % short(exc),
            {"signature": signature},
            **base,
        )
        return None
    finally:
        leftover = Path(str(stem) + ".mindir")
        if leftover.exists():
            os.unlink(str(leftover))
    export_s = time.perf_counter() - t0
    run.timing_s["mindir_export_s"] = export_s
    info = mindir_info(dst)
    ev = run.artifact(dst, "mindir", signature=signature, dynamic_batch=dynamic, export_s=export_s, **info)
    run.check(
        "mindir-export",
        title,
        Evidence.PASS,
        "wrote %d bytes in %.2f s; input signature %s (%s batch)%s"
        % (
            ev["bytes"],
            export_s,
            signature,
            "dynamic" if dynamic else "fixed",
            "; MindIR version %s" % info["mind_ir_version"] if info.get("mind_ir_version") is not None else "",
        ),
        {"signature": signature, "mindir": info, "sha256": ev["sha256"]},
        **base,
    )
    return MindirExport(dst, signature, info)


def mindir_info(path: Path) -> Dict[str, Any]:
    """Header of a MindIR file read with MindSpore's own proto (feature-detected): versions, input shapes."""
    try:
        from mindspore.train import mind_ir_pb2
    except ImportError as exc:
        return {"mind_ir_version": None, "note": "mindspore.train.mind_ir_pb2 not available: %s" % exc}
    model = mind_ir_pb2.ModelProto()
    with open(str(path), "rb") as fh:
        model.ParseFromString(fh.read())
    has = getattr(model, "HasField", None)
    version = model.mind_ir_version if has is not None and _has_field(model, "mind_ir_version") else None
    return {
        "mind_ir_version": int(version) if version is not None else None,
        "ir_version": model.ir_version or None,
        "producer": model.producer_name or None,
        "producer_version": model.model_version or None,
        "input_shapes": [[list(t.dims) for t in value.tensor] for value in model.graph.input],
    }


def _has_field(message: Any, name: str) -> bool:
    try:
        return bool(message.HasField(name))
    except ValueError:  # not an optional field in this proto version
        return False


def load_mindir(run: ExportRun, mindir: MindirExport, ref: ReferenceSet) -> None:
    """ms.load + nn.GraphCell in a new process; one check per configured batch size."""
    outcome = run_loader(
        run,
        "mindir",
        "mindir",
        [
            "--mindir",
            str(mindir.path),
            "--inputs",
            str(ref.inputs_path),
            "--batch-sizes",
            ",".join(str(b) for b in run.batch_sizes),
        ],
    )
    report = outcome["report"] or {}
    steps = report.get("steps") or []
    evidence = loader_evidence(outcome, "artifacts/model.mindir")
    stale = not_fresh(outcome, "the MindIR loader")
    if stale is not None:
        run.check("mindir-load", LOAD_TITLE, Evidence.FAIL, stale, evidence, format="mindir", batch_size=None)
        run.not_run(batch_checks(run.batch_sizes), "the MindIR load did not happen in a fresh process")
        return
    problem = loader_problem(outcome, "the MindIR loader")
    load = next((s for s in steps if s.get("step") == "load"), None)
    if load is None or not load.get("ok"):
        if report.get("error"):
            status, detail, hint = Evidence.FAIL, "%s %s" % (report["error"]["message"], where(outcome)), None
        else:
            status, detail, hint = problem or (Evidence.FAIL, "the MindIR loader recorded no load step", None)
        run.check("mindir-load", LOAD_TITLE, status, detail, evidence, hint=hint, format="mindir", batch_size=None)
        for size in run.batch_sizes:
            run.check(
                "mindir-b%d" % size,
                "MindIR runs batch %d" % size,
                Evidence.NOT_RUN,
                "the MindIR did not load",
                {"batch_size": size},
                format="mindir",
                batch_size=size,
            )
        return
    run.check(
        "mindir-load",
        LOAD_TITLE,
        Evidence.PASS,
        "mindspore.load + nn.GraphCell %s in %.2f s" % (where(outcome), load.get("s") or 0.0),
        evidence,
        format="mindir",
        batch_size=None,
    )
    runs = {s.get("batch_size"): s for s in steps if s.get("step") == "run"}
    for size in run.batch_sizes:
        check_batch(run, mindir, ref, size, runs.get(size), problem, outcome)


def check_batch(
    run: ExportRun,
    mindir: MindirExport,
    ref: ReferenceSet,
    size: int,
    run_step: Optional[Dict[str, Any]],
    problem: Optional[Tuple[str, str, Optional[str]]],
    outcome: Dict[str, Any],
) -> None:
    """One batch size of the MindIR: observed-pass with the diff, or what MindSpore did."""
    import mindspore as ms

    id_, title = "mindir-b%d" % size, "MindIR runs batch %d" % size
    signature_batch = mindir.signature[0]
    if signature_batch == -1:
        relation = "dynamic batch signature"
    elif size == signature_batch:
        relation = "the exported signature"
    else:
        relation = "exported signature is batch %d" % signature_batch
    evidence: Dict[str, Any] = {
        "batch_size": size,
        "signature": mindir.signature,
        "relation": relation,
        "pids": outcome["pids"],
        "report": outcome["report_path"],
    }
    base = {"format": "mindir", "batch_size": size}
    if run_step is None:
        status, detail, hint = problem or (Evidence.FAIL, "the loader has no result for this size", None)
        run.check(
            id_,
            title,
            status,
            "batch %d (%s): %s" % (size, relation, detail),
            evidence,
            hint=hint,
            max_abs=None,
            **base,
        )
        return
    evidence.update({k: run_step.get(k) for k in ("calls", "calls_done", "first_call_s", "total_s")})
    if not run_step.get("ok"):
        run.check(
            id_,
            title,
            Evidence.FAIL,
            "batch %d (%s): MindSpore raised %s" % (size, relation, run_step.get("error")),
            evidence,
            max_abs=None,
            hint="a fixed-signature MindIR is only proven for its own batch; export with "
            "export.dynamic_batch or one MindIR per batch size"
            if relation.startswith("exported")
            else None,
            **base,
        )
        return
    cand = np.load(str(run.loads / run_step["outputs"]), allow_pickle=False)
    rows = np.load(str(run.loads / run_step["rows"]), allow_pickle=False)
    diff = diff_tensors("MindIR batch %d logits" % size, ref.logits[rows], cand, TOLERANCE.atol, TOLERANCE.rtol)
    evidence.update(diff=diff, class_flips=class_flips(ref.logits[rows], cand)["count"])
    status = Evidence.PASS if diff["passed"] else Evidence.FAIL
    ran = ("ran anyway on MindSpore %s" % ms.__version__) if relation.startswith("exported") else "ran"
    run.check(
        id_,
        title,
        status,
        "batch %d (%s) %s: %d call(s), first %.2f s, outputs %s, max |diff| %s vs the "
        "checkpoint outputs (atol %g, rtol %g)"
        % (
            size,
            relation,
            ran,
            run_step["calls"],
            run_step.get("first_call_s") or 0.0,
            run_step.get("shape"),
            fmt(diff["max_abs"], "%.3g"),
            TOLERANCE.atol,
            TOLERANCE.rtol,
        ),
        evidence,
        hint=None if diff["passed"] else diff.get("reason"),
        max_abs=diff["max_abs"],
        **base,
    )
