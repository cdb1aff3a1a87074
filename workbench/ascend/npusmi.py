"""Parse `npu-smi info` tables, classify npu-smi failures, run npu-smi as the single poller.

Single poller rule: npu-smi never runs concurrently with itself on one machine. Every call
goes through `run_npu_smi`, which holds an exclusive `fcntl.flock` on one lock file for the
whole run, so concurrent callers queue instead of opening parallel driver-management
sessions (whose failures would then be hard to attribute), and a query's cost stays bounded.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from workbench.ascend import errors
from workbench.ascend.smiblocks import ChipRecords, decimal, parse_chip_records
from workbench.events.protocol import Evidence

USUAL_PLACES = ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi", "/usr/bin/npu-smi")
DEFAULT_LOCK_PATH = os.path.join(tempfile.gettempdir(), "ms-workbench-npu-smi.lock")
TIMEOUT_RC = 124  # same convention as coreutils `timeout`
NOT_FOUND_RC = 127  # same convention as the shell
_KILL_GRACE_S = 2.0
# What a container needs to see an NPU: the device nodes and the host driver (npu-smi comes with it).
CONTAINER_HINT = (
    "in a container, map the device and the driver: docker run --device=/dev/davinci0 "
    "--device=/dev/davinci_manager --device=/dev/devmm_svm --device=/dev/hisi_hdc "
    "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver "
    "-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi … (one --device=/dev/davinciN per NPU)"
)

_TITLE_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_PAIR_RE = re.compile(r"(\d+(?:\.\d+)?|NA|-)\s*/\s*(\d+(?:\.\d+)?|NA|-)")
_IDLE_RE = re.compile(r"No running processes found in NPU\s+(\d+)")


@dataclass
class NpuSmiInfo:
    """What one `npu-smi info` output says: version, devices, processes and the layout seen."""

    version: Optional[str] = None
    devices: List[Dict[str, Any]] = field(default_factory=list)
    processes: List[Dict[str, Any]] = field(default_factory=list)
    layout: str = "none"
    smi_version: Optional[str] = None
    idle_npus: List[int] = field(default_factory=list)
    unparsed: List[str] = field(default_factory=list)


def _num(token: str) -> Optional[float]:
    """Float of a plain decimal table token; None for NA, '-', codes and anything else."""
    return decimal(token)


def _cells(line: str) -> Optional[List[str]]:
    """Cells of a `| a | b |` table row, or None for rules, prompts and prose."""
    text = line.strip()
    if len(text) < 2 or not (text.startswith("|") and text.endswith("|")):
        return None
    return [cell.strip() for cell in text[1:-1].split("|")]


def _split_metrics(cell: str) -> Tuple[List[str], List[Optional[List[float]]]]:
    """Split '133.9  43  0 / 0' into leading tokens and used/total pairs."""
    pairs = list(_PAIR_RE.finditer(cell))
    head = cell[: pairs[0].start()] if pairs else cell
    values = []
    for m in pairs:
        used, total = _num(m.group(1)), _num(m.group(2))
        values.append(None if used is None or total is None else [used, total])
    return head.split(), values


def _layout_name(id_column: str, hbm: bool, container_pid: bool, seen: bool) -> str:
    """Name the layout: chip-hbm (910/910B), phyid-hbm (A3), device-nohbm (310/310B/310P).

    "+container-pid" marks the wider 26.x process table; "none" means no device table was seen.
    """
    if not seen:
        return "none"
    name = "%s-%s" % (id_column, "hbm" if hbm else "nohbm")
    return name + "+container-pid" if container_pid else name


def _device(row1: List[str], row2: Optional[List[str]], hbm: bool) -> Dict[str, Any]:
    """Build one device dict from its two table rows."""
    head = row1[0].split()
    front, pairs = _split_metrics(row1[2])
    device: Dict[str, Any] = {
        "npu": int(head[0]),
        "chip": None,
        "name": " ".join(head[1:]),
        "health": row1[1],
        "power_w": _num(front[0]) if front else None,
        "temp_c": _num(front[1]) if len(front) > 1 else None,
        "aicore_pct": None,
        "memory_mb": None,
        "hbm_mb": None,
    }
    if row2 is not None:
        device["chip"] = int(row2[0].split()[0])
        front, pairs = _split_metrics(row2[2])
        device["aicore_pct"] = _num(front[0]) if front else None
        device["memory_mb"] = pairs[0] if pairs else None
        if hbm and len(pairs) > 1:
            device["hbm_mb"] = pairs[1]
    return device


def _process(cells: List[str], container_column: bool) -> Dict[str, Any]:
    """Build one process dict from a process-table row.

    The first column is "NPU  Chip": on cards with two dies under one NPU id (A3, 310P Duo)
    the chip tells the dies apart, so it is kept (None when a table prints the NPU only).
    """
    ids = cells[0].split()
    row: Dict[str, Any] = {
        "npu": int(ids[0]),
        "chip": int(ids[1]) if len(ids) > 1 else None,
        "pid": int(cells[1]),
        "name": cells[2],
        "memory_mb": float(cells[3]),
    }
    if container_column:
        row["container_pid"] = int(cells[4]) if len(cells) > 4 and cells[4].isdigit() else None
    return row


def parse_info(text: str) -> NpuSmiInfo:
    """Parse `npu-smi info` output (any known layout; shell prompts and prose are ignored)."""
    info = NpuSmiInfo()
    section = None
    id_column, hbm, container, seen = "chip", False, False, False
    pending: Optional[List[str]] = None
    for line in text.splitlines():
        cells = _cells(line)
        if cells is None:
            continue
        joined = " ".join(cells)
        title = _TITLE_RE.search(joined)
        if title:
            info.smi_version, info.version = title.group(1), title.group(2)
            continue
        if cells[0].startswith("NPU") and "Health" in joined:
            section, seen = "devices", True
            continue
        if section == "devices" and cells[0].startswith("Chip"):
            id_column = "phyid" if "Phy-ID" in cells[0] else "device" if "Device" in cells[0] else "chip"
            hbm = "HBM-Usage" in joined
            continue
        if "Process id" in joined and "Process name" in joined:
            if pending is not None:
                info.devices.append(_device(pending, None, hbm))
                pending = None
            section, container = "processes", "Process id in container" in joined
            continue
        idle = _IDLE_RE.search(joined)
        if idle:
            info.idle_npus.append(int(idle.group(1)))
            continue
        try:
            if section == "devices" and len(cells) == 3:
                # The second row of a device has one token (AICore) before its pairs, the
                # first row two (power, temp): names like "310" make column 1 ambiguous.
                if pending is not None and len(_split_metrics(cells[2])[0]) <= 1:
                    info.devices.append(_device(pending, cells, hbm))
                    pending = None
                else:
                    if pending is not None:
                        info.devices.append(_device(pending, None, hbm))
                    int(cells[0].split()[0])
                    pending = cells
            elif section == "processes" and len(cells) >= 4:
                info.processes.append(_process(cells, container))
            else:
                raise ValueError("row outside a known table")
        except (ValueError, IndexError):
            info.unparsed.append(line.rstrip())
    if pending is not None:
        info.devices.append(_device(pending, None, hbm))
    info.layout = _layout_name(id_column, hbm, container, seen)
    if seen and not info.devices and info.unparsed:
        info.layout = "unknown"  # a device table whose rows have no known shape
    return info


def parse_board(text: str, chip: Optional[int] = None) -> ChipRecords:
    """Parse `npu-smi info -t board|health|... -i N [-c C]`: card fields, a record per chip, the MCU apart (text values)."""
    return parse_chip_records(text, chip=chip, numbers=False)


def parse_usages(text: str, chip: Optional[int] = None) -> ChipRecords:
    """Parse `npu-smi info -t usages|common|memory|... -i N [-c C]` per chip: numbers become floats."""
    return parse_chip_records(text, chip=chip, numbers=True)


def classify_failure(returncode: Optional[int], stdout: str, stderr: str) -> Optional[Dict[str, str]]:
    """Name a failed npu-smi run: {code, cause, hint}; None when nothing failed."""
    text = "%s\n%s" % (stdout or "", stderr or "")
    for entry in errors.explain(text):
        if entry["id"].startswith("dcmi-") or entry["id"].startswith("npu-smi-"):
            return {"code": entry["id"], "cause": entry["cause"], "hint": entry["next_check"]}
    if returncode == TIMEOUT_RC and "wait timed out" in text:
        return {
            "code": "lock-busy",
            "cause": "another npu-smi poller held the lock for the whole timeout",
            "hint": "look for a stuck npu-smi process (ps -eo pid,stat,cmd | grep npu-smi)",
        }
    if returncode == TIMEOUT_RC and "timed out" in text:
        return {
            "code": "timeout",
            "cause": "npu-smi did not finish within its time limit",
            "hint": "a hung driver query: check dmesg and `ps -eo pid,stat,cmd | grep npu-smi` (state D)",
        }
    if returncode == NOT_FOUND_RC:
        return {
            "code": "npu-smi-not-found",
            "cause": "npu-smi is not on PATH",
            "hint": "install the Ascend driver, or mount /usr/local/bin/npu-smi into the container",
        }
    if returncode not in (0, None):
        return {
            "code": "exit-%d" % returncode,
            "cause": "npu-smi exited with status %d" % returncode,
            "hint": "read its stderr: %s" % ((stderr or stdout or "(empty)").strip()[:200]),
        }
    return None


def error_text(stdout: str, stderr: str, limit: int = 300) -> str:
    """npu-smi's own words when it failed: its non-table lines, joined with ' | ' and shortened."""
    lines = [
        line.strip()
        for line in ("%s\n%s" % (stdout or "", stderr or "")).splitlines()
        if line.strip() and not line.lstrip().startswith(("+", "|"))
    ]
    text = " | ".join(lines)
    return text if len(text) <= limit else text[:limit] + " ..."


