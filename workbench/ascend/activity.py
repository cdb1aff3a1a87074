"""Was this job's own process on the NPU it asked for? The verdict from one `npu-smi info` table.

MindSpore's device id is an index into the devices this process may use, not an NPU number:
with ASCEND_RT_VISIBLE_DEVICES set, id d means the d-th entry of that list, and each entry is
itself an index into the devices npu-smi shows here (see visible.py). So the NPU is found by
position in npu-smi's device table, never by assuming id == NPU number.

Inside a container npu-smi's "Process id" column holds host pids, which the container does not
see; the wider 26.x table adds "Process id in container". The verdict says which rule matched.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.ascend.npusmi import NpuSmiInfo, match_process
from workbench.ascend.visible import check_visible_devices
from workbench.events.protocol import Evidence


def npu_for_device(device_id: int, visible_value: Optional[str], devices: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Map MindSpore's device id to an (npu, chip) row of npu-smi's device table.

    Returns {npu, chip, index, rule, detail, error}: `index` is the position in the device table;
    `error` names why no row could be chosen (then npu is None).
    """
    seen = [{"npu": d["npu"], "chip": d.get("chip")} for d in devices]
    out: Dict[str, Any] = {
        "device_id": int(device_id),
        "visible_devices": visible_value,
        "index": None,
        "npu": None,
        "chip": None,
        "seen": seen,
        "rule": None,
        "error": None,
    }
    if visible_value is None:
        index = int(device_id)
        out["rule"] = "ASCEND_RT_VISIBLE_DEVICES unset: device id %d is entry %d of npu-smi's device table" % (
            device_id,
            index,
        )
    else:
        verdict = check_visible_devices(visible_value, [d["npu"] for d in devices] if devices else None)
        ids = verdict["ids"]
        if ids is None or verdict["status"] == Evidence.FAIL:
            out["error"] = verdict["detail"]
            return out
        if device_id >= len(ids):
            out["error"] = "device id %d is outside ASCEND_RT_VISIBLE_DEVICES=%r (%d entries)" % (
                device_id,
                visible_value,
                len(ids),
            )
            return out
        index = ids[device_id]
        out["rule"] = (
            "ASCEND_RT_VISIBLE_DEVICES=%r remaps ids: device id %d -> entry %d of that list = "
            "entry %d of npu-smi's device table" % (visible_value, device_id, device_id, index)
        )
    if index >= len(seen):
        out["error"] = "entry %d asked for, but npu-smi lists %d device row(s)" % (index, len(seen))
        return out
    out.update(index=index, npu=seen[index]["npu"], chip=seen[index]["chip"])
    return out


def _where(npu: Any, chip: Any) -> str:
    """'NPU n' or 'NPU n chip c'."""
    return "NPU %s" % npu + ("" if chip is None else " chip %s" % chip)


def _pids(rows: List[Dict[str, Any]]) -> List[str]:
    """'pid (container pid) on NPU n chip c' labels for the detail text."""
    labels = []
    for row in rows:
        label = str(row["pid"])
        if row.get("container_pid") is not None:
            label += " (in container %s)" % row["container_pid"]
        labels.append("%s on %s" % (label, _where(row["npu"], row.get("chip"))))
    return labels


