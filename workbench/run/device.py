"""Resolve `device.target: auto` before a job starts, by detection, with the reason.

An npu-smi binary is not a device: in a container without the devices mapped, npu-smi is on
PATH, prints a dcmi error and may still exit 0. So auto resolves to Ascend only when a
/dev/davinciN node is visible AND `npu-smi info` lists at least one device; otherwise the
reason says which of the two was missing (with npu-smi's own words when it failed).
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, Dict, List, Mapping, Optional

from workbench.ascend import npusmi, visible
from workbench.events.protocol import Evidence

DEVICE_JOBS = ("env", "train", "align", "export", "test", "overfit", "resume", "precision", "shift", "numerics")
DETECT_TIMEOUT_S = 10.0
_NODE_RE = re.compile(r"^davinci\d+$")  # davinci_manager is a control node, not a device


def find_npu_smi(env: Mapping[str, str], root: str = "/") -> Dict[str, Any]:
    """npusmi.locate on env's PATH, else its usual install places under `root`."""
    return npusmi.locate("npu-smi", env.get("PATH", ""), root)


def device_nodes(root: str = "/") -> List[str]:
    """The /dev/davinciN device nodes under `root`, by number (davinci_manager is not a device)."""
    return sorted(
        (
            os.path.basename(p)
            for p in glob.glob(os.path.join(root, "dev", "davinci*"))
            if _NODE_RE.match(os.path.basename(p))
        ),
        key=lambda n: int(n[7:]),
    )


def ascend_evidence(
    env: Mapping[str, str],
    root: str = "/",
    lock_path: str = npusmi.DEFAULT_LOCK_PATH,
    timeout_s: float = DETECT_TIMEOUT_S,
) -> Dict[str, Any]:
    """What this machine shows of an NPU: device nodes, npu-smi, and the devices npu-smi lists.

    Returns {nodes, npu_smi, looked_at, returncode, devices, failure, error_text, ok}; `ok` is
    True only with a device node and at least one device listed by npu-smi.
    """
    nodes = device_nodes(root)
    located = find_npu_smi(env, root)
    path = located["path"]
    out: Dict[str, Any] = {
        "nodes": nodes,
        "npu_smi": path,
        "looked_at": located["looked_at"],
        "unusable": located["unusable"],
        "returncode": None,
        "devices": 0,
        "rows": [],
        "visible_devices": env.get("ASCEND_RT_VISIBLE_DEVICES"),
        "failure": None,
        "error_text": None,
        "ok": False,
    }
    if path is not None:
        rc, stdout, stderr, _ = npusmi.run_npu_smi(["info"], timeout_s=timeout_s, lock_path=lock_path, command=path)
        info = npusmi.parse_info(stdout)
        failure = npusmi.classify_failure(rc, stdout, stderr)
        if failure is None and not info.devices:
            failure = npusmi.no_device_failure(stdout, stderr)
        out.update(
            returncode=rc,
            devices=len(info.devices),
            rows=[[d["npu"], d.get("chip")] for d in info.devices],
            failure=failure,
            error_text=npusmi.what_it_printed(stdout, stderr) if failure else None,
        )
    out["ok"] = bool(nodes) and out["devices"] > 0 and out["failure"] is None
    return out


def _ascend_reason(found: Dict[str, Any]) -> str:
    """Why this machine is (not) an Ascend target: the device nodes, then what npu-smi said."""
    nodes = found["nodes"]
    parts = [
        "found %s" % ", ".join(nodes[:4]) + (" …" if len(nodes) > 4 else "")
        if nodes
        else "no /dev/davinci* device node visible"
    ]
    if found["npu_smi"] is None:
        parts.append(npusmi.missing_text(found))
    elif found["failure"] is not None:
        parts.append("npu-smi info failed (%s): %s" % (found["failure"]["code"], found["error_text"]))
    else:
        parts.append("npu-smi lists %d device(s)" % found["devices"])
    return "; ".join(parts)


