"""A sparkline that costs one pre-built strip per row: block characters in one colour, no gradient."""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from rich.segment import Segment
from textual.strip import Strip
from textual.widget import Widget

BARS = " ▁▂▃▄▅▆▇█"


def buckets(values: Sequence[float], width: int, summary: Callable[[Sequence[float]], float] = max) -> List[float]:
    """At most `width` values: one per point when they fit, else each column summarises its share."""
    n = len(values)
    if n <= width:
        return list(values)
    return [summary(values[i * n // width : (i + 1) * n // width]) for i in range(width)]


CLIPPED = "▲"  # the top cell of a bar whose value lies above the chart's y-range


def bar_rows(values: Sequence[float], height: int, y_range: Optional[Tuple[float, float]] = None) -> List[str]:
    """Rows of block characters, top row first; the lowest value still shows one eighth of a cell.

    With a y-range, values above it are drawn full height with CLIPPED on top, values below it as the lowest bar.
    """
    if not values:
        return [""] * height
    lo, hi = y_range if y_range is not None else (min(values), max(values))
    span = hi - lo
    levels = 8 * height
    heights = [
        levels if span <= 0 else 1 + int(round((min(max(v, lo), hi) - lo) / span * (levels - 1))) for v in values
    ]
    rows = ["".join(BARS[max(0, min(8, h - 8 * row))] for h in heights) for row in reversed(range(height))]
    if y_range is not None and height:
        rows[0] = "".join(CLIPPED if v > hi else c for v, c in zip(values, rows[0]))
    return rows


class Spark(Widget):
    """Bar chart of a series; rebuilt only when its data or width changes, so a frame costs a copy of strips."""

    DEFAULT_CSS = "Spark { height: 2; color: $accent; }"

    def __init__(
        self, data: Optional[Sequence[float]] = None, summary: Callable[[Sequence[float]], float] = max, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self._data: List[float] = list(data or [])
        self.summary = summary
        self._strips: List[Strip] = []
        self._built_for: Optional[Tuple[int, int]] = None  # the size the strips were built for
        self._y_range: Optional[Tuple[float, float]] = None  # None: the data's own min and max

    @property
    def data(self) -> List[float]:
        """The series drawn."""
        return self._data

    @data.setter
    def data(self, values: Iterable[float]) -> None:
        values = list(values)
        if values != self._data:
            self._data = values
            self._built_for = None
            self.refresh()

    @property
    def y_range(self) -> Optional[Tuple[float, float]]:
        """The (low, high) the bars are drawn to; values above it are clipped and marked."""
        return self._y_range

    @y_range.setter
    def y_range(self, value: Optional[Tuple[float, float]]) -> None:
        if value != self._y_range:
            self._y_range = value
            self._built_for = None
            self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._built_for = None  # colours changed (theme, low-bandwidth mode)

    def _build(self) -> None:
        key = (self.size.width, self.size.height)
        if self._built_for == key:
            return
        width, height = key
        style = self.rich_style
        rows = bar_rows(buckets(self._data, width, self.summary), height, self._y_range)
        self._strips = [Strip([Segment(row.ljust(width), style)], width) for row in rows]
        self._built_for = key

    def render_line(self, y: int) -> Strip:
        self._build()
        return self._strips[y] if 0 <= y < len(self._strips) else Strip.blank(self.size.width, self.rich_style)
