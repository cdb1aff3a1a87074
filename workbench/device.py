"""Resolve `device.target: auto` before a job starts, by detection, with the reason."""

from __future__ import annotations

import glob
import os
import shutil
from typing import Dict, Mapping, Optional

DEVICE_JOBS = ("env", "train", "align", "export", "test")


def detect(env: Optional[Mapping[str, str]] = None, root: str = "/") -> Dict[str, str]:
    """Pick Ascend, GPU or CPU from what this machine shows; say why."""
    env = os.environ if env is None else env
    davinci = sorted(glob.glob(os.path.join(root, "dev", "davinci[0-9]*")))
    npu_smi = shutil.which("npu-smi", path=env.get("PATH"))
    if davinci:
        return {"target": "Ascend", "why": "found %s" % ", ".join(os.path.basename(d) for d in davinci[:4])}
    if npu_smi:
        return {"target": "Ascend", "why": "npu-smi on PATH at %s (no /dev/davinci* seen)" % npu_smi}
    if glob.glob(os.path.join(root, "dev", "nvidia[0-9]*")):
        return {"target": "GPU", "why": "found /dev/nvidia*"}
    return {"target": "CPU", "why": "no /dev/davinci*, no npu-smi on PATH, no /dev/nvidia*"}


def resolve(target: str, device_id: int, env: Optional[Mapping[str, str]] = None) -> Dict[str, object]:
    """Return {requested, resolved, id, why} for a configured target."""
    if target == "auto":
        found = detect(env)
        return {"requested": "auto", "resolved": found["target"], "id": device_id,
                "why": "auto: " + found["why"]}
    return {"requested": target, "resolved": target, "id": device_id, "why": "set in config"}


def lock_name(target: str, device_id: int) -> str:
    """File name of the per-device lock."""
    return "device-%s-%d.lock" % (target, device_id)
