"""The Alignment screen: pick two paths and tolerances, run, and read where the numbers diverge."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, DataTable, Input, Select, Static

from screens.base import WorkbenchScreen
from screens.form import check_fields, initial_weights
from screens.widgets.evidence import badge
from screens.widgets.textgrid import Cell
from screens.widgets.words import Clipped
from workbench.config.layers import PRECISIONS, TARGETS
from workbench.data.fashion import CLASS_NAMES
from workbench.views.alignment import (
    ROLE,
    SIDES,
    AlignmentView,
    dtype_text,
    formula_lines,
    hist_rows,
    num,
    percent,
    shape_text,
)
from workbench.views.export import FRESH, default_choice, train_choices

MODES = ("pynative", "graph")
# Presets cycled by `p`: the comparisons the course asks for, in the order it asks for them.
PRESETS = (
    ("pynative vs graph", ("CPU", "pynative", "fp32"), ("CPU", "graph", "fp32")),
    ("fp32 vs amp-O2", ("CPU", "graph", "fp32"), ("CPU", "graph", "amp-O2")),
    ("fp32 vs fp16", ("CPU", "graph", "fp32"), ("CPU", "graph", "fp16")),
    ("CPU vs Ascend", ("CPU", "graph", "fp32"), ("Ascend", "graph", "fp32")),
)
FIELDS = ("target", "mode", "precision")
COLUMNS = ("#", "tensor", "shape", "max abs", "max rel", "mismatch", "result")


def _tolerance_value(raw: str) -> Any:
    """An Input's text as a tolerance: blank = per-dtype default (None), else a float or the raw text."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        return raw  # the config check names the key and the bad value


def compact_message(message: str) -> str:
    """MindSpore's message without its ruler lines and blank lines (every other line kept)."""
    lines = [line for line in message.splitlines() if line.strip() and set(line.strip()) != {"-"}]
    return "\n".join(lines)


def side_panel(view: AlignmentView, side: str) -> Text:
    """One path: its label and evidence, then MindSpore's read-back or the reason it did not run."""
    check = view.sides.get(side) or {}
    evidence = check.get("evidence") or {}
    text = Text()
    text.append("%-10s " % ROLE[side], style="bold")
    text.append(view.label(side) + "  ", style="bold")
    text.append_text(badge(check.get("status") or "not-run") if check else Text("waiting", style="dim"))
    if not check:
        return text
    if check.get("status") != "observed-pass":
        text.append(
            "\n" + compact_message(str(check.get("detail") or "")),
            style="red" if check.get("status") != "not-run" else "dim",
        )
        if check.get("hint"):
            text.append("\nhint: " + str(check["hint"]), style="dim")
        return text
    eff = evidence.get("effective") or {}
    settings = evidence.get("settings") or {}
    precision = evidence.get("precision") or {}
    state = settings.get("state") or {}
    text.append("\nMindSpore reports %s:%s, %s mode" % (eff.get("target"), eff.get("device_id"), eff.get("mode")))
    text.append("\n%s: %s" % (precision.get("precision"), str(precision.get("how")).replace("mindspore.", "")))
    text.append(
        "\nforward %s, loss+grads %s · pid %s · MindSpore %s"
        % (state.get("forward"), state.get("loss_grads"), evidence.get("pid"), evidence.get("mindspore"))
    )
    tap = evidence.get("tap_check") or {}
    if tap.get("max_abs") not in (None, 0, 0.0):
        text.append("\nlayer tap differs from the logits by %s" % num(tap.get("max_abs")), style="yellow")
    return text


SHORT_TITLES = {
    "match.preprocessing": "scaling",
    "match.input-range": "input range",
    "match.class-order": "classes",
    "match.loss-reduction": "loss reduction",
    "match.state": "state",
    "match.seed": "seed",
    "match.inputs": "batch",
    "match.init": "init weights",
    "match.model": "model",
    "match.optimizer": "optimizer",
}


def matched_table(view: AlignmentView, columns: int = 3) -> Table:
    """The settings that must match, checked before any diff: a compact grid, mismatches spelled out."""
    table = Table.grid(padding=(0, 2), expand=True)
    for _ in range(columns):
        table.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    cells: List[Any] = []
    for check in view.matched:
        passed = check.get("status") == "observed-pass"
        detail = str(check.get("detail") or "")
        if passed and detail.startswith("both "):
            detail = detail[len("both ") :]
        elif passed and check.get("id") == "match.input-range":
            detail = "%s on both" % ((check.get("evidence") or {}).get("ref"),)
        cell = badge(str(check.get("status")))
        cell.append(" %s " % SHORT_TITLES.get(str(check.get("id")), check.get("title")), style="bold")
        cell.append(detail, style="" if passed else "red")
        cells.append(Clipped(cell))
    for i in range(0, len(cells), columns):
        row = cells[i : i + columns]
        table.add_row(*(row + [Text("")] * (columns - len(row))))
    return table


