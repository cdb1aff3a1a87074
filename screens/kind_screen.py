"""A plain screen for one job kind: status, a run key and the job's lines."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Log, Static

from screens.base import WorkbenchScreen


class KindScreen(WorkbenchScreen):
    """Shows the latest job of one kind as text lines; `r` runs it."""

    job_kind = ""
    title_text = ""
    BINDINGS = [Binding("r", "run_job", "Run")]

    def compose_body(self) -> ComposeResult:
        yield Static("", id="kind-status")
        yield Log(max_lines=500, id="kind-log")

    def action_run_job(self) -> None:
        """Start this screen's job with the app's config."""
        self.app.start_job(self.job_kind)

    def render_view(self, view: Any) -> None:
        self.query_one("#kind-status", Static).update(
            "%s: %s %s" % (self.title_text, view.jid or "no job yet — press r to run", view.status))
        log = self.query_one("#kind-log", Log)
        log.clear()
        log.write_lines(view.recent(200))
