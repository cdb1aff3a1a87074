"""The Export screen: artefacts with full SHA-256, load checks per format and batch size, the reference package."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, DataTable, Label, Select, Static, TextArea

from screens.base import WorkbenchScreen
from screens.dialogs import ConfirmScreen
from screens.form import initial_weights
from screens.widgets.evidence import badge
from screens.widgets.textgrid import Cell
from screens.widgets.words import clip_words
from workbench.system.atomic import read_json
from workbench.views.export import FRESH, ExportView, default_choice, export_overrides, train_choices

DETAIL_CELLS = 58  # most characters of a check's detail in the table; the full text shows below it
OTHER_CELLS = 47  # the other columns, their padding and the scroll bar: the detail takes the rest of the width
PICKER_EVERY_S = 1.0  # how often the list of training jobs is compared with the tracker's


def diff_text(value: Any) -> str:
    """A max |diff| cell: 0, 3.58e-07, or — when there is no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return "0" if value == 0 else "%.3g" % value


def size_text(n: Any) -> str:
    """Bytes as the exact count and a rounded unit, for the artefacts table."""
    if not isinstance(n, int):
        return "—"
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return "%d (%.1f %s)" % (n, n / float(scale), unit)
    return "%d B" % n


def batch_label(ev: Dict[str, Any]) -> str:
    """What a load check covers: its batch size, or the step (export, load) for format-wide checks."""
    if isinstance(ev.get("batch_size"), int) and str(ev.get("id", "")).startswith("mindir-b"):
        return "b%d" % ev["batch_size"]
    if ev.get("format") == "ckpt":
        return "N=%s" % ev.get("batch_size") if ev.get("batch_size") else "reload"
    if ev.get("format") == "lite":
        backend = str(ev.get("backend") or "")
        return "target %s" % backend if ev.get("id") == "lite-target" else backend
    return str(ev.get("id", "")).split("-", 1)[-1]