def detail_panel(view: AlignmentView, diff: Optional[Dict[str, Any]]) -> Text:
    """The selected tensor: dtypes and tolerances, the rule with numbers, statistics and a |diff| histogram."""
    if diff is None:
        return Text("select a tensor", style="dim")
    text = Text()
    text.append("%s  " % diff.get("name"), style="bold")
    text.append_text(badge("observed-pass" if diff.get("passed") else "observed-fail"))
    text.append("\n%s · %s" % (shape_text(diff.get("shape")), dtype_text(diff.get("dtype"))))
    if diff.get("stored_dtype"):
        text.append(" (computed; stored %s)" % dtype_text(diff["stored_dtype"]), style="dim")
    text.append("\natol %s · rtol %s" % (num(diff.get("atol")), num(diff.get("rtol"))))
    for line in formula_lines(diff):
        style = "bold red" if line.endswith("OUTSIDE") else ("green" if line.endswith("within") else "")
        text.append("\n" + line, style=style)
    text.append("\nmax abs %s · max rel %s" % (num(diff.get("max_abs")), num(diff.get("max_rel"))))
    text.append("\nmean abs %s · cosine %s" % (num(diff.get("mean_abs")), num(diff.get("cosine"), 7)))
    size = diff.get("size")
    ratio = diff.get("mismatch_ratio")
    outside = int(round(ratio * size)) if isinstance(ratio, (int, float)) and isinstance(size, int) else None
    text.append(
        "\nmismatch %s (%s of %s elements)"
        % (percent(ratio), "—" if outside is None else outside, size if size is not None else "—")
    )
    nonfinite = [(k, diff.get(k)) for k in ("nan_ref", "nan_cand", "inf_ref", "inf_cand") if diff.get(k)]
    if nonfinite:
        text.append("\n" + ", ".join("%s %s" % kv for kv in nonfinite), style="bold red")
    rows = hist_rows(diff.get("hist"), width=16)
    if rows:
        text.append("\n|diff| histogram", style="bold")
        for label, count, bar in rows:
            text.append("\n%-17s %5d " % (label, count))
            text.append(bar, style="cyan")
    if diff.get("reason") and not diff.get("worst"):
        text.append("\n" + str(diff["reason"]), style="red")
    return text


def flips_text(view: AlignmentView) -> Text:
    """The samples whose predicted class differs between the two paths."""
    flips = view.flips
    if flips is None:
        return Text("")
    text = Text()
    text.append("class flips: ", style="bold")
    text.append(
        "%d of %d samples change their predicted class" % (flips.get("count", 0), flips.get("n", 0)),
        style="bold red" if flips.get("count") else "green",
    )
    for pair in (flips.get("pairs") or [])[:12]:
        text.append(
            "\n  sample %s: %s → %s" % (pair.get("index"), _cls(pair.get("ref_class")), _cls(pair.get("cand_class")))
        )
        if "label" in pair:
            text.append("  (label %s)" % _cls(pair.get("label")), style="dim")
    if len(flips.get("pairs") or []) > 12:
        text.append("\n  … %d more" % (len(flips["pairs"]) - 12), style="dim")
    return text


def _cls(value: Any) -> str:
    if isinstance(value, int) and 0 <= value < len(CLASS_NAMES):
        return "%d %s" % (value, CLASS_NAMES[value])
    return str(value)