def what_it_printed(stdout: str, stderr: str, limit: int = 300) -> str:
    """npu-smi's own words, else what its table rows were (rows without a known header), else '(no output)'."""
    words = error_text(stdout, stderr, limit)
    if words:
        return words
    info = parse_info(stdout or "")
    if info.unparsed:
        return "%d table row(s) under no column header this parser knows (first: %r)" % (
            len(info.unparsed),
            info.unparsed[0].strip()[:120],
        )
    if (stdout or "").strip():
        return "only table rules and headers, no device row"
    return "(no output)"


def no_device_failure(stdout: str, stderr: str) -> Dict[str, str]:
    """The failure of an npu-smi run that exited cleanly but listed no device, naming what it printed instead."""
    return {
        "code": "no-device",
        "cause": "npu-smi info listed no device; it printed %s" % what_it_printed(stdout, stderr),
        "hint": "npu-smi ran but printed no device table: check the driver with `npu-smi info` on the host",
    }


def locate(command: str, search_path: str, root: str = "/", usual: Sequence[str] = USUAL_PLACES) -> Dict[str, Any]:
    """Find npu-smi: {path, looked_at, unusable}: `command` on `search_path`, else (for npu-smi) the usual places under root.

    `unusable` lists files that exist where npu-smi was looked for but cannot be run, each
    with why (not executable, not a file), so a reason never says "no npu-smi" about them.
    """
    found = shutil.which(command, path=search_path)
    looked = [command if os.sep in command else "%s on PATH" % command]
    unusable: List[str] = []
    if found:
        return {"path": found, "looked_at": looked, "unusable": unusable}
    where = [command] if os.sep in command else [os.path.join(d, command) for d in search_path.split(os.pathsep) if d]
    if os.path.basename(command) == "npu-smi":
        for place in usual:
            path = os.path.join(root, place.lstrip("/"))
            looked.append(path)
            where.append(path)
    for path in where:
        if not os.path.lexists(path):
            continue
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return {"path": path, "looked_at": looked, "unusable": unusable}
        try:
            mode = os.stat(path).st_mode
            why = "not executable (mode %04o)" % stat.S_IMODE(mode) if stat.S_ISREG(mode) else "not a file"
        except OSError as exc:
            why = "cannot be read (%s)" % exc.strerror
        unusable.append("%s is %s" % (path, why))
    return {"path": None, "looked_at": looked, "unusable": sorted(set(unusable), key=unusable.index)}


