"""The Data screen: per-class counts, the data contract, the split seed, and real sample images."""

from __future__ import annotations

from typing import Any, List, Optional

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Label, Static

from screens.base import WorkbenchScreen
from screens.form import NumberInput, check_fields, field_value
from screens.widgets.evidence import badge
from screens.widgets.pixels import HalfBlockImage
from workbench.data.fashion import NUM_CLASSES
from workbench.views.data import DataView

BAR_CELLS = 6
EIGHTHS = " ▏▎▍▌▋▊▉"
NARROW_BELOW = 100  # columns: under this the counts and the contract stack
SLOT_CELLS = 29  # an image (28) plus its gutter


def count_bar(value: int, top: int, cells: int = BAR_CELLS) -> str:
    """A bar of `cells` characters in eighths, full when value == top."""
    eighths = int(round(8.0 * cells * value / top)) if top > 0 else 0
    full, part = divmod(max(0, min(eighths, 8 * cells)), 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(cells)


def counts_table(view: DataView, plain: bool) -> Table:
    """Train / val / test per class side by side, each with a bar scaled to that split's largest class."""
    counts = view.counts
    table = Table(
        box=None,
        padding=(0, 1),
        pad_edge=False,
        show_edge=False,
        header_style="bold",
        title_justify="left",
        title="Per-class counts" + (" (SYNTHETIC)" if view.synthetic else ""),
    )
    table.add_column("class", no_wrap=True)
    colours = {"train": "green", "val": "cyan", "test": "magenta"}
    for split in ("train", "val", "test"):
        table.add_column(split, no_wrap=True)
    names = view.class_names
    for cls in range(NUM_CLASSES):
        row: List[Any] = ["%d %s" % (cls, names[cls] if cls < len(names) else cls)]
        for split in ("train", "val", "test"):
            values = counts.get(split) or []
            cell = Text()
            if cls < len(values):
                cell.append("%5d " % values[cls])
                cell.append(count_bar(values[cls], max(values)), style="" if plain else colours[split])
            else:
                cell.append("    — ")
            row.append(cell)
        table.add_row(*row)
    if counts:
        table.add_row(
            Text("total", style="bold"),
            *[Text("%5d" % sum(counts.get(split) or []), style="bold") for split in ("train", "val", "test")],
        )
    return table


def _short(sha: Any, n: int = 12) -> str:
    return (str(sha)[:n] + "…") if sha else "—"


def contract_table(view: DataView) -> Table:
    """Source files and hashes, shapes, dtype, scaling, pixel statistics, split record, class names."""
    result = view.result
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.title = "Data contract"
    grid.title_justify = "left"
    if view.synthetic:
        grid.add_row(
            "source", Text("SYNTHETIC generated patterns (data.source=synthetic) — no files, no hashes", style="bold")
        )
    else:
        files = view.files
        verified = [f for f in files if f.get("verified") and f.get("sha256") == f.get("official_sha256")]
        grid.add_row("source", "official Fashion-MNIST, %d of 4 files verified" % len(verified))
        configured = view.started.get("data_dir")
        grid.add_row("folder", view.data_dir or ("%s (data.dir)" % configured if configured else "—"))
        if files:
            lines = Text()
            for n, f in enumerate(files):
                ok = f in verified
                lines.append(("\n" if n else "") + "%-26s %s " % (f.get("name"), _short(f.get("sha256"), 10)))
                lines.append("✓" if ok else "✗", style="green" if ok else "bold red")
            grid.add_row("SHA-256", lines)
        else:
            grid.add_row(
                "SHA-256", Text("not verified (the job failed)" if view.error else "not verified yet", style="dim")
            )
    shapes = (result.get("input") or {}).get("shapes") or {}
    limits = result.get("input") or {}
    if shapes:
        grid.add_row(
            "input",
            "uint8 [N,28,28] → float32 [N,1,28,28] in [%s, %s] = pixel%s, nothing fitted"
            % (_num(limits.get("min")), _num(limits.get("max")), result.get("scale", "/255")),
        )
    else:
        grid.add_row("input", "uint8 [N,28,28] → float32 [N,1,28,28] = pixel/255 (not checked yet)")
    pixel = result.get("pixel") or {}
    if pixel:
        grid.add_row("pixels", "train split: mean %.4f · std %.4f" % (pixel["mean"], pixel["std"]))
    split = result.get("split") or {}
    seed = view.seed
    sizes = " · %s/%s/%s" % tuple((shapes.get(k) or ["—"])[0] for k in ("train", "val", "test")) if shapes else ""
    grid.add_row(
        "split", "seed %s · val %s · stratified%s" % (seed if seed is not None else "—", _num(view.val_fraction), sizes)
    )
    if split:
        grid.add_row(
            "indices",
            "%s train %s val %s"
            % (
                str(split.get("index_file", "artifacts/split.npz")).rsplit("/", 1)[-1],
                _short(split.get("train_sha256"), 8),
                _short(split.get("val_sha256"), 8),
            ),
        )
    grid.add_row("classes", " ".join("%d %s" % (i, n) for i, n in enumerate(view.class_names)))
    return grid


def _num(value: Any) -> str:
    return ("%g" % value) if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def checks_table(view: DataView) -> Table:
    """Every check of the job with its evidence level, in the order they were made."""
    table = Table(box=None, padding=(0, 1), show_header=False, show_edge=False, title="Checks", title_justify="left")
    table.add_column(no_wrap=True, width=7)
    table.add_column(no_wrap=True, style="bold")
    table.add_column(ratio=1)
    for check in view.checks.values():
        table.add_row(
            badge(str(check.get("status"))), str(check.get("title") or check.get("id")), str(check.get("detail") or "")
        )
    return table


class DataBody(VerticalScroll):
    """The scrolling body, without left/right bindings: those browse classes here."""

    inherit_bindings = False
    BINDINGS = [
        Binding("up", "scroll_up", show=False),
        Binding("down", "scroll_down", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
        Binding("home", "scroll_home", show=False),
        Binding("end", "scroll_end", show=False),
    ]


class SampleSlot(Vertical):
    """One sample image with its official training index under it."""

    def __init__(self) -> None:
        self.image = HalfBlockImage()
        self.caption = Static("", classes="caption")
        super().__init__(self.image, self.caption, classes="slot")


class DataScreen(WorkbenchScreen):
    """Data: is the split reproducible and is the input what the model expects?"""

    view_name = "data"
    title_text = "Data"
    CSS_PATH = "data.tcss"
    BINDINGS = [
        Binding("r", "rerun", "Re-run"),
        Binding("s", "ask_seed", "New seed"),
        Binding("left", "prev_class", "Class ←"),
        Binding("right", "next_class", "Class →"),
        Binding("escape", "close_seed", "Close", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.selected_class = 0
        self.slots: List[SampleSlot] = []

    def compose_body(self) -> ComposeResult:
        with DataBody(id="body"):
            yield Static("", id="headline")
            yield Static("", id="banner")
            with Horizontal(id="seed-row"):
                yield Label("new split seed", id="seed-label")
                yield NumberInput("", "data.split_seed", placeholder="seed", id="seed-input")
                yield Static("Enter starts a data job with it · Esc closes", id="seed-help")
            with Horizontal(id="top"):
                yield Static("", id="counts")
                yield Static("", id="contract")
            yield Static("", id="selector")
            yield Static("", id="gallery-note")
            yield Grid(id="gallery")
            yield Static("", id="checks")

    def on_mount(self) -> None:
        self.query_one("#seed-row").display = False
        self.fit_width(self.size.width or self.app.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self.fit_width(event.size.width)

    def fit_width(self, width: int) -> None:
        """Stack the top panels when narrow; as many sample columns as fit."""
        self.set_class(width < NARROW_BELOW, "narrow")
        # Body padding and scrollbar take 4 columns; the last image needs no gutter.
        self.query_one("#gallery", Grid).styles.grid_size_columns = max(1, (width - 4 + 1) // SLOT_CELLS)

    def maybe_refresh(self) -> None:
        """Redraw as the base does, and also when low-bandwidth mode was switched since the last draw."""
        if getattr(self, "_drawn_plain", None) not in (None, self.wb_app.low_bandwidth):
            self.invalidate()
        super().maybe_refresh()

    # Actions.

    def current_seed(self) -> int:
        """The seed on show: the followed job's, else the configured one."""
        seed = self.view.seed
        return seed if seed is not None else int(self.wb_app.cfg["data"]["split_seed"])

    def action_rerun(self) -> None:
        """Run the data job again with the current seed."""
        self.wb_app.start_job("data", {"data": {"split_seed": self.current_seed()}})

    def action_ask_seed(self) -> None:
        """Open the seed field, suggesting the next seed."""
        row = self.query_one("#seed-row")
        row.display = True
        field = self.query_one("#seed-input", Input)
        self.query_one("#seed-label", Label).update("new split seed")
        field.value = str(self.current_seed() + 1)
        field.focus()

    def action_close_seed(self) -> None:
        """Hide the seed field without starting anything."""
        self.query_one("#seed-row").display = False
        self.query_one("#body").focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "seed-input":
            self.query_one("#seed-label", Label).update("new split seed")

    def on_number_input_refused(self, event: NumberInput.Refused) -> None:
        self.query_one("#seed-label", Label).update(Text("new split seed — " + event.reason, style="bold red"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "seed-input":
            return
        seed = field_value(event.input, "data.split_seed")
        problems = check_fields([("new split seed", "data.split_seed", seed)])
        if problems:
            self.app.notify(problems[0], title="cannot re-run the split", severity="error")
            self.query_one("#seed-label", Label).update(Text("new split seed — " + problems[0], style="bold red"))
            return
        self.action_close_seed()
        self.wb_app.start_job("data", {"data": {"split_seed": seed}})

    def action_prev_class(self) -> None:
        """Show the previous class's samples."""
        self.select_class(self.selected_class - 1)

    def action_next_class(self) -> None:
        """Show the next class's samples."""
        self.select_class(self.selected_class + 1)

    def select_class(self, cls: int) -> None:
        """Browse to class `cls` (wrapping around) and redraw only the sample grid."""
        self.selected_class = cls % NUM_CLASSES
        with self.app.batch_update():
            self.render_gallery(self.view)

    # Drawing.

    def render_view(self, view: DataView) -> None:
        plain = self._drawn_plain = self.wb_app.low_bandwidth
        self.query_one("#headline", Static).update(self.headline(view))
        banner = self.query_one("#banner", Static)
        banner_text = self.banner(view)
        banner.display = banner_text is not None
        banner.set_class(view.synthetic and not view.error, "synthetic")
        banner.set_class(bool(view.error), "error")
        banner.update(banner_text or "")
        self.query_one("#counts", Static).update(counts_table(view, plain))
        self.query_one("#contract", Static).update(contract_table(view))
        self.query_one("#checks", Static).update(checks_table(view) if view.checks else "")
        self.render_gallery(view)

    def headline(self, view: DataView) -> Text:
        """Job, status, source, seed, the evidence tally and the keys."""
        line = Text()
        if not view.jid:
            line.append(
                "no data job yet — r runs it with seed %d, s picks another seed" % self.current_seed(), style="dim"
            )
            return line
        line.append(view.jid + " ", style="bold")
        line.append_text(badge(view.state or "running"))
        line.append(" ")
        if view.state in ("", "running") and view.progress:
            prog = view.progress
            line.append(
                "  %s %s/%s %s" % (prog.get("phase", ""), prog.get("done"), prog.get("total"), prog.get("unit", ""))
            )
        line.append(
            " %s" % ("SYNTHETIC" if view.synthetic else "Fashion-MNIST"), style="bold reverse" if view.synthetic else ""
        )
        line.append("  seed %s" % (view.seed if view.seed is not None else "—"))
        tally = view.check_tally()
        if tally:
            line.append("  checks ")
            for status in ("observed-pass", "observed-fail", "blocked", "not-run"):
                if tally.get(status):
                    line.append("%d " % tally[status])
                    line.append_text(badge(status))
                    line.append(" ")
        line.append("  r re-run · s new seed · ←/→ class", style="dim")
        return line

    def banner(self, view: DataView) -> Optional[Group]:
        """The failure with its hint, or the synthetic warning; None when there is nothing to flag."""
        if view.error:
            parts = [Text("FAILED  %s: %s" % (view.error.get("type"), view.error.get("message")), style="bold")]
            if view.error.get("hint"):
                parts.append(Text("hint: %s" % view.error["hint"]))
            return Group(*parts)
        if view.synthetic:
            return Group(
                Text(
                    "SYNTHETIC DATA — generated patterns, not Fashion-MNIST (data.source=synthetic). "
                    "For demos and tests only: no number measured on it says anything about the real "
                    "data.",
                    style="bold",
                )
            )
        return None

    def render_gallery(self, view: DataView) -> None:
        """The class selector and the selected class's sample images at their real pixel values."""
        plain = self.wb_app.low_bandwidth
        names = view.class_names
        selector = Text()
        for cls in range(NUM_CLASSES):
            label = " %d %s " % (cls, names[cls] if cls < len(names) else cls)
            selector.append(label, style="bold reverse" if cls == self.selected_class else "")
            if cls < NUM_CLASSES - 1:
                selector.append("│", style="dim")
        self.query_one("#selector", Static).update(selector)
        samples = view.samples(self.selected_class)
        note = self.query_one("#gallery-note", Static)
        if samples:
            note.update(
                Text(
                    "%d %s from the train split, real pixels (%s); #index in the %s training set"
                    % (
                        len(samples),
                        names[self.selected_class],
                        "ASCII ramp" if plain else "▀ = two pixel rows",
                        "synthetic" if view.synthetic else "official",
                    ),
                    style="dim",
                )
            )
        elif view.preview_error:
            note.update(Text(view.preview_error, style="red"))
        elif view.error:
            note.update(Text("no samples: the job failed before writing its preview", style="dim"))
        else:
            note.update(Text("no samples yet", style="dim"))
        self.fill_slots(samples, plain)

    def fill_slots(self, samples: List[Any], plain: bool) -> None:
        """Show one slot per sample, adding slots when a job previews more images than before."""
        gallery = self.query_one("#gallery", Grid)
        while len(self.slots) < len(samples):
            slot = SampleSlot()
            self.slots.append(slot)
            gallery.mount(slot)
        for n, slot in enumerate(self.slots):
            if n < len(samples):
                index, pixels = samples[n]
                slot.image.show(pixels, plain)
                slot.caption.update("#%d" % index)
                slot.display = True
            else:
                slot.display = False