def activity_verdict(
    info: NpuSmiInfo, pid: int, mapping: Dict[str, Any], in_container: Optional[bool] = None
) -> Dict[str, Any]:
    """{status, detail, hint, evidence}: observed-pass only when `pid` is on the mapped NPU and chip.

    Two dies under one NPU id (A3, 310P Duo) are two devices: wherever the process table
    carries a chip, the row must be on the mapped chip too; the sibling die does not count.

    `in_container` (None = unknown) decides which rule wins when both a host pid and a
    container pid equal `pid` on different rows, which happens when a container pid
    collides with an unrelated host pid.
    """
    npu, chip = mapping.get("npu"), mapping.get("chip")
    evidence: Dict[str, Any] = {
        "pid": pid,
        "mapping": mapping,
        "in_container": in_container,
        "layout": info.layout,
        "npu_smi_version": info.version,
        "processes": list(info.processes),
        "rule": None,
        "row": None,
        "aicore_pct": None,
        "chips": [],
    }
    if npu is None:
        return {
            "status": Evidence.BLOCKED,
            "evidence": evidence,
            "detail": "cannot tell which NPU device id %s is: %s" % (mapping.get("device_id"), mapping.get("error")),
            "hint": "fix ASCEND_RT_VISIBLE_DEVICES or device.id so they name a device npu-smi lists",
        }
    chips = [d for d in info.devices if d["npu"] == npu]
    evidence["chips"] = [
        {
            "chip": d.get("chip"),
            "aicore_pct": d.get("aicore_pct"),
            "hbm_mb": d.get("hbm_mb"),
            "memory_mb": d.get("memory_mb"),
        }
        for d in chips
    ]
    chip_row = next((d for d in chips if d.get("chip") == chip), chips[0] if chips else None)
    evidence["aicore_pct"] = chip_row.get("aicore_pct") if chip_row else None
    found = match_process(info, pid, npu, chip)
    by_host = [r for r in found["candidates"] if r.get("pid") == pid]
    by_container = [r for r in found["candidates"] if r.get("container_pid") == pid]
    rule, row, note = found["rule"], found["row"], None
    if by_host and by_container and by_host[0] is not by_container[0]:
        # Two different rows claim this pid: only knowing where we run can pick one.
        if in_container:
            rule, row = "container-pid", by_container[0]
        note = (
            "pid %d is both a host pid (row %s) and a container pid (row %s) on NPU %s; chose %s because "
            "this process %s"
            % (
                pid,
                by_host[0]["pid"],
                by_container[0]["pid"],
                npu,
                rule,
                "runs in a container" if in_container else "is not known to run in a container",
            )
        )
    elif rule == "host-pid" and in_container:
        note = (
            "matched a host pid although this process looks containerised: the container shares the host's "
            "pid namespace (--pid=host) or the container detection is wrong"
        )
    evidence.update(rule=rule, row=row, note=note)
    where = _where(npu, None if chip in (None, 0) and len(chips) <= 1 else chip)
    aicore = evidence["aicore_pct"]
    aicore_text = "AICore %s%%" % (("%g" % aicore) if aicore is not None else "not shown")
    if found["matched"]:
        detail = "pid %d seen on %s by the %s rule (%s, %s MB); %s at that moment" % (
            pid,
            where,
            rule,
            row.get("name"),
            ("%g" % row["memory_mb"]) if row.get("memory_mb") is not None else "?",
            aicore_text,
        )
        if len(chips) > 1 and row.get("chip") is None:
            detail += "; process rows carry no chip number here, matched on the NPU only"
        return {
            "status": Evidence.PASS,
            "detail": detail + ("; " + note if note else ""),
            "hint": None,
            "evidence": evidence,
        }
    if info.processes:
        seen_text = "pids seen: " + ", ".join(_pids(info.processes))
    else:
        seen_text = "npu-smi lists no process on any NPU"
    detail = "pid %d not in npu-smi's process table for %s (%s); %s" % (pid, where, aicore_text, seen_text)
    if in_container and info.processes and all("container_pid" not in r for r in info.processes):
        # Host pids only, seen from inside a container: our pid cannot match whatever the device does.
        return {
            "status": Evidence.BLOCKED,
            "evidence": evidence,
            "detail": detail + "; this npu-smi prints host pids only and this process runs in a container",
            "hint": "run `npu-smi info` on the host (or use an npu-smi whose table has 'Process id in "
            "container') and look for this job there",
        }
    hint = (
        "the job is not using the NPU it asked for: check device.id and ASCEND_RT_VISIBLE_DEVICES, and that "
        "MindSpore did not fall back to CPU (MS_ROLE)"
    )
    return {"status": Evidence.FAIL, "detail": detail, "hint": hint, "evidence": evidence}
