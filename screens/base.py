"""What every workbench screen shares: the status bar, the footer and a bounded redraw."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from screens.widgets.status_bar import StatusBar


class WorkbenchScreen(Screen):
    """A mode screen that redraws from its view at a bounded rate, only when visible and changed."""

    view_name = ""
    redraws = 0  # counted for tests and benchmarks

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        """The screen's own widgets (override)."""
        return iter(())

    @property
    def view(self) -> Any:
        """This screen's model, owned by the app so it outlives the screen."""
        return self.app.views[self.view_name]

    @property
    def drawn_version(self) -> int:
        """The model version this screen last drew (-1 before its first draw); tests wait on it."""
        return getattr(self, "_rendered", -1)

    def on_mount(self) -> None:
        self._rendered = -1
        self._timer = self.set_interval(1.0 / self.app.refresh_hz, self.maybe_refresh)
        self.call_after_refresh(self.maybe_refresh)

    def on_screen_resume(self) -> None:
        self.maybe_refresh()

    def set_refresh_hz(self, hz: float) -> None:
        """Change the redraw rate (low-bandwidth mode)."""
        self._timer.stop()
        self._timer = self.set_interval(1.0 / hz, self.maybe_refresh)

    def maybe_refresh(self) -> None:
        """Redraw when this screen is the visible one and its view changed."""
        if self.app.screen is not self or not self.is_mounted:
            return
        self.query_one(StatusBar).refresh_from(self.app)
        if self.view.version == self._rendered:
            return
        self._rendered = self.view.version
        self.redraws += 1
        with self.app.batch_update():
            self.render_view(self.view)

    def render_view(self, view: Any) -> None:
        """Update the widgets from the view (override)."""
