"""Was this job's own process on the NPU it asked for? The verdict from one `npu-smi info` table.

MindSpore's device id is an index into the devices this process may use, not an NPU number:
with ASCEND_RT_VISIBLE_DEVICES set, id d means the d-th entry of that list, and each entry is
itself an index into the devices npu-smi shows here (see visible.py). So the NPU is found by
position in npu-smi's device table, never by assuming id == NPU number.

npu-smi's "Process id" column holds host pids; the wider 26.x table adds "Process id in
container". A pid means something only in its own pid namespace, so the rule matches the one
column that belongs to the job's namespace (see PidSpace): a host pid against "Process id", an
in-container pid against "Process id in container" (and only where no other row shares it, since
every container numbers its processes from 1). Whatever the table cannot tell apart is blocked.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.ascend.npusmi import NpuSmiInfo, on_device
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


HOST = "host"
CONTAINER = "container"


def pid_space(
    space: Optional[str],
    pid: int,
    host_pid: Optional[int] = None,
    why: str = "",
    device_fds: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """The job's pid namespace: {space: host|container|None, pid, host_pid, why, device_fds}.

    `pid` is the job's pid in its own namespace; `host_pid` the pid the host (and npu-smi's
    "Process id" column) gives it, when known: equal to `pid` in the host namespace.
    `device_fds` are the /dev/davinciN nodes the process holds open (None: not read).
    """
    if space == HOST:
        host_pid = pid
    return {
        "space": space,
        "pid": int(pid),
        "host_pid": None if host_pid is None else int(host_pid),
        "why": why,
        "device_fds": device_fds,
    }


def _row_label(row: Dict[str, Any]) -> str:
    """'host pid h (in container c) on NPU n chip c'."""
    label = "host pid %s" % row["pid"]
    if row.get("container_pid") is not None:
        label += " (in container %s)" % row["container_pid"]
    return "%s on %s" % (label, _where(row["npu"], row.get("chip")))


def _choose(info: NpuSmiInfo, space: Dict[str, Any], npu: Any, chip: Any) -> Dict[str, Any]:
    """Which row is this job's: {rule, row, problem, note}; problem names why the table cannot tell (blocked)."""
    wide = any("container_pid" in r for r in info.processes)
    pid, host_pid = space["pid"], space.get("host_pid")
    out: Dict[str, Any] = {"rule": None, "row": None, "problem": None, "note": None}
    if host_pid is not None:
        rows = [r for r in info.processes if r["pid"] == host_pid]
        others = [r for r in info.processes if r.get("container_pid") == host_pid and r["pid"] != host_pid]
        if others and space["space"] == HOST:
            out["note"] = "not this job: %s (another container's process whose in-container pid is also %d)" % (
                ", ".join(_row_label(r) for r in others),
                host_pid,
            )
        mine = [r for r in rows if on_device(r, npu, chip)]
        if space["space"] == CONTAINER:
            wrong = [r for r in mine if r.get("container_pid") is not None and r["container_pid"] != pid]
            if wrong:
                out["problem"] = (
                    "the row with this job's host pid %d names in-container pid %s, not this job's %d "
                    "(%s): the table contradicts this process's own pid namespace"
                    % (host_pid, wrong[0]["container_pid"], pid, _row_label(wrong[0]))
                )
                return out
        out.update(rule="host-pid", row=mine[0] if mine else None)
        return out
    if space["space"] != CONTAINER:
        out["problem"] = (
            "this process's pid namespace is unknown (%s): a pid from it cannot be matched against "
            "either of npu-smi's pid columns" % (space.get("why") or "not read")
        )
        return out
    if not wide:
        out["problem"] = (
            "this npu-smi prints host pids only and this process runs in its own pid namespace "
            "(%s) without knowing its host pid" % (space.get("why") or "a container")
        )
        return out
    rows = [r for r in info.processes if r.get("container_pid") == pid]
    if len(rows) > 1:
        out["problem"] = (
            "in-container pid %d is on %d rows (%s): every container numbers its own processes, so "
            "npu-smi's table cannot tell which of them is this job" % (pid, len(rows), "; ".join(map(_row_label, rows)))
        )
        return out
    mine = [r for r in rows if on_device(r, npu, chip)]
    out.update(rule="container-pid", row=mine[0] if mine else None)
    if not mine:
        return out
    # A unique in-container pid may still be another container's process while this one is on no
    # NPU: only a device node this process holds open says the row can be its own.
    fds = space.get("device_fds")
    label = _row_label(mine[0])
    if fds is None:
        out["problem"] = (
            "the only row with in-container pid %d (%s) may be another container's, and which "
            "/dev/davinci* nodes this process holds open could not be read" % (pid, label)
        )
    elif not fds:
        out["row"] = None
        out["note"] = (
            "the only row with in-container pid %d (%s) is another container's: this process "
            % (
                pid,
                label,
            )
            + "holds no /dev/davinci* node open"
        )
    else:
        out["note"] = "the only row with in-container pid %d; this process holds %s open" % (pid, ", ".join(fds))
    return out


