"""The saved training state as the `resume` job reads it: tensor-by-tensor comparison, and the tamper used by its tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import numpy as np

from jobs.common.checkpoint_files import save_ckpt_atomic
from workbench.system.atomic import read_json, sha256_file, write_json

# Optimizer state in a TrainOneStepCell checkpoint: Adam's moments, SGD's momentum accumulators.
OPTIMIZER_PREFIXES = ("moment1.", "moment2.", "moments.", "accum.")


def load_arrays(path: Path) -> Dict[str, np.ndarray]:
    """name -> numpy array of every tensor in a checkpoint."""
    import mindspore as ms

    return {name: param.asnumpy() for name, param in ms.load_checkpoint(str(path)).items()}


def compare_checkpoints(a: Path, b: Path) -> Dict[str, Any]:
    """Bit-for-bit comparison of two checkpoints: tensors compared, which differ, the largest difference."""
    left, right = load_arrays(a), load_arrays(b)
    names = sorted(set(left) | set(right))
    only = [n for n in names if n not in left or n not in right]
    differ = []
    max_abs = 0.0
    for name in names:
        if name in only:
            continue
        x, y = left[name], right[name]
        if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
            differ.append(name)
            if x.shape == y.shape:
                max_abs = max(max_abs, float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
    return {
        "tensors": len(names) - len(only),
        "missing": only,
        "differing": differ,
        "max_abs_diff": max_abs,
        "identical": not only and not differ,
        "rule": "bytes of every tensor equal (bit-identical)",
    }


def zero_optimizer_state(state_dir: Path) -> Dict[str, Any]:
    """Rewrite state.ckpt with the optimizer's moments zeroed and state.json's hash updated (the check's fault test)."""
    import mindspore as ms

    ckpt, meta = state_dir / "state.ckpt", state_dir / "state.json"
    params = ms.load_checkpoint(str(ckpt))
    zeroed = [n for n in params if n.startswith(OPTIMIZER_PREFIXES)]
    out = [{"name": n, "data": ms.Tensor(np.zeros_like(p.asnumpy())) if n in zeroed else p} for n, p in params.items()]
    save_ckpt_atomic(out, ckpt)
    record = read_json(meta)
    record["ckpt_sha256"] = sha256_file(ckpt)
    record["tampered"] = "optimizer state zeroed: %d tensors" % len(zeroed)
    write_json(meta, record)
    return {"zeroed": zeroed}
