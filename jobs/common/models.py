"""The networks every job builds, checkpoint loading that refuses silent misses, job references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

from jobs.common import network
from jobs.common.network import MODEL_NAMES, NUM_CLASSES  # noqa: F401 (the names jobs use)
from workbench.jobkit.context import JobFailed


def build_net(name: str, hidden: int = 128):
    """A fresh network by name (jobs/common/network.py); an unknown name is a ConfigError of the job."""
    try:
        return network.build_net(name, hidden)
    except ValueError as exc:
        raise JobFailed(str(exc), hint="set model.name to mlp or cnn", type_="ConfigError") from None


def count_params(net) -> int:
    """Number of trainable scalars in a network."""
    total = 0
    for param in net.trainable_params():
        size = 1
        for dim in param.shape:
            size *= int(dim)
        total += size
    return total


def load_weights(net, ckpt_path: Path, what: str = "checkpoint") -> Dict[str, Any]:
    """Load a checkpoint into `net`; fail unless every parameter on both sides matched.

    MindSpore's load_param_into_net only warns on a renamed layer (even with
    strict_load=True) and leaves the random weights in place, so both lists are checked here.
    """
    import mindspore as ms

    ckpt_path = Path(ckpt_path)
    if not ckpt_path.is_file():
        raise JobFailed(
            "%s %s does not exist" % (what, ckpt_path),
            hint="check the job reference; the training job writes artifacts/best.ckpt",
            type_="FileNotFoundError",
        )
    try:
        params = ms.load_checkpoint(str(ckpt_path))
    except Exception as exc:  # MindSpore raises ValueError/RuntimeError for damaged files
        raise JobFailed(
            "%s %s cannot be read by MindSpore: %s" % (what, ckpt_path, exc),
            hint="the file may be truncated or not a MindSpore checkpoint",
            type_=type(exc).__name__,
        )
    try:
        not_in_ckpt, not_in_net = ms.load_param_into_net(net, params, strict_load=True)
    except Exception as exc:  # a shape mismatch raises
        raise JobFailed(
            "%s %s does not fit the network: %s" % (what, ckpt_path, exc),
            hint="model.name and model.hidden must match the run that wrote it",
            type_=type(exc).__name__,
        )
    not_in_ckpt, not_in_net = list(not_in_ckpt or []), list(not_in_net or [])
    if not_in_ckpt or not_in_net:
        raise JobFailed(
            "%s %s does not match the network: parameters missing from the file %s; "
            "parameters in the file the network lacks %s" % (what, ckpt_path, not_in_ckpt[:8], not_in_net[:8]),
            hint="model.name and model.hidden must match the run that wrote it",
            type_="CheckpointMismatch",
        )
    return {"path": str(ckpt_path), "parameters": len(params)}


def resolve_job_ref(job_dir: Path, key: str, value: str) -> Path:
    """A job id (`train-002`), `<session>/<job id>`, or a path -> an existing folder or file.

    Ids are looked up among the jobs of the current session (the siblings of `job_dir`).
    """
    job_dir = Path(job_dir)
    candidates = [job_dir.parent / value]
    if "/" in value and not value.startswith(("/", ".", "~")):
        sid, _, jid = value.partition("/")
        candidates.append(job_dir.parent.parent.parent / sid / "jobs" / jid)
    candidates.append(Path(value).expanduser())
    for candidate in candidates:
        if candidate.exists():
            return candidate.resolve()
    raise JobFailed(
        "%s is %r: no such job in this session (%s) and no such path" % (key, value, job_dir.parent),
        hint="give a job id of this session like train-001, <session>/<job id>, or an absolute path",
        type_="ConfigError",
    )


def read_job_config(ref_dir: Path) -> Optional[Dict[str, Any]]:
    """The effective config a referenced job ran with (config.json), or None when absent."""
    path = Path(ref_dir) / "config.json"
    if not path.is_file():
        return None
    with open(str(path), encoding="utf-8") as fh:
        return json.load(fh)


def predict(net, images, batch_size: int = 1000):
    """Class predictions (numpy int64 [N]) of `net` in eval mode, fetched with asnumpy()."""
    import numpy as np
    from mindspore import Tensor

    was_training = bool(getattr(net, "training", False))
    net.set_train(False)
    preds = []
    try:
        for start in range(0, len(images), int(batch_size)):
            logits = net(Tensor(images[start : start + int(batch_size)]))
            preds.append(logits.asnumpy().argmax(axis=1))
    finally:
        net.set_train(was_training)
    return np.concatenate(preds).astype(np.int64) if preds else np.zeros(0, np.int64)
