"""The top line: product, session id, resolved device, running jobs."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from workbench.session.imported import imported_label, imported_summary


class StatusBar(Static):
    """Shows the session id, whether its events are still being read, and the device jobs will run on."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $primary-background; color: $text; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.refresh_from(self.app)

    def refresh_from(self, app: Any) -> None:
        """Rebuild the line from the app's state (only when it changed)."""
        dev = app.device
        running = len(app.tracker.running()) if app.tracker else 0
        mode = getattr(app.screen, "title_text", "")
        text = "ms-workbench │ %s │ session %s%s%s │ device %s:%s (%s) │ %s running%s" % (
            mode,
            app.sid or "(new)",
            self._imported(app),
            self._reading(app),
            dev["resolved"],
            dev["id"],
            "auto" if dev["requested"] == "auto" else "set",
            running,
            " │ low-bandwidth" if app.low_bandwidth else "",
        )
        if text != getattr(self, "_text", None):
            self._text = text
            self.update(text, layout=False)  # one fixed line: no reflow of the screen

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
