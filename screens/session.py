"""The Session screen: this session's jobs live, a selected job's events and stderr tail."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Log, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from screens.base import WorkbenchScreen
from screens.next_steps import Step, steps_of
from screens.widgets.acceptance_table import AcceptanceTable
from screens.widgets.following_log import FollowingLog
from screens.widgets.textgrid import Cell
from screens.widgets.words import clip_words
from workbench.acceptance.about import about_session
from workbench.acceptance.verdict import evaluate
from workbench.config.layers import defaults
from workbench.system.regular import NotRegular, open_regular
from workbench.views.session import SessionView

STDERR_TAIL_BYTES = 4096
SHORT_BELOW = 32  # terminal rows under which the logs give their place to the jobs table until `l`
STATUS_CELLS = 30  # a long `failed: …` status is cut here in the table; the selected line shows it whole
EXPORT_PHASES = ("reading the session", "drawing the screens", "writing the manifest and archive", "done")
STATE_STYLE = {
    "ok": "green",
    "running": "cyan",
    "failed": "red",
    "crashed": "bold red",
    "timed-out": "red",
    "stalled": "red",
    "cancelled": "yellow",
    "damaged": "bold red",
}


def _dur(value: Optional[float]) -> str:
    if value is None:
        return "-"
    value = float(value)
    return "%d:%02d" % divmod(int(value), 60) if value >= 60 else "%.1f s" % value


def stderr_tail(path: str, max_bytes: int = STDERR_TAIL_BYTES) -> str:
    """The last lines of a job's stderr.log, at most `max_bytes` read; what it is when it is no regular file."""
    try:
        with open_regular(path) as fh:  # a FIFO or /dev/zero in its place is never read (no block, no endless read)
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - max_bytes))
            data = fh.read(max_bytes)
    except NotRegular as exc:
        return "(%s)" % exc
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return text if size <= max_bytes else text.split("\n", 1)[-1]


