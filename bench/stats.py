"""What every bench prints the same way: medians with their spread, ratios to a baseline of the same round, load."""

from __future__ import annotations

import os
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any, Iterable, List, Optional, Sequence


def spread(values: Iterable[Optional[float]], fmt: str = "%.2f") -> str:
    """'median [min–max] (n)' of the values that were measured; '-' when none was."""
    got = sorted(v for v in values if v is not None and v == v)
    if not got:
        return "-"
    med = statistics.median(got)
    if len(got) == 1:
        return (fmt + " (n=1)") % med
    return (fmt + " [" + fmt + "–" + fmt + "] (n=%d)") % (med, got[0], got[-1], len(got))


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """a / b, None when either is missing or b is 0."""
    if a is None or b is None or not b or a != a or b != b:
        return None
    return a / b


def load() -> float:
    """The 1-minute load average now."""
    return os.getloadavg()[0]


def shuffled(arms: Sequence[Any], rng: random.Random) -> List[Any]:
    """The arms in a random order for one round, so no arm always runs first (cold) or after the same one."""
    out = list(arms)
    rng.shuffle(out)
    return out


def scratch(prefix: str, out: Optional[str]) -> Path:
    """The folder for a bench's results: `out` when given, else a new temporary folder (docs/ is never the default)."""
    if out:
        path = Path(out)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return Path(tempfile.mkdtemp(prefix=prefix))