class AlignmentScreen(WorkbenchScreen):
    """Reference vs candidate path: settings side by side, tensors in forward order, the first divergence."""

    view_name = "alignment"
    title_text = "Alignment"
    shows_candidate = True
    CSS_PATH = "alignment.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("r,ctrl+s", "run_align", "Run"),
        Binding("p", "preset", "Preset paths"),
        Binding("f", "first_failure", "First failure"),
    ]

    def compose_body(self) -> ComposeResult:
        align = self.wb_app.cfg["align"]
        self._preset = -1
        with VerticalScroll(id="body"):
            with Horizontal(classes="pathrow", id="form-labels"):  # what each field of the two rows is
                yield Static("path", classes="rowlabel")
                for name in ("target", "mode", "precision"):
                    yield Static(name, classes="collabel")
                yield Static("tolerance", classes="tolhead")
            for side, label, tol in (("ref", "reference", "atol"), ("cand", "candidate", "rtol")):
                path = align[ROLE[side]]
                with Horizontal(classes="pathrow"):
                    yield Static(label, classes="rowlabel")
                    yield Select(
                        [(t, t) for t in TARGETS],
                        value=path["target"],
                        allow_blank=False,
                        id="%s-target" % side,
                        compact=True,
                    )
                    yield Select(
                        [(m, m) for m in MODES],
                        value=path["mode"],
                        allow_blank=False,
                        id="%s-mode" % side,
                        compact=True,
                    )
                    yield Select(
                        [(p, p) for p in PRECISIONS],
                        value=path["precision"],
                        allow_blank=False,
                        id="%s-precision" % side,
                        compact=True,
                    )
                    yield Static(tol, classes="tollabel")
                    value = align[tol]
                    yield Input("" if value is None else str(value), placeholder="per dtype", id=tol, compact=True)
                    if side == "cand":
                        yield Button("Run", id="run", variant="success", compact=True)
            with Horizontal(classes="pathrow", id="weights-row"):
                yield Static("weights", classes="rowlabel")
                yield Select(
                    train_choices(self._train_jobs(), self._candidate_run()),
                    value=default_choice(self._train_jobs(), self._candidate_run()),
                    allow_blank=False,
                    id="al-weights",
                    compact=True,
                )
            yield Static("", id="runline")
            with Horizontal(id="paths"):
                yield Static("", id="path-ref", classes="path")
                yield Static("", id="path-cand", classes="path")
            yield Static("", id="matched")
            yield Static("", id="divergence")
            with Horizontal(id="compare"):
                table: DataTable[Cell] = DataTable(id="tensors", cursor_type="row", zebra_stripes=True)
                table.add_columns(*COLUMNS)
                yield table
                yield Static("", id="detail")
            yield Static("", id="flips")

    def _train_jobs(self) -> List[Any]:
        return [job for job in self.wb_app.tracker.ordered() if job.kind == "train"]

    def _candidate_run(self) -> Optional[str]:
        cand = self.wb_app.candidate()
        return cand.run if cand is not None else None

    def on_mount(self) -> None:
        self._weights_picked = False  # once someone picks, a new run no longer moves the selection
        self._weights_key: tuple = ()
        self.set_interval(1.0, self.refresh_weights)
        self.call_after_refresh(self.refresh_weights)  # a Select takes options once its overlay is mounted

    async def refold(self) -> None:
        await super().refold()
        self._weights_picked = False
        self.refresh_weights()

    def refresh_weights(self) -> None:
        """Offer the runs with weights (the candidate's first by default) and initial weights as an explicit choice."""
        jobs, cand = self._train_jobs(), self._candidate_run()
        key = tuple((job.jid, job.status.state) for job in jobs) + (cand,)
        select = self.query_one("#al-weights", Select)
        if key == self._weights_key or not select.query("SelectOverlay"):
            return  # unchanged, or the field is not ready for options yet (the next tick tries again)
        self._weights_key = key
        current = select.value
        choices = train_choices(jobs, cand)
        with self.prevent(Select.Changed):
            select.set_options(choices)
            keep = self._weights_picked and current in [v for _, v in choices]
            select.value = current if keep else default_choice(jobs, cand)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "al-weights":
            self._weights_picked = True

    def shown_run(self) -> Optional[str]:
        value = self.query_one("#al-weights", Select).value
        return value if isinstance(value, str) and value != FRESH else None

    def weights_from(self) -> Optional[str]:
        """align.weights_from as the weights field says: a run, or initial weights named as the config names them."""
        value = self.query_one("#al-weights", Select).value
        if not isinstance(value, str) or value == FRESH:
            return initial_weights("align.weights_from")
        return value

    def form_overrides(self) -> Dict[str, Any]:
        """The two paths, the tolerances and the weights as config overrides."""
        align: Dict[str, Any] = {"weights_from": self.weights_from()}
        for side in SIDES:
            align[ROLE[side]] = {f: self.query_one("#%s-%s" % (side, f), Select).value for f in FIELDS}
        for tol in ("atol", "rtol"):
            align[tol] = _tolerance_value(self.query_one("#" + tol, Input).value)
        return {"align": align}

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run":
            self.action_run_align()

    def action_run_align(self) -> None:
        """Check the tolerances with the config's rules, then start an align job with the form."""
        align = self.form_overrides()["align"]
        problems = check_fields([(tol, "align." + tol, align[tol]) for tol in ("atol", "rtol")])
        if problems:
            line = self.query_one("#runline", Static)
            line.update(Text("cannot run: " + "; ".join(problems), style="bold red"))
            self.invalidate()  # the next model change redraws the run line
            return
        self.wb_app.start_job("align", {"align": align})
        self.set_focus(None)  # the form was sent: one-letter keys act again, a later q quits instead of typing

    def action_preset(self) -> None:
        """Fill the form with the next preset pair of paths."""
        self._preset = (self._preset + 1) % len(PRESETS)
        name, ref, cand = PRESETS[self._preset]
        for side, values in (("ref", ref), ("cand", cand)):
            for field, value in zip(FIELDS, values):
                self.query_one("#%s-%s" % (side, field), Select).value = value
        self.app.notify("paths: %s" % name)

    def action_first_failure(self) -> None:
        """Move the cursor to the first failing tensor."""
        first = self.view.first_failure
        if first is not None:
            self.query_one("#tensors", DataTable).move_cursor(row=first)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self.view.select(str(event.row_key.value).split(":", 1)[1])

    def render_view(self, view: AlignmentView) -> None:
        self.query_one("#runline", Static).update(self._runline(view))
        for side in SIDES:
            self.query_one("#path-" + side, Static).update(side_panel(view, side))
        columns = 3 if self.size.width >= 110 else 2
        self.query_one("#matched", Static).update(matched_table(view, columns) if view.matched else "")
        self.query_one("#divergence", Static).update(self._divergence(view))
        self._tensors(view)
        self.query_one("#compare").display = bool(view.diffs) or view.state == "running"
        if view.selected is None or view.diff(view.selected) is None:
            view.selected = view.default_selection()
        self.query_one("#detail", Static).update(detail_panel(view, view.diff(view.selected)))
        self.query_one("#flips", Static).update(flips_text(view))

    def _runline(self, view: AlignmentView) -> Text:
        if not view.jid:
            return Text("no alignment yet — pick the two paths (p cycles presets) and press r", style="dim")
        line = Text()
        line.append(view.jid + "  ", style="bold")
        line.append_text(badge(view.state or "running"))
        if view.verdict:
            line.append("  verdict ")
            line.append_text(badge(view.verdict))
        counts = view.result.get("counts") or {}
        if counts.get("tensors"):
            line.append("  %d of %d tensors within tolerance" % (counts.get("passed", 0), counts["tensors"]))
        tol = view.result.get("tolerances") or {}
        if view.result:
            if tol.get("atol") is None and tol.get("rtol") is None:
                line.append("  tolerances per dtype (torch.testing defaults)", style="dim")
            else:
                line.append(
                    "  atol %s rtol %s"
                    % tuple(num(tol[k]) if tol.get(k) is not None else "per dtype" for k in ("atol", "rtol")),
                    style="dim",
                )
        prog = view.progress
        if prog and view.state == "running":
            line.append("  %s %s/%s" % (prog.get("phase", ""), prog.get("done"), prog.get("total")))
        if view.error and view.error.get("type") not in ("Blocked", "SideFailed"):  # those show in a path panel
            line.append(
                "  %s: %s" % (view.error.get("type"), str(view.error.get("message")).splitlines()[0][:90]), style="red"
            )
        return line

    def _divergence(self, view: AlignmentView) -> Text:
        first = view.first_failure
        if first is not None:
            diff = view.diffs[first]
            text = Text("▶ divergence starts here: ", style="bold red")
            text.append("%s (#%d)" % (diff.get("name"), first), style="bold")
            ratio, size = diff.get("mismatch_ratio"), diff.get("size")
            if isinstance(ratio, (int, float)) and isinstance(size, int):
                text.append(
                    " — %d of %d elements outside atol %s + rtol %s·|ref|"
                    % (int(round(ratio * size)), size, num(diff.get("atol")), num(diff.get("rtol")))
                )
            else:
                text.append(" — %s" % (diff.get("reason") or "not compared"))
            return text
        if view.diffs and view.verdict == "observed-pass":
            return Text("every tensor within tolerance, in forward order", style="green")
        if not view.diffs and any(view.side_status(s) in ("blocked", "observed-fail") for s in SIDES):
            return Text(
                "nothing compared: a path did not run, and no substitute is compared in its place", style="bold yellow"
            )
        return Text("")

    def _tensors(self, view: AlignmentView) -> None:
        table = self.query_one("#tensors", DataTable)
        keys = {str(k.value) for k in table.rows}
        if any(not k.startswith("%s:" % view.jid) for k in keys):
            table.clear()
            keys = set()
        first = view.first_failure
        fresh = not keys
        for position, diff in enumerate(view.diffs):
            key = "%s:%s" % (view.jid, diff.get("name"))
            if key in keys:
                continue
            is_first = position == first
            style = "bold red reverse" if is_first else ("" if diff.get("passed") else "red")
            result = badge("observed-pass" if diff.get("passed") else "observed-fail")  # PASS / FAIL
            table.add_row(
                Text(("▶%d" if is_first else "%d") % position, style=style),
                Text(str(diff.get("name")), style=style),
                shape_text(diff.get("shape")),
                num(diff.get("max_abs")),
                num(diff.get("max_rel")),
                percent(diff.get("mismatch_ratio")),
                result,
                key=key,
            )
        if fresh and view.diffs:
            selection = view.default_selection()
            names = [d.get("name") for d in view.diffs]
            if selection in names:
                table.move_cursor(row=names.index(selection))
