"""The floor of any Textual app on this machine: one Static and a footer, timed by the same marks as the workbench.

Run by bench/attach_probe.py (`baseline_paint`) in the same pseudo-terminal as `ms-workbench attach`:
it marks `first_paint` after its first refresh, as screens/app.py does, and `caught_up` at once
(it has nothing to read), so the two first paints are measured the same way in the same run.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer, Static

from workbench.system import timing


class MinimalApp(App):
    """A status line, a body and a footer."""

    def compose(self) -> ComposeResult:
        yield Static("ms-workbench \u2502 minimal app (baseline)")
        yield Static("nothing to show")
        yield Footer()

    def on_mount(self) -> None:
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        timing.mark("first_paint", mode="minimal", read_bytes=0)
        timing.mark("caught_up", events=0, read_bytes=0, mode="minimal")


if __name__ == "__main__":
    MinimalApp().run()
