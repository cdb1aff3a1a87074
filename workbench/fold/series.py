"""Bounded step series: a whole run's trend in a fixed number of points, and a rank's recent steady steps."""

from __future__ import annotations

from collections import deque
from functools import reduce
from operator import add
from typing import Any, Deque, Dict, List, Optional

from workbench.analysis.metrics import upper_median

HISTORY = 120  # points kept for each sparkline
RANK_WINDOW = 20  # recent steady steps per rank behind its step time and images/s
COMPILE_KEPT = 50  # compile and recompile steps kept (a run has a handful)


def number(value: Any) -> Optional[float]:
    """A JSON number as a float; None for anything else (a bool, a string, 'nan' written as text)."""
    return float(value) if type(value) in (int, float) else None


class WholeRunHistory:
    """Bounded history of a whole run: when full, neighbours are averaged and each point covers twice the steps."""

    def __init__(self, max_points: int = HISTORY) -> None:
        self.max_points = max_points
        self.points: List[float] = []
        self.per_point = 1  # steps averaged into each point
        self._sum, self._n = 0.0, 0

    def append(self, value: float) -> None:
        """Add one step's value."""
        self._sum += value
        self._n += 1
        if self._n == self.per_point:
            self._close_point()

    def extend(self, values: List[float]) -> None:
        """Add steps' values in turn (append for each; each point's sum taken in C, in the same order)."""
        i, n = 0, len(values)
        while i < n:
            chunk = values[i : i + self.per_point - self._n]
            i += len(chunk)
            self._sum = reduce(add, chunk, self._sum)
            self._n += len(chunk)
            if self._n == self.per_point:
                self._close_point()

    def _close_point(self) -> None:
        """The pending steps become a point; at max_points, neighbours are averaged and each covers twice the steps."""
        self.points.append(self._sum / self._n)
        self._sum, self._n = 0.0, 0
        if len(self.points) >= self.max_points:
            self.points = [(a + b) / 2.0 for a, b in zip(self.points[::2], self.points[1::2])]
            self.per_point *= 2

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, index):
        return self.points[index]


class RankSteps:
    """Recent steady step times and batch sizes of one rank."""

    def __init__(self) -> None:
        self.step_ms: Deque[float] = deque(maxlen=RANK_WINDOW)
        self.sizes: Deque[int] = deque(maxlen=RANK_WINDOW)
        self.last_ms: Optional[float] = None

    def add(self, ms: float, size: Any, steady: bool) -> None:
        """Record one step; only steady ones enter the window."""
        self.last_ms = ms
        if steady:
            self.step_ms.append(ms)
            self.sizes.append(int(size) if type(size) in (int, float) else 0)

    @property
    def median_ms(self) -> Optional[float]:
        """Median of the recent steady steps (upper middle), else the last step seen."""
        return upper_median(self.step_ms) if self.step_ms else self.last_ms

    @property
    def images_per_s(self) -> Optional[float]:
        """Images over wall time of the recent steady steps."""
        total_ms = sum(self.step_ms)
        images = sum(self.sizes, 0)
        return 1000.0 * images / total_ms if total_ms > 0 and images else None


class StepSeries:
    """The main rank's steps, bounded: the loss trend, recent steady step times, compile and warm-up counts."""

    def __init__(self) -> None:
        self.loss = WholeRunHistory()  # the whole run's trend, not just the last steps
        self.step_ms: Deque[float] = deque(maxlen=HISTORY)  # steady steps only
        self.compile_ms: List[float] = []
        self.warmup_seen = 0
        self.profiled_seen = 0
        self.count = 0
        self.last: Dict[str, Any] = {}
        self.first_loss: Optional[float] = None
        self.last_loss: Optional[float] = None
        self.min_loss: Optional[float] = None
        self.steady_from: Optional[int] = None  # steps before the first steady one (compile and warm-up)

    def add(self, step: Dict[str, Any], phase: str) -> None:
        """Fold one main-rank step whose phase is known."""
        self.last = step
        self.add_values(step.get("loss"), step.get("step_ms"), phase)

    def add_floats(self, losses: List[float], times: List[float], phase: str) -> None:
        """Fold main-rank steps whose losses and times are all floats and share one phase (add_values in turn)."""
        n = len(losses)
        if not n:
            return
        self.count += n
        self.loss.extend(losses)
        if self.first_loss is None:
            self.first_loss = losses[0]
            self.min_loss = min(losses)
        else:
            so_far: List[float] = [] if self.min_loss is None else [self.min_loss]
            self.min_loss = min(so_far + losses)  # min keeps the first of equals, as `<` does
        self.last_loss = losses[-1]
        if phase not in ("compile", "recompile", "warmup", "profiled") and self.steady_from is None:
            self.steady_from = self.count - n
        if phase == "steady":
            self.step_ms.extend(times)
        elif phase in ("compile", "recompile"):
            room = COMPILE_KEPT - len(self.compile_ms)
            if room > 0:
                self.compile_ms.extend(times[:room])
        elif phase == "warmup":
            self.warmup_seen += n
        elif phase == "profiled":
            self.profiled_seen += n
        else:
            self.step_ms.extend(times)

    def add_values(self, loss: Any, ms: Any, phase: str) -> None:
        """Fold one main-rank step by its loss and step time as written (`last` is the caller's to set)."""
        self.count += 1
        if type(loss) in (float, int):
            loss = float(loss)
            self.loss.append(loss)
            if self.first_loss is None:
                self.first_loss = self.min_loss = loss
            elif loss < self.min_loss:
                self.min_loss = loss
            self.last_loss = loss
        if type(ms) not in (float, int):
            return
        if phase not in ("compile", "recompile", "warmup", "profiled") and self.steady_from is None:
            self.steady_from = self.count - 1
        ms = float(ms)
        if phase == "steady":
            self.step_ms.append(ms)
        elif phase in ("compile", "recompile"):
            if len(self.compile_ms) < COMPILE_KEPT:
                self.compile_ms.append(ms)
        elif phase == "warmup":
            self.warmup_seen += 1
        elif phase == "profiled":
            self.profiled_seen += 1  # slowed by the profiler: not a steady step
        else:
            self.step_ms.append(ms)
