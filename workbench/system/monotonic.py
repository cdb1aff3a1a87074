"""Monotonic stamps: times that a wall-clock jump cannot move, comparable across processes of one boot.

A stamp is {"boot": <kernel boot id>, "t": <CLOCK_MONOTONIC seconds>}. Two stamps of the same boot
give a true elapsed time whatever the wall clock did in between; stamps of different boots (or a
damaged stamp) give None, and the caller falls back to, and says it uses, the wall clock.
Pure code for Python 3.9.
"""

from __future__ import annotations

import math
import time
from typing import Any, Dict, Optional

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
_boot: Optional[str] = None


def boot_id() -> str:
    """This boot's id (Linux); '' where there is none, and stamps then never compare."""
    global _boot
    if _boot is None:
        try:
            with open(_BOOT_ID, encoding="ascii") as fh:
                _boot = fh.read(64).strip()
        except (OSError, ValueError):
            _boot = ""
    return _boot


def stamp() -> Dict[str, Any]:
    """Now, as a monotonic stamp."""
    return {"boot": boot_id(), "t": time.monotonic()}


def elapsed(start: Any, end: Any = None) -> Optional[float]:
    """Seconds from stamp `start` to stamp `end` (default: now); None when they are not of one boot or damaged."""
    end = stamp() if end is None else end
    if not (isinstance(start, dict) and isinstance(end, dict)):
        return None
    boot, t0, t1 = start.get("boot"), _finite(start.get("t")), _finite(end.get("t"))
    if not boot or boot != end.get("boot") or t0 is None or t1 is None:
        return None
    return t1 - t0


def _finite(value: Any) -> Optional[float]:
    if type(value) in (int, float) and math.isfinite(value):
        return float(value)
    return None
