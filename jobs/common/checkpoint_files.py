"""The `train` job's checkpoint files, written so a reader never sees half of one: best.ckpt + best.json."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Dict

from jobs.common import models
from workbench.system.atomic import sha256_file, write_json

BEST_CKPT = "best.ckpt"
BEST_META = "best.json"
BEST_RULE = "validation macro_f1 (highest; first epoch wins a tie)"


def save_ckpt_atomic(cell, path: Path) -> Path:
    """save_checkpoint to a temp name in the same folder, then rename (readers never see half a file)."""
    import mindspore as ms

    # save_checkpoint appends .ckpt to names that lack it, so the temp name ends in .ckpt too.
    tmp = path.with_name(".%s.%d.tmp.ckpt" % (path.name, os.getpid()))
    try:
        ms.save_checkpoint(cell, str(tmp))
        os.replace(str(tmp), str(path))
    finally:
        if tmp.exists():
            os.unlink(str(tmp))
    return path


def copy_atomic(src: Path, dst: Path) -> Path:
    """Copy a file to `dst` via a temp name and rename."""
    tmp = dst.with_name(".%s.%d.tmp" % (dst.name, os.getpid()))
    shutil.copyfile(str(src), str(tmp))
    os.replace(str(tmp), str(dst))
    return dst


def save_best(run: Any, epoch: int, global_step: int, val: Dict[str, Any], artifacts: Dict[str, str]) -> None:
    """best.ckpt (network parameters) then best.json with the config and metrics; both emitted as artifacts.

    `run` is the job's Trainer (network, precision, optimizer, data and effective device).
    """
    ctx = run.ctx
    ckpt = save_ckpt_atomic(run.net, ctx.artifacts / BEST_CKPT)
    record = {
        "job": ctx.meta.get("jid"),
        "session": ctx.meta.get("session"),
        "epoch": epoch,
        "global_step": global_step,
        "selected_by": BEST_RULE,
        "val": val,
        "model": dict(run.cfg.model, parameters=models.count_params(run.net)),
        "precision": run.precision_info,
        "optimizer": run.opt_info,
        "data": run.data.description,
        "checkpoint": {"file": BEST_CKPT, "sha256": sha256_file(ckpt), "bytes": ckpt.stat().st_size},
        "effective_device": run.effective,
        "mindspore": run.ms.__version__,
        "config": run.cfg.plain(),
    }
    js = write_json(ctx.artifacts / BEST_META, record)
    ctx.artifact(ckpt, "checkpoint", role="best", epoch=epoch, macro_f1=val["macro_f1"])
    ctx.artifact(js, "checkpoint-meta", role="best", epoch=epoch)
    artifacts["best"] = "artifacts/" + BEST_CKPT
    artifacts["best_meta"] = "artifacts/" + BEST_META
