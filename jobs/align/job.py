"""The `align` job: does the candidate path compute the same numbers as the reference path?

This process never imports MindSpore (it holds no device context). It writes the shared
inputs (fixed batch, initial weights) once, runs each side as its own process with exec
(`python -m jobs.align.side`), then compares what both sides wrote, tensor by tensor in
forward order. A side that cannot run is reported as blocked and nothing is compared.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from jobs.align.compare import compare_sides, matched_settings, verdict
from jobs.align.inputs import INIT_NAME, make_inputs, path_label, weights_source
from jobs.align.side import EXIT_BLOCKED, SIDE_BLOCKED, SIDE_OK, SIDES, side_paths
from jobs.common.imported_ckpt import reverify_checkpoint
from jobs.common.msdevice import device_mismatches
from workbench.analysis.tensordiff import MATCH_RULE, NONFINITE_RULE, REL_RULE
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, JobFailed
from workbench.session.candidate import INITIAL_WEIGHTS, checkpoint_subject
from workbench.system.atomic import read_json, sha256_file, write_bytes

STDERR_TAIL_LINES = 12
SYNTHETIC_HINT = "synthetic data: the numbers say nothing about Fashion-MNIST"
TOLERANCE_RULE = (
    "per tensor: the looser torch.testing default of the two dtypes (the dtype a tensor was "
    "computed in), unless align.atol/align.rtol are set"
)


def _side_argv(job_dir: Path, *args: str) -> List[str]:
    return [sys.executable, "-m", "jobs.align.side", "--job-dir", str(job_dir)] + list(args)


def _run_process(ctx: JobContext, what: str, *args: str) -> subprocess.CompletedProcess:
    """Run a side process (exec, never fork); its stderr goes on to this job's stderr.log."""
    ctx.raise_if_cancelled()  # a cancel that came during the inputs must not start a MindSpore process
    proc = subprocess.run(
        _side_argv(ctx.dir, *args),
        cwd=str(ctx.dir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    for stream, text in ((sys.stdout, proc.stdout), (sys.stderr, proc.stderr)):
        if text:
            stream.write("".join("[%s] %s\n" % (what, line) for line in text.splitlines()))
            stream.flush()
    ctx.raise_if_cancelled()
    return proc


def _tail(text: str) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join(lines[-STDERR_TAIL_LINES:])


def _init_weights(ctx: JobContext) -> Dict[str, Any]:
    """artifacts/init.ckpt: copied from align.weights_from, else built once with train.seed in a small process."""
    target = ctx.artifacts / INIT_NAME
    source = weights_source(ctx.cfg, ctx.dir)
    if source is not None:
        reverify_checkpoint(ctx, Path(source["path"]), "align.weights_from")
    if source is not None:
        write_bytes(target, Path(source["path"]).read_bytes())  # a copy in this job's record, written atomically
        art = ctx.artifact(target, "init-weights", source=source["from"])
        return {"from": source["from"], "path": source["path"], "sha256": art["sha256"]}
    proc = _run_process(ctx, "init", "--make-init")
    if proc.returncode != 0 or not target.is_file():
        raise JobFailed(
            "building the initial weights failed (exit code %s): %s"
            % (proc.returncode, _tail(proc.stderr) or "no message"),
            hint="see stderr.log",
            type_="InitFailed",
        )
    info = read_json(ctx.artifacts / "init.json")
    art = ctx.artifact(target, "init-weights", seed=info["seed"], how=info["how"])
    return {"from": "train.seed=%d" % info["seed"], "how": info["how"], "pid": info["pid"], "sha256": art["sha256"]}


def _side_summary(record: Dict[str, Any]) -> Dict[str, Any]:
    """What the events carry about a side: no arrays, every read-back setting."""
    keep = (
        "side",
        "role",
        "label",
        "status",
        "requested",
        "effective",
        "device_api",
        "precision",
        "settings",
        "pid",
        "mindspore",
        "error",
        "tap_check",
        "layers_how",
        "steps",
        "timing_s",
        "ms_role_warning",
    )
    return {k: record.get(k) for k in keep if k in record}


def resolved_paths(cfg: Any) -> Dict[str, Dict[str, Any]]:
    """Both paths as the runner decided them before the job started (`auto` resolved; the decision kept in `resolution`)."""
    out = {}
    for side, role in SIDES.items():
        path = dict(cfg["align"][role])
        path["resolution"] = {
            "requested": path["requested"],
            "resolved": path["target"],
            "id": path["id"],
            "why": path["why"],
        }
        out[side] = path
    return out


def _run_side(ctx: JobContext, side: str, path: Dict[str, Any]) -> Dict[str, Any]:
    """Run one side; emit its check and artifacts; return its record (status ok, blocked or failed)."""
    label = path_label(path)
    resolution = path["resolution"]
    ctx.log(
        "%s %s: starting its own process%s"
        % (SIDES[side], label, "" if resolution["requested"] != "auto" else " (target %s)" % resolution["why"])
    )
    proc = _run_process(ctx, "side-" + side, "--side", side)
    out = side_paths(ctx.dir, side)
    if not out["json"].is_file():
        record: Dict[str, Any] = {
            "side": side,
            "role": SIDES[side],
            "label": label,
            "status": "failed",
            "error": {
                "type": "SideCrashed",
                "hint": "see stderr.log",
                "message": "the %s process ended with exit code %s and wrote no record: %s"
                % (SIDES[side], proc.returncode, _tail(proc.stderr) or "no message"),
            },
        }
    else:
        record = read_json(out["json"])
        ctx.artifact(out["json"], "side-record", side=side)
        if out["npz"].is_file() and record.get("status") == SIDE_OK:
            ctx.artifact(out["npz"], "side-tensors", side=side)
    record["returncode"] = proc.returncode
    title = "%s path %s" % (SIDES[side], label)
    status = record.get("status")
    if status == SIDE_OK:
        eff = record.get("effective") or {}
        ctx.check(
            "side." + side,
            title,
            Evidence.PASS,
            "ran in pid %s on %s:%s, %s mode, %s (MindSpore %s)"
            % (
                record.get("pid"),
                eff.get("target"),
                eff.get("device_id"),
                eff.get("mode"),
                (record.get("precision") or {}).get("precision"),
                record.get("mindspore"),
            ),
            evidence=_side_summary(record),
        )
    else:
        err = record.get("error") or {}
        level = Evidence.BLOCKED if status == SIDE_BLOCKED or proc.returncode == EXIT_BLOCKED else Evidence.FAIL
        ctx.check(
            "side." + side,
            title,
            level,
            "%s: %s" % (err.get("type"), err.get("message")),
            evidence=_side_summary(record),
            hint=err.get("hint"),
        )
    return record


def _effective_mismatch(record: Dict[str, Any]) -> List[str]:
    """Where MindSpore's read-back in a side differs from its path's target, id or mode (msdevice's one rule)."""
    req = record.get("requested") or {}
    return device_mismatches(
        {"target": req.get("target"), "device_id": req.get("id"), "mode": req.get("mode")},
        record.get("effective") or {},
    )


def _computed_dtypes(record: Dict[str, Any]) -> Dict[str, str]:
    """name -> dtype a tensor was computed in, where the side says it differs from the stored dtype."""
    return {t["name"]: t["computed_dtype"] for t in record.get("tensors") or [] if t.get("computed_dtype")}


def _load_npz(path: Path) -> Dict[str, np.ndarray]:
    with np.load(str(path), allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def _paths_summary(records: Dict[str, Dict[str, Any]], paths: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    out = {}
    for side in SIDES:
        rec = records.get(side) or {}
        out[side] = {
            "label": path_label(paths[side]),
            "requested": paths[side],
            "status": rec.get("status", Evidence.NOT_RUN),
            "effective": rec.get("effective"),
            "pid": rec.get("pid"),
            "error": rec.get("error"),
        }
    return out


def _tolerances(cfg: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "atol": cfg["align"]["atol"],
        "rtol": cfg["align"]["rtol"],
        "rule": TOLERANCE_RULE,
        "match_rule": MATCH_RULE,
        "rel_rule": REL_RULE,
        "nonfinite_rule": NONFINITE_RULE,
    }


def _stop_without_comparing(
    ctx: JobContext,
    records: Dict[str, Dict[str, Any]],
    base: Dict[str, Any],
    paths: Dict[str, Dict[str, Any]],
    side: str,
    kind: str,
    message: str,
    hint: Optional[str],
) -> str:
    """End with nothing compared: verdict blocked (a precondition) or observed-fail (a side failed)."""
    level = Evidence.BLOCKED if kind == "Blocked" else Evidence.FAIL
    ctx.check(
        "alignment",
        "alignment verdict",
        level,
        "nothing compared: the %s path %s" % (SIDES[side], "is blocked" if kind == "Blocked" else "failed"),
        evidence={"side": side},
        hint=hint,
    )
    ctx.result(
        dict(
            base,
            paths=_paths_summary(records, paths),
            verdict=level,
            compared=False,
            counts={"tensors": 0, "passed": 0, "failed": 0, "one_sided": 0},
            first_failure=None,
            class_flips=None,
            stopped={"side": side, "type": kind, "message": message},
        )
    )
    raise JobFailed(message, hint=hint, type_=kind)


def main(ctx: JobContext) -> str:
    """Shared inputs, both sides in their own processes, then one tensor_diff per tensor."""
    cfg = ctx.cfg
    al = cfg["align"]
    paths = resolved_paths(cfg)
    ctx.started(
        mode="align",
        reference=path_label(paths["ref"]),
        candidate=path_label(paths["cand"]),
        model=dict(cfg["model"]),
        paths=paths,
    )
    source = weights_source(cfg, ctx.dir)  # both sides start from these weights: every check is about them
    ctx.subject = INITIAL_WEIGHTS if source is None else checkpoint_subject(sha256_file(Path(source["path"])))
    ctx.progress(0, 4, "phases", "inputs")
    batch = make_inputs(cfg, ctx.dir)
    ctx.artifact(Path(batch["path"]), "fixed-batch", n=batch["n"])
    ctx.check(
        "fixed-batch",
        "fixed batch",
        Evidence.PASS,
        "%d validation images (%s, sample_seed %d), x %s %s in [%g, %g], %s"
        % (
            batch["n"],
            batch["data"]["source"],
            batch["sample_seed"],
            batch["x_shape"],
            batch["x_dtype"],
            batch["x_range"][0],
            batch["x_range"][1],
            "no augmentation",
        ),
        evidence={k: v for k, v in batch.items() if k not in ("path", "labels")},
        hint=SYNTHETIC_HINT if batch["data"]["source"] == "synthetic" else None,
    )
    init = _init_weights(ctx)
    base: Dict[str, Any] = {
        "model": dict(cfg["model"]),
        "batch": {k: batch[k] for k in ("n", "sha256", "sample_seed", "preprocessing", "data", "split")},
        "init": init,
        "tolerances": _tolerances(cfg),
    }

    records: Dict[str, Dict[str, Any]] = {}
    for n, side in enumerate(("ref", "cand"), 1):
        ctx.progress(n, 4, "phases", SIDES[side])
        records[side] = rec = _run_side(ctx, side, paths[side])
        if rec["status"] != SIDE_OK:
            err = rec.get("error") or {}
            if side == "ref":
                ctx.check(
                    "side.cand",
                    "candidate path %s" % path_label(paths["cand"]),
                    Evidence.NOT_RUN,
                    "not started: the reference path did not run, so there is nothing to compare against",
                )
            kind = "Blocked" if rec["status"] == SIDE_BLOCKED else "SideFailed"
            return _stop_without_comparing(
                ctx,
                records,
                base,
                paths,
                side,
                kind,
                "%s path %s: %s" % (SIDES[side], rec.get("label"), err.get("message")),
                err.get("hint"),
            )
        wrong = _effective_mismatch(rec)
        if not wrong:
            eff = rec.get("effective") or {}
            ctx.check(
                "effective." + side,
                "%s effective device" % SIDES[side],
                Evidence.PASS,
                "MindSpore in the %s process (pid %s) reports %s:%s, %s mode, as asked"
                % (SIDES[side], rec.get("pid"), eff.get("target"), eff.get("device_id"), eff.get("mode")),
                evidence={"requested": rec.get("requested"), "effective": eff},
                hint=rec.get("ms_role_warning"),
            )
        if wrong:
            ctx.check(
                "effective." + side,
                "%s effective device" % SIDES[side],
                Evidence.FAIL,
                "; ".join(wrong),
                evidence={"requested": rec.get("requested"), "effective": rec.get("effective")},
                hint=rec.get("ms_role_warning") or "the side did not run where asked; nothing is compared",
            )
            return _stop_without_comparing(
                ctx,
                records,
                base,
                paths,
                side,
                "EffectiveConfigMismatch",
                "%s path: %s" % (SIDES[side], "; ".join(wrong)),
                None,
            )

    ctx.progress(3, 4, "phases", "compare")
    ref, cand = records["ref"], records["cand"]
    setting_checks = matched_settings(ref.get("settings") or {}, cand.get("settings") or {})
    for check in setting_checks:  # before any diff: a mismatch means the numbers mean nothing
        ctx.check(
            check["id"],
            check["title"],
            check["status"],
            check["detail"],
            evidence=check["evidence"],
            hint=check["hint"],
        )
    ref_arrays = _load_npz(side_paths(ctx.dir, "ref")["npz"])
    cand_arrays = _load_npz(side_paths(ctx.dir, "cand")["npz"])
    diffs = compare_sides(
        ref_arrays,
        cand_arrays,
        [t["name"] for t in ref.get("tensors") or []],
        [t["name"] for t in cand.get("tensors") or []],
        al["atol"],
        al["rtol"],
        labels=batch["labels"],
        computed={s: _computed_dtypes(records[s]) for s in SIDES},
    )
    for fields in diffs:
        ctx.emit("tensor_diff", ref=ref["label"], cand=cand["label"], **fields)
    summary = verdict(diffs, setting_checks)
    first = summary["first_failure"]
    flips = summary["class_flips"]
    detail = "%d of %d tensors within tolerance" % (summary["counts"]["passed"], summary["counts"]["tensors"])
    if first:
        detail += "; divergence starts at %s (#%d)" % (first["name"], first["position"])
    if flips is not None:
        detail += "; %d of %d predicted classes differ" % (flips["count"], flips["n"])
    if summary["settings_mismatch"]:
        detail += "; settings differ: %s" % ", ".join(summary["settings_mismatch"])
    ctx.check(
        "alignment",
        "alignment verdict",
        summary["verdict"],
        detail,
        evidence={"counts": summary["counts"], "first_failure": first},
    )
    ctx.progress(4, 4, "phases", "done")
    ctx.result(
        dict(
            base,
            paths=_paths_summary(records, paths),
            compared=True,
            tap_checks={s: records[s].get("tap_check") for s in SIDES},
            **summary,
        )
    )
    return "ok"
