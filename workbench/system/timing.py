"""Timing marks for benchmarks: with MS_WORKBENCH_TIMING=<file> set, a process appends one JSON line per mark.

A mark says how long after the process started it was reached (from /proc/self/stat, so the
interpreter's own start-up counts), the process's CPU seconds so far (and its reaped children's) and its memory (VmRSS and
the peak VmHWM from /proc/self/status). Without the variable nothing is measured or written.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, Optional

ENV = "MS_WORKBENCH_TIMING"


def process_age_s() -> Optional[float]:
    """Seconds since this process started (Linux /proc; None elsewhere), at the kernel's tick resolution."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        with open("/proc/uptime", "rb") as fh:
            uptime_s = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (comm) ": the comm may hold spaces
    start_ticks = int(fields[19])  # field 22 of stat, counted from field 3
    return uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")


def memory_mb() -> Dict[str, float]:
    """This process's resident memory now (rss_mb) and at its peak so far (hwm_mb), from /proc/self/status."""
    out: Dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out["rss_mb" if key == "VmRSS" else "hwm_mb"] = int(value.split()[0]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return out


def mark(name: str, **facts: Any) -> Optional[Dict[str, Any]]:
    """Append the mark `name` (with `facts`) to the file named by MS_WORKBENCH_TIMING; None when it is not set."""
    path = os.environ.get(ENV)
    if not path:
        return None
    entry: Dict[str, Any] = {
        "mark": name,
        "t": time.time(),
        "since_start_s": process_age_s(),
        "cpu_s": time.process_time(),
        "children_cpu_s": sum(os.times()[2:4]),  # its children it has reaped (a fold done in a child)
        "pid": os.getpid(),
    }
    entry.update(memory_mb())
    entry.update(facts)
    line = (json.dumps(entry, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one appending write per mark: marks of several processes never interleave
    finally:
        os.close(fd)
    return entry
