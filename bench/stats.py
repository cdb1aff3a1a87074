"""What every bench prints the same way: medians with their spread, ratios to a baseline of the same round, load."""

from __future__ import annotations

import math
import os
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any, Iterable, List, Optional, Sequence, Tuple


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


# two-sided 95 % Student t quantiles by degrees of freedom (1..30); above 30 the normal 1.96 is close enough
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]
T95 += [2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


# the same at 99 % (a stricter bar for a look taken before the last round: see ratio_interval's `level`)
T99 = [63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012, 2.977, 2.947]
T99 += [2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750]


def t_quantile(df: int, level: float = 0.95) -> float:
    """Two-sided Student t quantile for 95 % or 99 % at `df` degrees of freedom (the normal one above 30)."""
    table, normal = (T99, 2.576) if level == 0.99 else (T95, 1.96)
    if level not in (0.95, 0.99):
        raise ValueError("t_quantile: level %r; expected 0.95 or 0.99" % level)
    return table[df - 1] if df <= len(table) else normal


def ratio_interval(ratios: Sequence[float], level: float = 0.95) -> Optional[Tuple[float, float, float]]:
    """(geometric mean, low, high) of paired ratios: the t interval of their logarithms; None under 2 ratios."""
    if len(ratios) < 2:
        return None
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    half = t_quantile(len(logs) - 1, level) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def interval_verdict(ratios: Sequence[float], goal: float) -> str:
    """'met — 1.28×, 95 % interval [1.16×, 1.43×] (2 of 10 rounds over 1.5×, worst 1.67×)': judged on the interval
    of the per-round ratios (met: all of it at or under `goal`; NOT met: all of it over), every round over counted;
    'not measured' without a ratio."""
    if not ratios:
        return "not measured"
    over = sum(1 for r in ratios if r > goal)
    rounds = "%d of %d rounds over %.1f×, worst %.2f×" % (over, len(ratios), goal, max(ratios))
    got = ratio_interval(ratios)
    if got is None:
        return "not settled (one round; %s)" % rounds
    mean, low, high = got
    verdict = "met" if high <= goal else "NOT met" if low > goal else "not settled"
    return "%s — %.2f×, 95 %% interval [%.2f×, %.2f×] (%s)" % (verdict, mean, low, high, rounds)


def rounds_to_settle(ratios: Sequence[float], bound: float) -> Optional[int]:
    """Rounds for the 95 % interval to clear `bound` (a ratio) if the mean and spread stay as now; None if never.

    The half-width shrinks as t * sd / sqrt(n): n is the least with t(n-1) * sd / sqrt(n) < |mean - log bound|.
    """
    if len(ratios) < 2:
        return None
    logs = [math.log(r) for r in ratios]
    gap, sd = abs(statistics.fmean(logs) - math.log(bound)), statistics.stdev(logs)
    if sd == 0:
        return len(logs) if gap > 0 else None
    if gap == 0:
        return None
    n = 2
    while t_quantile(n - 1) * sd / math.sqrt(n) >= gap:
        n += 1
        if n > 100000:
            return None
    return n