def detect(
    env: Optional[Mapping[str, str]] = None,
    root: str = "/",
    lock_path: str = npusmi.DEFAULT_LOCK_PATH,
    timeout_s: float = DETECT_TIMEOUT_S,
) -> Dict[str, Any]:
    """Pick Ascend, GPU or CPU from what this machine shows; {target, why, ascend: evidence}."""
    env = os.environ if env is None else env
    found = ascend_evidence(env, root, lock_path, timeout_s)
    reason = _ascend_reason(found)
    if found["ok"]:
        return {"target": "Ascend", "why": reason, "ascend": found}
    if found["nodes"] or found["npu_smi"]:
        reason = "not Ascend: " + reason
    if glob.glob(os.path.join(root, "dev", "nvidia[0-9]*")):
        return {"target": "GPU", "why": "found /dev/nvidia*; %s" % reason, "ascend": found}
    return {"target": "CPU", "why": "%s; no /dev/nvidia*" % reason, "ascend": found}


def resolve(
    target: str,
    device_id: int,
    env: Optional[Mapping[str, str]] = None,
    root: str = "/",
    lock_path: str = npusmi.DEFAULT_LOCK_PATH,
    timeout_s: float = DETECT_TIMEOUT_S,
) -> Dict[str, object]:
    """Return {requested, resolved, id, why} for a configured target (auto is detected, others are kept)."""
    if target == "auto":
        found = detect(env, root, lock_path, timeout_s)
        return {"requested": "auto", "resolved": found["target"], "id": device_id, "why": "auto: " + found["why"]}
    return {"requested": target, "resolved": target, "id": device_id, "why": "set in config"}


def setting_verdict(device: Mapping[str, Any], detected: Mapping[str, Any]) -> Dict[str, Any]:
    """The device-setting check: can the configured target be met here? {status, detail, hint}.

    An explicit Ascend on a machine whose npu-smi fails or that shows no device node is
    blocked (a precondition is missing), with npu-smi's words and the container hint; never a pass.
    """
    requested, resolved = device.get("requested"), device.get("resolved")
    detail = "device.target=%s device.id=%s → %s:%s (%s)" % (
        requested,
        device.get("id"),
        resolved,
        device.get("id"),
        device.get("why"),
    )
    if requested == "Ascend" and detected.get("target") != "Ascend":
        ascend = detected.get("ascend") or {}
        failure = ascend.get("failure")
        hint = npusmi.CONTAINER_HINT
        if failure:
            hint = "%s; %s" % (failure.get("hint"), hint)
        return {
            "status": Evidence.BLOCKED,
            "hint": hint,
            "detail": detail + "; this machine shows no usable NPU: %s" % _ascend_reason(ascend)
            if ascend
            else detail + "; " + str(detected.get("why")),
        }
    if requested == "GPU" and detected.get("target") != "GPU":
        return {
            "status": Evidence.FAIL,
            "detail": detail + "; this machine shows no GPU: %s" % detected.get("why"),
            "hint": "set device.target to auto or CPU here, or run on a machine with the device; nothing falls "
            "back to CPU on its own",
        }
    if resolved == "Ascend":
        ascend = detected.get("ascend") or {}
        found = visible.check_device_id(
            device.get("id"), ascend.get("visible_devices"), int(ascend.get("devices") or 0)
        )
        if found["status"] != Evidence.PASS:
            return {
                "status": found["status"],
                "detail": detail + "; " + found["detail"],
                "hint": "set device.id to one of the ids the runtime sees (0-based, after ASCEND_RT_VISIBLE_DEVICES)",
            }
        detail += "; " + found["detail"]
    return {"status": Evidence.PASS, "detail": detail, "hint": None}


def lock_name(target: str, device_id: int) -> str:
    """File name of the per-device lock."""
    return "device-%s-%d.lock" % (target, device_id)