def reference_panel(ref: Optional[Dict[str, Any]]) -> Table:
    """The reference package: samples, classes, confused pairs, tolerance, preprocessing."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    if not ref:
        grid.add_row("reference", Text("not written yet", style="dim"))
        return grid
    grid.add_row("reference", "%s/  inputs.npy · logits.npy · reference.json" % ref.get("dir", "artifacts/reference"))
    per_class = ref.get("samples_per_class")
    grid.add_row(
        "samples",
        "%s covering %s/10 classes%s"
        % (ref.get("samples"), ref.get("classes_covered"), (" (%s per class)" % per_class) if per_class else ""),
    )
    pairs = ref.get("confused_pairs") or []
    if pairs:
        text = Text()
        for i, pair in enumerate(pairs):
            if i:
                text.append(" · ")
            label = "%s→%s (%s)" % (
                pair.get("true_class", pair.get("true")),
                pair.get("pred_class", pair.get("pred")),
                pair.get("count"),
            )
            text.append(label, style="" if pair.get("row") is not None else "dim strike")
        grid.add_row("confused", text)
    else:
        grid.add_row("confused", Text("no confusion matrix (fresh net or no training metrics)", style="dim"))
    tol = ref.get("tolerance") or {}
    if tol:
        grid.add_row("tolerance", "atol %g, rtol %g: %s" % (tol["atol"], tol["rtol"], tol.get("rule")))
    if ref.get("preprocessing"):
        grid.add_row("input", str(ref["preprocessing"]))
    return grid


class ExportScreen(WorkbenchScreen):
    """Run an export from a training job and see what loads where, with which hashes and differences."""

    view_name = "export"
    title_text = "Export"
    shows_candidate = True
    CSS_PATH = "export.tcss"
    BINDINGS = [Binding("r,ctrl+s", "run_export", "Run export"), Binding("c", "copy_hashes", "Copy hashes")]

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="ex-body"):
            with Horizontal(id="ex-run"):
                yield Label("from", id="ex-from-label")
                yield Select(self._choices(), value=self._default(), allow_blank=False, id="ex-from")
                yield Button("Export (r)", id="ex-start", variant="success")
            yield Static("", id="ex-runline")
            yield Static(
                "Load checks — fresh processes, compared with the export job's own outputs", classes="ex-title"
            )
            table: DataTable[Cell] = DataTable(id="ex-checks", cursor_type="row", zebra_stripes=True)
            table.add_columns("format", "what", "verdict", "max |diff|", "detail")
            yield table
            yield Static("", id="ex-detail")
            yield Static("Artefacts", classes="ex-title")
            arts: DataTable[Cell] = DataTable(id="ex-artifacts", cursor_type="row", zebra_stripes=True)
            arts.add_columns("kind", "path", "bytes")
            yield arts
            yield Static(
                "SHA-256, one per line (sha256sum -c format, paths from the job folder; c copies)", classes="ex-title"
            )
            hashes = TextArea(
                "", read_only=True, soft_wrap=False, show_cursor=False, id="ex-hashes", highlight_cursor_line=False
            )
            hashes.cursor_blink = False
            yield hashes
            yield Static("", id="ex-reference")
            yield Static("", id="ex-other")

    # ----- the run picker --------------------------------------------------------------

    def _train_jobs(self) -> List[Any]:
        return [job for job in self.wb_app.tracker.ordered() if job.kind == "train"]

    def _candidate_run(self) -> Optional[str]:
        cand = self.wb_app.candidate()
        return cand.run if cand is not None else None

    def _choices(self) -> List[Tuple[str, str]]:
        return train_choices(self._train_jobs(), self._candidate_run())

    def _default(self) -> str:
        return default_choice(self._train_jobs(), self._candidate_run())

    def shown_run(self) -> Optional[str]:
        value = self.query_one("#ex-from", Select).value
        return value if isinstance(value, str) and value != FRESH else None

    def on_mount(self) -> None:
        self._picked = False  # once someone picks, a new train job no longer moves the selection
        self._picker_key: Tuple = ()
        self.set_interval(PICKER_EVERY_S, self.refresh_picker)
        self.refresh_picker()

    async def refold(self) -> None:
        await super().refold()
        self._picked = False
        self.refresh_picker()

    def refresh_picker(self) -> None:
        """Offer the session's training jobs; keep the pick, else follow the latest ok one."""
        jobs = self._train_jobs()
        key = tuple((job.jid, job.status.state) for job in jobs) + (self._candidate_run(),)
        if key == self._picker_key:
            return
        self._picker_key = key
        select = self.query_one("#ex-from", Select)
        current = select.value
        choices = train_choices(jobs, self._candidate_run())
        values = [value for _, value in choices]
        with self.prevent(Select.Changed):
            select.set_options(choices)
            select.value = current if self._picked and current in values else self._default()
        self.invalidate()  # the idle status line names the source

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "ex-from":
            self._picked = True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ex-start":
            self.action_run_export()

    def action_run_export(self) -> None:
        """Start an export from the picked training job; untrained weights only after an explicit yes."""
        value = self.query_one("#ex-from", Select).value
        choice = value if isinstance(value, str) else None

        def go(confirmed: Optional[bool] = True) -> None:
            if confirmed:
                self.wb_app.start_job("export", export_overrides(choice, initial_weights("export.from")))

        if choice in (None, FRESH):
            self.app.push_screen(
                ConfirmScreen(
                    "Export a freshly initialised, UNTRAINED net? Its answers are random; pick a training job "
                    "in 'from' to export trained weights.",
                    yes="Export untrained",
                ),
                go,
            )
            return
        go()

    def job_source(self, view: ExportView) -> str:
        """What the followed export job exports: its started event's source, else its config's export.from."""
        if "source" in view.started:
            src = view.started.get("source")
        else:
            job = self.wb_app.tracker.jobs.get(view.jid or "")
            try:
                src = ((read_json(job.dir / "config.json").get("export") or {}).get("from")) if job else None
            except (OSError, ValueError):
                src = None
        return str(src) if src else "a fresh net (untrained)"

    def action_copy_hashes(self) -> None:
        """Put the `sha256  path` lines on the clipboard (OSC 52 works over SSH in most terminals)."""
        lines = self.view.hash_lines()
        if not lines:
            self.app.notify("no artefacts yet", severity="warning")
            return
        self.app.copy_to_clipboard("\n".join(lines) + "\n")
        self.app.notify("copied %d SHA-256 line(s)" % len(lines))

    # ----- drawing ---------------------------------------------------------------------

    def render_view(self, view: ExportView) -> None:
        self.query_one("#ex-runline", Static).update(self._runline(view))
        self._checks_table(view)
        self._artifacts(view)
        self.query_one("#ex-reference", Static).update(reference_panel(view.reference()))
        self.query_one("#ex-other", Static).update(self._other_checks(view))
        self._show_detail(view)

    def _runline(self, view: ExportView) -> Text:
        if not view.jid:
            value = self.query_one("#ex-from", Select).value
            what = "a fresh net (untrained)" if value in (None, FRESH) or not isinstance(value, str) else value
            return Text("no export yet — r exports from %s (pick another in 'from')" % what, style="dim")
        line = Text()
        line.append(view.jid + " ", style="bold")
        line.append_text(badge(view.state or "running"))
        source = (view.result.get("source") or {}) or {}
        line.append("  from %s" % self.job_source(view))
        if source.get("epoch") is not None:
            line.append(" (epoch %s)" % source.get("epoch"))
        dev = view.started.get("device") or {}
        if dev:
            line.append("  on %s %s" % (dev.get("resolved", "?"), view.started.get("mode", "")))
        prog = view.progress
        if prog and view.state in ("", "running"):
            line.append("  %s %s/%s" % (prog.get("phase", ""), prog.get("done"), prog.get("total")))
        counts = view.counts()
        if counts:
            line.append("  ")
            for status in ("observed-pass", "observed-fail", "blocked", "not-run"):
                if counts.get(status):
                    line.append_text(badge(status))
                    line.append(" %d  " % counts[status])
        if view.error:
            line.append("\n%s: %s" % (view.error.get("type"), str(view.error.get("message"))[:200]), style="red")
        return line

    def _detail_cells(self) -> int:
        """The detail column's width: what the terminal leaves, so the table never scrolls sideways."""
        return max(16, min(DETAIL_CELLS, (self.app.size.width or 80) - OTHER_CELLS))

    def on_resize(self, event: events.Resize) -> None:
        if self.is_mounted:
            self._checks_table(self.view)

    def _checks_table(self, view: ExportView) -> None:
        table = self.query_one("#ex-checks", DataTable)
        rows = view.load_checks()
        keys = [str(k.value) for k in table.rows]
        wanted = ["%s:%s" % (view.jid, ev.get("id")) for ev in rows]
        if keys != wanted[: len(keys)]:
            table.clear()
            keys = []
        for key, ev in zip(wanted, rows):
            cells = (
                str(ev.get("format")),
                batch_label(ev),
                badge(str(ev.get("status"))),
                diff_text(ev.get("max_abs")),
                clip_words(str(ev.get("detail") or ""), self._detail_cells()),
            )
            if key in keys:
                for column, cell in zip(table.ordered_columns, cells):
                    table.update_cell(key, column.key, cell)
            else:
                table.add_row(*cells, key=key)

    def _artifacts(self, view: ExportView) -> None:
        table = self.query_one("#ex-artifacts", DataTable)
        rows = view.artifact_rows()
        if table.row_count != len(rows) or (rows and str(table.get_row_at(0)[1]) != rows[0]["path"]):
            table.clear()
            for art in rows:
                table.add_row(str(art["kind"]), str(art["path"]), size_text(art["bytes"]))
        text = "\n".join(view.hash_lines())
        area = self.query_one("#ex-hashes", TextArea)
        if area.text != text:
            area.load_text(text)

    def _other_checks(self, view: ExportView) -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        for ev in view.other_checks():
            grid.add_row(
                badge(str(ev.get("status"))), str(ev.get("title") or ev.get("id")), str(ev.get("detail") or "")
            )
        return grid

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "ex-checks":
            self._show_detail(self.view)

    def _show_detail(self, view: ExportView) -> None:
        """The full detail and hint of the highlighted load check."""
        table = self.query_one("#ex-checks", DataTable)
        rows = view.load_checks()
        if not rows or table.row_count == 0:
            self.query_one("#ex-detail", Static).update("")
            return
        ev = rows[min(max(table.cursor_row, 0), len(rows) - 1)]
        text = Text()
        text.append("%s: " % (ev.get("title") or ev.get("id")), style="bold")
        text.append(str(ev.get("detail") or ""))
        if ev.get("hint"):
            text.append("\nhint: " + str(ev["hint"]), style="italic")
        self.query_one("#ex-detail", Static).update(text)
