"""The checkpoint: hand over model.ckpt, then rebuild the network in a fresh process and compare its outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import numpy as np

from jobs.common.checkpoint_files import save_ckpt_atomic
from jobs.export.common import TOLERANCE, fmt
from jobs.export.fresh_process import loader_evidence, loader_problem, not_fresh, run_loader, where
from jobs.export.reference import ReferenceSet
from jobs.export.source import SourceNet
from jobs.export.state import ExportRun
from workbench.analysis.tensordiff import class_flips, diff_tensors
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobFailed
from workbench.system.atomic import write_bytes

TITLE = "checkpoint reloads in a fresh process"


def write_checkpoint(run: ExportRun, loaded: SourceNet) -> Dict[str, Any]:
    """Copy the source checkpoint (or save the fresh net) into artifacts/model.ckpt; its artifact event."""
    dst = run.ctx.artifacts / "model.ckpt"
    src = loaded.source
    if src.kind == "fresh-init":
        save_ckpt_atomic(loaded.net, dst)
        how: Dict[str, Any] = {"saved_from": "freshly initialised network (mindspore.save_checkpoint)"}
    else:
        with open(str(src.ckpt), "rb") as fh:
            write_bytes(dst, fh.read())
        how = {"copied_from": str(src.ckpt), "source_sha256": loaded.sha256}
    ev = run.artifact(dst, "checkpoint", model=loaded.model, **how)
    if src.kind != "fresh-init" and ev["sha256"] != loaded.sha256:
        raise JobFailed(
            "the copy %s has SHA-256 %s, the source %s has %s" % (dst, ev["sha256"], src.ckpt, loaded.sha256),
            type_="CopyError",
        )
    return ev


def reload_checkpoint(run: ExportRun, loaded: SourceNet, ref: ReferenceSet, ckpt: Path) -> None:
    """Rebuild the network in a new process, load the copy, compare its outputs with ours."""
    model = loaded.model
    outcome = run_loader(
        run,
        "ckpt",
        "ckpt",
        [
            "--ckpt",
            str(ckpt),
            "--model",
            model["name"],
            "--hidden",
            str(model["hidden"]),
            "--inputs",
            str(ref.inputs_path),
        ],
    )
    n = int(ref.inputs.shape[0])
    base: Dict[str, Any] = {"format": "ckpt", "batch_size": n}
    evidence = loader_evidence(outcome, "artifacts/model.ckpt")
    stale = not_fresh(outcome, "the checkpoint loader")
    if stale is not None:
        run.check("ckpt-reload", TITLE, Evidence.FAIL, stale, evidence, max_abs=None, **base)
        return
    problem = loader_problem(outcome, "the checkpoint loader")
    report = outcome["report"] or {}
    steps = {s.get("step"): s for s in report.get("steps") or []}
    lists = steps.get("load_param_into_net") or {}
    evidence.update(param_not_load=lists.get("param_not_load"), ckpt_not_load=lists.get("ckpt_not_load"))
    forward = steps.get("forward") or {}
    diff = None
    if forward.get("ok"):
        cand = np.load(str(run.loads / forward["outputs"]), allow_pickle=False)
        diff = diff_tensors("checkpoint reload logits", ref.logits, cand, TOLERANCE.atol, TOLERANCE.rtol)
        evidence.update(diff=diff, class_flips=class_flips(ref.logits, cand)["count"])
    max_abs = diff["max_abs"] if diff else None
    there = where(outcome)
    if problem is not None and not report.get("error"):
        run.check("ckpt-reload", TITLE, problem[0], problem[1], evidence, hint=problem[2], max_abs=max_abs, **base)
        return
    if report.get("error"):
        run.check(
            "ckpt-reload",
            TITLE,
            Evidence.FAIL,
            "%s %s" % (report["error"]["message"], there),
            evidence,
            hint=report["error"].get("hint"),
            max_abs=max_abs,
            **base,
        )
        return
    if lists.get("param_not_load") or lists.get("ckpt_not_load"):
        run.check(
            "ckpt-reload",
            TITLE,
            Evidence.FAIL,
            "load_param_into_net %s: network parameters not loaded %s; checkpoint entries not used %s; "
            "logits max |diff| %s vs this job's outputs"
            % (there, lists.get("param_not_load"), lists.get("ckpt_not_load"), fmt(max_abs, "%.3g")),
            evidence,
            hint="layer names in the file do not match build_net(%r)" % model["name"],
            max_abs=max_abs,
            **base,
        )
        return
    status = Evidence.PASS if diff and diff["passed"] else Evidence.FAIL
    run.check(
        "ckpt-reload",
        TITLE,
        status,
        "%s: %d tensors loaded, param_not_load [], ckpt_not_load [], set_train(False); logits of %d "
        "samples max |diff| %s vs this job's in-memory outputs (atol %g, rtol %g)"
        % (
            there,
            len((steps.get("load_checkpoint") or {}).get("tensors") or []),
            n,
            fmt(max_abs, "%.3g"),
            TOLERANCE.atol,
            TOLERANCE.rtol,
        ),
        evidence,
        hint=None if status == Evidence.PASS else (diff or {}).get("reason"),
        max_abs=max_abs,
        **base,
    )
