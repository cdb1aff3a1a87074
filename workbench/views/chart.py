"""What the Training charts draw: one window's step-time figures, and a y-range that compile and warm-up cannot squash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from workbench.analysis.metrics import MEDIAN_RULE, P95_RULE, median

STEP_WINDOW = 60  # steady steps in the step-time chart and in the perf pane's live figures


@dataclass(frozen=True)
class WindowStats:
    """min, median, p95 and max of one window of steady step times (ms), with the window's size."""

    n: int
    min: Optional[float]
    median: Optional[float]
    p95: Optional[float]
    max: Optional[float]
    rules = "median: %s; p95: %s" % (MEDIAN_RULE, P95_RULE)  # the job's own rules (analysis.metrics.step_stats)

    @property
    def window(self) -> str:
        """The window, as both the chart caption and the perf pane name it."""
        return "last %d steady" % self.n


def window_stats(step_ms: Sequence[float], size: int = STEP_WINDOW) -> WindowStats:
    """The figures of the last `size` steady steps: the chart's bars and the pane's live row, computed once."""
    shown = sorted(step_ms[-size:] if size else [])
    if not shown:
        return WindowStats(0, None, None, None, None)
    p95 = shown[max(0, -(-95 * len(shown) // 100) - 1)]  # nearest rank: the ceil(0.95 n)-th smallest
    return WindowStats(len(shown), shown[0], median(shown), p95, shown[-1])


@dataclass(frozen=True)
class YRange:
    """The y-range a chart is drawn to, and how many of its first points lie above it (drawn clipped, marked)."""

    lo: float
    hi: float
    clipped: int
    scaled_from: int  # the first point the range is taken from


def steady_range(points: Sequence[float], unsteady_steps: int, per_point: int = 1) -> Optional[YRange]:
    """The y-range of a whole-run chart taken from its points after the compile and warm-up steps.

    A point covers `per_point` steps; those that hold any of the first `unsteady_steps` steps are left out
    of the range (all points count while no later one exists). Left-out points above the range are clipped.
    """
    values: List[float] = list(points)
    if not values:
        return None
    first = min(-(-max(0, unsteady_steps) // max(1, per_point)), len(values))
    if first >= len(values):
        first = 0
    steady = values[first:]
    lo, hi = min(steady), max(steady)
    clipped = sum(1 for v in values[:first] if v > hi)
    low = min(values[:first], default=lo)
    return YRange(min(lo, low), hi, clipped, first)
