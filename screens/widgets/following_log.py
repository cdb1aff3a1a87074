"""A Log that keeps its last line in view when its height changes while it showed its end."""

from __future__ import annotations

from typing import Any

from textual.widgets import Log


class FollowingLog(Log):
    """Textual's Log scrolls to its end when written; this one also does when it is resized while at its end."""

    _at_end = True

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Note whether the end is shown (a user scrolling up stops the following)."""
        super().watch_scroll_y(old_value, new_value)
        self._at_end = self.is_vertical_scroll_end

    def on_resize(self, event: Any) -> None:
        """Back to the end if it was shown before the size changed (a layout above it grew or shrank)."""
        if self.auto_scroll and self._at_end and not self.is_vertical_scroll_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