class SessionScreen(WorkbenchScreen):
    """Jobs of the session with status, duration and reason; details of the selected one."""

    view_name = "session"
    title_text = "Session"
    shows_candidate = True
    DEFAULT_CSS = """
    SessionScreen #next { height: auto; max-height: 5; border: round $accent; padding: 0 1; }
    SessionScreen #jobs { height: 2fr; min-height: 5; }
    SessionScreen #detail { height: 1fr; min-height: 6; }
    SessionScreen #events, SessionScreen #stderr { width: 1fr; border: round $primary; }
    SessionScreen #selected { height: 1; padding: 0 1; }
    SessionScreen #export-status { height: auto; padding: 0 1; display: none; }
    SessionScreen #export-bar { height: 1; padding: 0 1; display: none; }
    SessionScreen.-short #detail { display: none; }
    SessionScreen.-short #next { max-height: 4; }
    SessionScreen.-short.-logs #detail { display: block; height: 1fr; }
    SessionScreen.-short.-logs #jobs { height: 6; min-height: 6; }
    """
    # On a short terminal the jobs table takes the height and the two logs open on `l`, in its place.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_BELOW, "-tall")]
    BINDINGS = [
        Binding("enter", "open_job", "Open", show=False),
        Binding("x", "cancel_job", "Stop job"),
        Binding("e", "export_session", "Export"),
        Binding("l", "toggle_logs", "Logs"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.selected: Optional[str] = None
        self.steps: List[Step] = []  # the next steps the list shows, in its order
        self._shown = ("", 0)  # (jid, lines written) already in the events log
        self._stderr_size = -1
        self._cells: Dict[str, tuple] = {}  # jid -> cells last written to the jobs table
        self._export_target: Optional[Path] = None  # the record folder the running export writes

    def compose_body(self) -> ComposeResult:
        yield AcceptanceTable(shown=0, id="acceptance")  # the screen opens with the verdict, as `accept` computes it
        steps = OptionList(id="next")
        steps.border_title = "next: Enter runs the highlighted step"
        yield steps
        table: DataTable[Cell] = DataTable(id="jobs", cursor_type="row", zebra_stripes=True)
        table.add_columns("job", "status", "duration", "device", "events")
        yield table
        yield Static("", id="selected")
        yield ProgressBar(total=len(EXPORT_PHASES) - 1, show_eta=False, id="export-bar")
        yield Static("", id="export-status")
        with Horizontal(id="detail"):
            yield FollowingLog(max_lines=400, id="events")
            yield FollowingLog(max_lines=200, id="stderr")

    def action_toggle_logs(self) -> None:
        """Show or hide the selected job's events and stderr (on a tall terminal they are always shown)."""
        self.toggle_class("-logs")

    def on_mount(self) -> None:
        self.query_one("#events", Log).border_title = "events"
        self.query_one("#stderr", Log).border_title = "stderr (tail)"

    def render_view(self, view: SessionView) -> None:
        table = self.query_one("#jobs", DataTable)
        order = [row.jid for row in view.ordered()]
        if [jid for jid in order if jid in self._cells] != list(self._cells):
            table.clear()  # a job found out of order: rebuild so the table stays chronological
            self._cells = {}
        for row in view.ordered():
            style = STATE_STYLE.get(row.state, "")
            label = clip_words(row.state + (": " + row.reason if row.reason else ""), STATUS_CELLS)
            cells = (row.jid, Text(label, style=style), _dur(row.duration_s), row.device, str(row.events))
            before = self._cells.get(row.jid)
            if before is None:
                table.add_row(*cells, key=row.jid)
            else:
                for col, value, old in zip(table.columns, cells, before):
                    if value != old:  # an unchanged cell costs a repaint too
                        table.update_cell(row.jid, col, value)
            self._cells[row.jid] = cells
        if self.selected is None and view.rows:
            self.selected = view.ordered()[-1].jid
        self._show_selected(view)
        self._show_acceptance()

    def _show_acceptance(self) -> None:
        """Judge the session again only when a job's record changed since the last time."""
        model = self.wb_app.tracker.model
        key = tuple((jid, rec.version, rec.state) for jid, rec in sorted(model.records.items()))
        if key == getattr(self, "_acceptance_key", None):
            return
        self._acceptance_key = key
        cfg = self.wb_app.cfg.get("acceptance") or defaults()["acceptance"]
        about = about_session(self.wb_app.store.root / self.wb_app.sid) if self.wb_app.sid else None
        acc = evaluate(model, cfg, about=about) if model.records else None
        self.query_one("#acceptance", AcceptanceTable).show(acc)
        self._show_steps(steps_of(acc))

    def _show_steps(self, steps: List[Step]) -> None:
        """The runnable next steps (hidden when nothing is missing)."""
        self.steps = steps
        box = self.query_one("#next", OptionList)
        box.clear_options()
        for step in steps:
            recipe = self.wb_app.recipe_label(step.kind) if step.kind else ""
            box.add_option(Option("(%s) %s%s" % (step.layer, step.label, " — with " + recipe if recipe else "")))
        box.display = bool(steps)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a next step: run it (a screen's key there, or the job here)."""
        if event.option_list.id != "next" or not 0 <= event.option_index < len(self.steps):
            return
        step = self.steps[event.option_index]
        if step.mode and step.key:
            self.wb_app.press_on_screen(step.mode, step.key)
        elif step.kind:
            self.wb_app.start_job(step.kind, step.overrides)

    def _show_selected(self, view: SessionView) -> None:
        row = view.rows.get(self.selected or "")
        if row is None:
            self._selected_line("no jobs yet: start one from another screen, or `ms-workbench run`")
            return
        self._selected_line("%s — %s" % (row.jid, row.state + (": " + row.reason if row.reason else "")))
        log = self.query_one("#events", Log)
        jid, written = self._shown
        if jid != row.jid:
            log.clear()
            log.write_lines(list(row.lines)[-200:])
            self._stderr_size = -1
        elif row.written > written:  # append only what is new: cheap at high event rates
            log.write_lines(list(row.lines)[-min(row.written - written, 200) :])
        self._shown = (row.jid, row.written)
        job = self.wb_app.tracker.jobs.get(row.jid)
        if job is not None:
            path = str(job.dir / "stderr.log")
            size = os.path.getsize(path) if os.path.exists(path) else 0
            if size != self._stderr_size:
                self._stderr_size = size
                err = self.query_one("#stderr", Log)
                err.clear()
                err.write(stderr_tail(path) or "(empty)")

    def _selected_line(self, text: str) -> None:
        """The one-line header of the selected job; written only when it changed, without a reflow."""
        if text != getattr(self, "_selected_text", None):
            self._selected_text = text
            self.query_one("#selected", Static).update(text, layout=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value if event.row_key else None
        if key and key != self.selected:
            self.selected = key
            self._show_selected(self.view)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a job: open its screen, following that job there."""
        key = event.row_key.value if event.row_key else None
        if key:
            self.selected = key
            self.action_open_job()

    def action_open_job(self) -> None:
        """Open the selected job's screen on that job."""
        if self.selected and self.wb_app.follow_job(self.selected) is None:
            self.app.notify("no screen shows %s jobs: its events are below" % self.selected.split("-")[0])

    def action_cancel_job(self) -> None:
        """Stop the selected job, after a yes (a training run saves its state; r on Training resumes it)."""
        jid = self.selected
        job = self.wb_app.tracker.jobs.get(jid or "")
        if jid is None or job is None or job.status.state != "running":
            self.app.notify("%s is not running" % (jid or "no job"), severity="warning")
            return
        from screens.dialogs import ConfirmScreen

        def go(confirmed: Optional[bool]) -> None:
            if confirmed:
                self.wb_app.cancel_job(jid)

        more = " It saves its state; r on the Training screen resumes it." if job.kind == "train" else ""
        self.app.push_screen(ConfirmScreen("Stop %s?%s" % (jid, more), yes="Stop job"), go)

    def action_export_session(self) -> None:
        """Write the session record (report, metrics, manifest, archive, screenshots) in a worker thread."""
        if self.wb_app.sid is None:
            self.app.notify("nothing to export yet", severity="warning")
            return
        try:
            from screens.screenshots import shooter
            from workbench.record.write import EXPORT_DIR, export_session
        except ImportError:
            self.app.notify("session export is not available in this build", severity="error")
            return
        store, sid = self.wb_app.store, self.wb_app.sid
        self._export_target = store.root / sid / EXPORT_DIR
        self._export_phase(0)
        draw = shooter(store.root, sid)

        def screenshots(folder, folded):  # the record calls this between reading the session and packing it
            self.app.call_from_thread(self._export_phase, 1)
            try:
                return draw(folder, folded)
            finally:
                self.app.call_from_thread(self._export_phase, 2)

        def export() -> Path:
            try:
                return export_session(store, sid, None, screenshots=screenshots)
            finally:
                draw.close()

        # exit_on_error=False: a failing export is shown on this screen and the TUI stays up.
        self.run_worker(
            export,
            thread=True,
            name="export-session",
            group="export",
            exclusive=True,
            exit_on_error=False,
        )

    def _export_phase(self, n: int) -> None:
        """Show the export's progress: a bar and the phase it is in."""
        bar = self.query_one("#export-bar", ProgressBar)
        bar.display = True
        bar.update(progress=n)
        self._export_line(
            "session record (%d/%d): %s ... → %s"
            % (n + 1, len(EXPORT_PHASES) - 1, EXPORT_PHASES[n], self._export_target)
        )

    def on_worker_state_changed(self, event) -> None:
        """Report the end of a session export (it runs in a thread: screenshots take seconds)."""
        from textual.worker import WorkerState

        if event.worker.name != "export-session":
            return
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            self.query_one("#export-bar", ProgressBar).display = False
        if event.state == WorkerState.SUCCESS:
            self._export_line("session record written to %s" % event.worker.result, "green")
            self.app.notify("session record written to %s" % event.worker.result, timeout=10)
        elif event.state == WorkerState.ERROR:
            text = export_failure(event.worker.error, self._export_target)
            self._export_line(text, "red")
            self.app.notify(text, severity="error", timeout=10)

    def _export_line(self, text: str, style: str = "") -> None:
        """The export's one status line under the jobs table, hidden until the first export."""
        line = self.query_one("#export-status", Static)
        line.update(Text(text, style=style))
        line.display = True


def export_failure(error: BaseException, target: Optional[Path]) -> str:
    """What failed and where: the error, the file it names (if any) and the record folder being written."""
    where = getattr(error, "filename", None)
    text = "session export failed: %s: %s" % (type(error).__name__, error)
    if target is not None and str(where or "") != str(target):
        text += " (writing the record to %s)" % target
    return text
