"""The top line: product, session id, resolved device, running jobs."""

from __future__ import annotations

from typing import Any, List, Tuple

from textual.widgets import Static

from workbench.session.imported import imported_label, imported_summary

SEP = " │ "


def fit_parts(parts: List[Tuple[str, float]], width: int) -> str:
    """The parts joined in their order, leaving out the lowest-priority ones until the line fits `width`.

    The running count and the session id go last, so 80 columns never cut them.
    """
    kept = [(text, rank) for text, rank in parts if text]
    while len(kept) > 1 and len(SEP.join(text for text, _ in kept)) > width:
        kept.remove(min(kept, key=lambda part: part[1]))
    return SEP.join(text for text, _ in kept)


class StatusBar(Static):
    """Shows the session id, whether its events are still being read, and the device jobs will run on."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $primary-background; color: $text; padding: 0 1; }
    """

    def __init__(self, app: Any = None, title: str = "") -> None:
        super().__init__()
        if app is not None:  # drawn with the screen's first frame, not a frame after its mount
            self._text = self.line(app, title, app.size.width - 2)
            self.update(self._text, layout=False)

    def on_mount(self) -> None:
        self.refresh_from(self.app)

    def refresh_from(self, app: Any) -> None:
        """Rebuild the line from the app's state (only when it changed)."""
        text = self.line(app, getattr(app.screen, "title_text", ""), (self.size.width or app.size.width) - 2)
        if text != getattr(self, "_text", None):
            self._text = text
            self.update(text, layout=False)  # one fixed line: no reflow of the screen

    def line(self, app: Any, title: str, width: int) -> str:
        """The line for the app's state, the screen's title and `width` cells."""
        dev = app.device
        running = len(app.tracker.running()) if app.tracker else 0
        parts = [
            ("ms-workbench", 0),
            (title, 3),
            ("session %s%s" % (app.sid or "(new)", self._reading(app)), 4),
            (self._imported(app).strip(" ()"), 4.5),  # a read-only record says so before anything but the count
            ("device %s:%s (%s)" % (dev["resolved"], dev["id"], "auto" if dev["requested"] == "auto" else "set"), 2),
            ("%s running" % running, 5),
        ]
        if app.low_bandwidth:
            parts.append(("low-bandwidth", 1))
        return fit_parts(parts, width)

    @staticmethod
    def _reading(app: Any) -> str:
        """' (reading events 42 %)' while the session's event backlog is still being read, else ''."""
        share = app.tracker.reading() if app.tracker else None
        return "" if share is None else " (reading events %d %%)" % int(100 * share)

    def _imported(self, app: Any) -> str:
        """' (imported from HOST, read-only)' for an imported record's session, read once per session."""
        cached = getattr(self, "_imported_for", None)
        if cached is None or cached[0] != app.sid:
            label = ""
            if app.sid and getattr(app, "store", None) is not None:
                label = imported_label(imported_summary(app.store.root / app.sid)).replace("  imported", " (imported")
                label = label + ")" if label else ""
            self._imported_for = cached = (app.sid, label)
        return cached[1]
