"""The `train` job's resume state: what must match to continue a run, and state.ckpt + state.json to continue from."""

from __future__ import annotations

import time
from typing import Any, Dict, List

from jobs.common import datafeed, models
from jobs.common.checkpoint_files import BEST_CKPT, BEST_META, copy_atomic, save_ckpt_atomic
from jobs.train.state import RunState
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobFailed
from workbench.system.atomic import read_json, sha256_file, write_json

STATE_FORMAT = "ms-workbench train state v1"
STATE_CKPT = "state.ckpt"
STATE_META = "state.json"
# Config keys that must equal the interrupted run's for a resume to continue the same run.
RESUME_KEYS = (
    "model.name",
    "model.hidden",
    "model.hidden_gain",
    "train.batch_size",
    "train.optimizer",
    "train.lr",
    "train.momentum",
    "train.precision",
    "train.seed",
    "train.max_steps",
    "train.train_limit",
    "train.val_limit",
    "train.parallel.workers",
    "train.input_scale",
    "train.loss_scale",
)


def fingerprint(cfg: Any, data_description: Dict[str, Any]) -> Dict[str, Any]:
    """What must match for a resume to continue this run: the RESUME_KEYS and the split's hashes."""
    out = {key: cfg.at(key) for key in RESUME_KEYS}
    out["data.train_idx_sha256"] = data_description["train_idx_sha256"]
    out["data.val_idx_sha256"] = data_description["val_idx_sha256"]
    out["data.source"] = data_description["source"]
    return out


def _fail(message: str, hint: Any = None) -> JobFailed:
    return JobFailed(message, hint=hint, type_="ResumeError")


def load_resume(run: Any, state: RunState) -> None:
    """Read the state of `train.resume_from`, check it fits, load it into the training cell and into `state`."""
    ctx, ref = run.ctx, run.cfg.train.resume_from
    src = models.resolve_job_ref(ctx.dir, "train.resume_from", ref)
    art = src / "artifacts" if (src / "artifacts").is_dir() else src
    state_json, state_ckpt = art / STATE_META, art / STATE_CKPT
    if not state_json.is_file() or not state_ckpt.is_file():
        raise _fail(
            "train.resume_from is %r: %s has no %s + %s" % (ref, art, STATE_META, STATE_CKPT),
            hint="the training job writes them after each epoch and on cancel",
        )
    saved = read_json(state_json)
    if saved.get("format") != STATE_FORMAT:
        raise _fail("%s: format is %r, expected %r" % (state_json, saved.get("format"), STATE_FORMAT))
    digest = sha256_file(state_ckpt)
    if digest != saved.get("ckpt_sha256"):
        raise _fail(
            "%s: SHA-256 %s differs from %s recorded in %s"
            % (state_ckpt, digest, saved.get("ckpt_sha256"), state_json),
            hint="the state files are from different saves; resume from another job",
        )
    now = fingerprint(run.cfg, run.data.description)
    diffs = [
        "%s: saved %r, now %r" % (k, v, now.get(k)) for k, v in sorted(saved["fingerprint"].items()) if now.get(k) != v
    ]
    if diffs:
        raise _fail(
            "train.resume_from is %r but the config differs from that run: %s" % (ref, "; ".join(diffs)),
            hint="resume with the same model, data and optimizer settings",
        )
    if saved["next_epoch"] > run.cfg.train.epochs:
        raise _fail(
            "train.resume_from is %r: it already finished %d epochs and train.epochs is %d"
            % (ref, saved["next_epoch"] - 1, run.cfg.train.epochs),
            hint="raise train.epochs",
        )
    loaded = models.load_weights(run.train_step, state_ckpt, "resume state")
    state.rng = datafeed.generator_from_state(saved["rng_state_epoch_start"])
    state.epoch, state.step_in_epoch = saved["next_epoch"], saved["step_in_epoch"]
    state.global_step = saved["global_step"]
    state.losses = [float(v) for v in saved["partial_epoch"]["losses"]]
    state.sizes = [int(v) for v in saved["partial_epoch"]["batch_sizes"]]
    state.resumed_from = {
        "job": src.name,
        "dir": str(src),
        "epoch": saved["next_epoch"],
        "step_in_epoch": saved["step_in_epoch"],
        "global_step": saved["global_step"],
    }
    if saved.get("best", {}).get("epoch") is not None:
        state.best = dict(saved["best"])
        copies = ((BEST_CKPT, "checkpoint"), (BEST_META, "checkpoint-meta")) if run.is_rank0 else ()
        for name, kind in copies:
            if (art / name).is_file():
                dst = copy_atomic(art / name, ctx.artifacts / name)
                ctx.artifact(dst, kind, role="best", epoch=state.best["epoch"], copied_from=str(art / name))
    ctx.check(
        "resume",
        "resume state",
        Evidence.PASS,
        "continuing %s at epoch %d step %d (global step %d); %d tensors loaded, "
        "state SHA-256 verified"
        % (src.name, saved["next_epoch"], saved["step_in_epoch"], saved["global_step"], loaded["parameters"]),
        evidence={"state": str(state_json), "ckpt_sha256": digest, "fingerprint": saved["fingerprint"]},
    )


def save_state(
    run: Any,
    state: RunState,
    next_epoch: int,
    step_in_epoch: int,
    rng_state: Dict[str, Any],
    partial_losses: List[float],
    partial_sizes: List[int],
) -> None:
    """state.ckpt (network + optimizer) then state.json; artifacts emitted once both are whole."""
    ctx, ms, seed = run.ctx, run.ms, run.cfg.train.seed
    ckpt = save_ckpt_atomic(run.train_step, ctx.artifacts / STATE_CKPT)
    record = {
        "format": STATE_FORMAT,
        "job": ctx.meta.get("jid"),
        "next_epoch": next_epoch,
        "step_in_epoch": step_in_epoch,
        "global_step": state.global_step,
        "epochs": run.cfg.train.epochs,
        "rng_state_epoch_start": rng_state,
        "partial_epoch": {"losses": partial_losses, "batch_sizes": partial_sizes},
        "best": state.best,
        "ms_seed": int(ms.get_seed()) if hasattr(ms, "get_seed") else seed,
        "seed": seed,
        "fingerprint": fingerprint(run.cfg, run.data.description),
        "ckpt_sha256": sha256_file(ckpt),
        "saved_at": time.time(),
    }
    js = write_json(ctx.artifacts / STATE_META, record)
    ctx.artifact(ckpt, "state", next_epoch=next_epoch, step_in_epoch=step_in_epoch)
    ctx.artifact(js, "state-meta", next_epoch=next_epoch, step_in_epoch=step_in_epoch)
    state.artifacts["state"] = "artifacts/" + STATE_CKPT