def missing_text(located: Dict[str, Any]) -> str:
    """Why no npu-smi could be run: the unusable files found, else where it was looked for."""
    if located["unusable"]:
        return "npu-smi cannot be run: " + "; ".join(located["unusable"])
    return "no npu-smi found (looked for %s)" % ", ".join(located["looked_at"])


def failure_verdict(failure: Dict[str, str], stdout: str, stderr: str) -> Dict[str, Any]:
    """A failed npu-smi as a device-layer verdict: blocked, its error text, its hint and the container hint."""
    words = what_it_printed(stdout, stderr)
    return {
        "status": Evidence.BLOCKED,
        "failure": failure,
        "error_text": words,
        "detail": "npu-smi info failed (%s): %s; %s" % (failure["code"], words, failure["cause"]),
        "hint": "%s; %s" % (failure["hint"], CONTAINER_HINT),
    }


def run_npu_smi(
    args: Sequence[str], timeout_s: float = 10.0, lock_path: str = DEFAULT_LOCK_PATH, command: str = "npu-smi"
) -> Tuple[int, str, str, float]:
    """Run `npu-smi ARGS` from PATH under the single-poller lock; (rc, stdout, stderr, elapsed_s).

    `command` may be a full path to the npu-smi to run (so callers need not edit PATH, which
    other threads may read).

    The lock wait and the run share one time limit. On timeout the whole process group is
    killed and rc is TIMEOUT_RC; when npu-smi is missing rc is NOT_FOUND_RC. elapsed_s is the
    caller's whole wait, lock included.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    lock_fd = _open_lock(lock_path)
    try:
        while True:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return (
                        TIMEOUT_RC,
                        "",
                        "npu-smi lock %s: wait timed out after %.1f s" % (lock_path, timeout_s),
                        time.monotonic() - start,
                    )
                time.sleep(0.02)
        return _run_locked(list(args), deadline, start, timeout_s, command)
    finally:
        os.close(lock_fd)  # closing the descriptor releases the lock


def _open_lock(lock_path: str) -> int:
    """Open (creating if needed) the lock file read-only: flock needs no write access,
    so users sharing one machine-wide lock file can all take it."""
    os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
    try:
        return os.open(lock_path, os.O_RDONLY | os.O_CREAT, 0o666)
    except PermissionError:
        return os.open(lock_path, os.O_RDONLY)  # another user's file in a sticky directory


def _run_locked(
    args: List[str], deadline: float, start: float, timeout_s: float, command: str = "npu-smi"
) -> Tuple[int, str, str, float]:
    """Run npu-smi in its own process group; kill the group when the deadline passes."""
    try:
        proc = subprocess.Popen(
            [command] + args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        return NOT_FOUND_RC, "", "npu-smi: command not found on PATH", time.monotonic() - start
    except PermissionError as exc:
        return 126, "", "npu-smi: %s" % exc, time.monotonic() - start
    try:
        out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        return proc.returncode, out, err, time.monotonic() - start
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            out, err = proc.communicate(timeout=_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            # A query stuck in the driver (state D) survives SIGKILL: leave it, report it.
            out, err = "", "npu-smi output still open after SIGKILL (stuck in the driver?)"
        note = "npu-smi timed out after %.1f s; process group killed" % timeout_s
        return TIMEOUT_RC, out or "", ((err or "") + "\n" + note).strip(), time.monotonic() - start


def on_device(row: Dict[str, Any], npu: Optional[int], chip: Optional[int]) -> bool:
    """Is this process row on `npu` (and on `chip`, wherever the row carries a chip)?"""
    if npu is not None and row["npu"] != npu:
        return False
    return chip is None or row.get("chip") is None or row["chip"] == chip