def activity_verdict(info: NpuSmiInfo, space: Dict[str, Any], mapping: Dict[str, Any]) -> Dict[str, Any]:
    """{status, detail, hint, evidence}: observed-pass only when this job's own row is on the mapped NPU and chip.

    Two dies under one NPU id (A3, 310P Duo) are two devices: the row must be on the mapped
    chip; a row that prints no chip on a multi-die NPU cannot place the job on a die (blocked).
    """
    pid = space["pid"]
    npu, chip = mapping.get("npu"), mapping.get("chip")
    evidence: Dict[str, Any] = {
        "pid": pid,
        "pid_space": space,
        "mapping": mapping,
        "layout": info.layout,
        "npu_smi_version": info.version,
        "processes": list(info.processes),
        "rule": None,
        "row": None,
        "note": None,
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
    chosen = _choose(info, space, npu, chip)
    rule, row, note = chosen["rule"], chosen["row"], chosen["note"]
    evidence.update(rule=rule, row=row, note=note)
    where = _where(npu, None if chip in (None, 0) and len(chips) <= 1 else chip)
    who = "pid %d" % pid + (" (host pid %d)" % space["host_pid"] if space.get("host_pid") not in (None, pid) else "")
    aicore = evidence["aicore_pct"]
    aicore_text = "AICore %s%%" % (("%g" % aicore) if aicore is not None else "not shown")
    if chosen["problem"]:
        return {
            "status": Evidence.BLOCKED,
            "evidence": evidence,
            "detail": "cannot tell whether %s is on %s: %s" % (who, where, chosen["problem"]),
            "hint": "run `npu-smi info` on the host and look for this job's host pid there (inside a container, "
            "`cat /proc/self/status | grep NSpid` on a host-mounted /proc gives it)",
        }
    if row is not None and len(chips) > 1 and row.get("chip") is None:
        evidence["row"] = None
        return {
            "status": Evidence.BLOCKED,
            "evidence": evidence,
            "detail": "%s is on NPU %s, but its process row carries no chip number and NPU %s has %d dies: "
            "cannot place it on chip %s" % (who, npu, npu, len(chips), chip),
            "hint": "use an npu-smi whose process table prints 'NPU Chip', or `npu-smi info -t proc-mem -i %s -c %s`"
            % (npu, chip),
        }
    if row is not None:
        detail = "%s seen on %s by the %s rule (%s, %s MB); %s at that moment" % (
            who,
            where,
            rule,
            row.get("name"),
            ("%g" % row["memory_mb"]) if row.get("memory_mb") is not None else "?",
            aicore_text,
        )
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
    column = "host pid" if rule == "host-pid" else "in-container pid"
    detail = "%s not in npu-smi's process table for %s (matched as %s; %s); %s" % (
        who,
        where,
        column,
        aicore_text,
        seen_text,
    )
    hint = (
        "the job is not using the NPU it asked for: check device.id and ASCEND_RT_VISIBLE_DEVICES, and that "
        "MindSpore did not fall back to CPU (MS_ROLE)"
    )
    return {
        "status": Evidence.FAIL,
        "detail": detail + ("; " + note if note else ""),
        "hint": hint,
        "evidence": evidence,
    }
