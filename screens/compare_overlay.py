"""Compare the followed training run with a second one (this session's or an imported record's), over Training.

`c` on the Training screen opens a picker of the other runs, then the overlay: both loss curves in
two colours, the epochs of both with deltas, the confusion-matrix difference at the best epochs,
the config keys that differ and the effect-consistency verdict. The comparison itself is computed
in `workbench.compare.runs` (off the UI thread); this module only draws it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from screens.widgets.evidence import badge
from workbench.compare.inputs import candidate_runs, compare_dirs, picked_tolerances
from workbench.compare.text import (
    class_lines,
    config_lines,
    confusion_lines,
    environment_lines,
    epoch_table,
    frozen_test_lines,
    throughput_lines,
)

COLOURS = ("cyan", "magenta")
PLAIN_MARKS = ("a", "b")
CHART_ROWS = 7
SMOOTH_PARTS = 12


def curve_chart(curves: Dict[str, Any], width: int, rows: int = CHART_ROWS, plain: bool = False) -> Text:
    """Both loss series on one axis as character cells: A and B in two colours, '#' where they meet."""
    width = max(width - 8, 10)
    series = [curves.get("a") or {}, curves.get("b") or {}]
    xs = [x for s in series for x in s.get("x") or []]
    ys = [y for s in series for y in s.get("y") or []]
    out = Text(no_wrap=True)
    if not xs:
        out.append("no loss recorded", style="dim")
        return out
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    grid: List[List[int]] = [[0] * width for _ in range(rows)]
    for bit, s in ((1, series[0]), (2, series[1])):
        columns: Dict[int, List[float]] = {}
        for x, y in zip(s.get("x") or [], smooth(s.get("y") or [])):
            columns.setdefault(min(int((x - x0) / (x1 - x0) * (width - 1) + 0.5), width - 1), []).append(y)
        for col, values in columns.items():  # one mark per column: the mean, so noisy steps read as a curve
            mean = sum(values) / len(values)
            grid[min(int((y1 - mean) / (y1 - y0) * (rows - 1) + 0.5), rows - 1)][col] |= bit
    for r, cells in enumerate(grid):
        label = "%7.3f" % y1 if r == 0 else ("%7.3f" % y0 if r == rows - 1 else "")
        out.append("%7s " % label, style="dim")
        for cell in cells:
            if cell == 3:
                out.append("#", style="bold")
            elif cell:
                out.append(PLAIN_MARKS[cell - 1] if plain else "•", style="" if plain else COLOURS[cell - 1])
            else:
                out.append(" ")
        out.append("\n")
    out.append("%7s epoch %s%s%s" % ("", _g(x0), " " * max(width - 14, 1), _g(x1)), style="dim")
    return out


def smooth(values: Sequence[float], parts: int = SMOOTH_PARTS) -> List[float]:
    """A centred moving mean over about 1/parts of the run: step losses are noisy, the trend is what compares."""
    half = max(len(values) // (2 * parts), 0)
    out = []
    for i in range(len(values)):
        window = values[max(0, i - half) : i + half + 1]
        out.append(sum(window) / len(window))
    return out


def _g(value: float) -> str:
    return ("%.2f" % value).rstrip("0").rstrip(".")


def header(result: Dict[str, Any], plain: bool = False) -> Text:
    """Which run is A and which is B (in their curve colours), and the verdict."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for side, colour in zip(("a", "b"), COLOURS):
        run = result[side]
        text.append("%s " % side.upper(), style="bold" if plain else "bold %s" % colour)
        text.append(
            "%s  %s  %s%s\n"
            % (run["ref"], run["device"], run["status"] or "?", "  (imported)" if run.get("imported") else "")
        )
    text.append_text(badge(result["verdict"]["status"]))
    text.append(" " + result["verdict"]["short"] + "\n")
    diff = result["config_diff"]
    text.append("config: ", style="bold")
    text.append(", ".join("%s %r->%r" % (d["key"], d["a"], d["b"]) for d in diff) if diff else "identical")
    return text


class ComparisonComputed(Message):
    """The worker finished folding and comparing both runs."""

    def __init__(self, result: Optional[Dict[str, Any]], error: Optional[str]) -> None:
        super().__init__()
        self.result = result  # the comparison, or None after an error
        self.error = error  # what went wrong, for the overlay to show


class CompareOverlay(ModalScreen):
    """Two training runs side by side with the effect-consistency verdict (Esc closes, w swaps A and B)."""

    DEFAULT_CSS = """
    CompareOverlay { align: center middle; }
    CompareOverlay #cmp-box { width: 100%; height: 100%; border: round $accent; background: $surface; }
    CompareOverlay #cmp-head { height: auto; max-height: 5; }
    CompareOverlay #cmp-chart { height: auto; }
    CompareOverlay #cmp-body { height: 1fr; }
    CompareOverlay .cmp-section { height: auto; margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "close", "Close"), Binding("w", "swap", "Swap A/B"), Binding("r", "reload", "Reload")]

    def __init__(self, dir_a: Path, dir_b: Path, cfg: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self.dirs = (Path(dir_a), Path(dir_b))
        self.tolerances = picked_tolerances(cfg)
        self.result: Optional[Dict[str, Any]] = None
        self.error: Optional[str] = None

    def compose(self) -> ComposeResult:
        with Vertical(id="cmp-box"):
            yield Static("comparing …", id="cmp-head")
            yield Static("", id="cmp-chart")
            with VerticalScroll(id="cmp-body"):
                for part in ("epochs", "confusion", "config", "more"):
                    yield Static("", id="cmp-%s" % part, classes="cmp-section")

    def on_mount(self) -> None:
        self.query_one("#cmp-body").focus()  # the arrow keys scroll the sections at once
        box = self.query_one("#cmp-box")
        box.border_title = "compare runs (A = reference, delta = B - A)"
        box.border_subtitle = "Esc close  w swap A/B  r reload  ↑↓ PgUp PgDn scroll"
        self.action_reload()

    def action_reload(self) -> None:
        """Fold both runs again (the followed one may still be training)."""
        self.run_worker(self._compute, thread=True, exclusive=True, exit_on_error=False)

    def _compute(self) -> None:
        try:
            a, b = self.dirs
            names = ("%s/%s" % (a.parent.parent.name, a.name), "%s/%s" % (b.parent.parent.name, b.name))
            result = compare_dirs(a, b, self.tolerances, names=names)
            self.post_message(ComparisonComputed(result, None))
        except Exception as exc:  # shown in the overlay: a broken record must not take the app down
            self.post_message(ComparisonComputed(None, "%s: %s" % (type(exc).__name__, exc)))

    def on_comparison_computed(self, message: ComparisonComputed) -> None:
        self.result, self.error = message.result, message.error
        self.draw()

    def on_resize(self, event: Any) -> None:
        if self.result is not None:
            self.draw()

    def action_swap(self) -> None:
        """Make B the reference."""
        self.dirs = (self.dirs[1], self.dirs[0])
        self.action_reload()

    def action_close(self) -> None:
        """Back to the Training screen."""
        self.dismiss(None)

    def draw(self) -> None:
        """Render the comparison into the sections."""
        if self.result is None:
            self.query_one("#cmp-head", Static).update(Text("cannot compare: %s" % self.error, style="red"))
            return
        plain = bool(getattr(self.app, "low_bandwidth", False))
        result = self.result
        width = max(self.query_one("#cmp-box").size.width - 2, 40)
        self.query_one("#cmp-head", Static).update(header(result, plain))
        self.query_one("#cmp-chart", Static).update(curve_chart(result["loss_curves"], width, plain=plain))
        self.query_one("#cmp-epochs", Static).update(_section("epochs (delta = B - A)", epoch_table(result)))
        confusion = (
            confusion_lines(result) + [""] + ["per-class F1 at the best epochs (A, B, delta)"] + class_lines(result)
        )
        self.query_one("#cmp-confusion", Static).update(
            _section("confusion difference at the best epochs (B - A)", confusion)
        )
        self.query_one("#cmp-config", Static).update(
            _section("config keys that differ, and the environment", config_lines(result) + environment_lines(result))
        )
        self.query_one("#cmp-more", Static).update(
            _section("test set and throughput", frozen_test_lines(result) + throughput_lines(result))
        )


def _section(title: str, lines: Sequence[str]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(title + "\n", style="bold")
    text.append("\n".join(lines))
    return text


class RunPicker(ModalScreen):
    """Choose the run to compare with: this session's other training runs, then imported records' runs."""

    DEFAULT_CSS = """
    RunPicker { align: center middle; }
    RunPicker OptionList { width: 90%; max-width: 100; height: auto; max-height: 80%; border: round $accent; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, candidates: Sequence[Tuple[Path, str]]) -> None:
        super().__init__()
        self.candidates = list(candidates)

    def compose(self) -> ComposeResult:
        options = OptionList(*[Option(label, id=str(path)) for path, label in self.candidates], id="pick-run")
        options.border_title = "compare with which run? (Enter picks, Esc cancels)"
        yield options

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Close without picking."""
        self.dismiss(None)


def open_compare(screen: Any) -> None:
    """From the Training screen: pick a second run, then show the comparison with the followed one."""
    app = screen.app
    jid = getattr(screen.view, "jid", None)
    if not jid or app.sid is None:
        app.notify("no training run to compare yet", severity="warning")
        return
    run_a = app.store.root / app.sid / "jobs" / jid
    candidates = candidate_runs(app.store, app.sid, exclude=run_a)
    if not candidates:
        app.notify(
            "no other training run in this session or in an imported record (ms-workbench import)",
            severity="warning",
            timeout=8,
        )
        return

    def picked(choice: Optional[str]) -> None:
        if choice:
            app.push_screen(CompareOverlay(run_a, Path(choice), app.cfg))

    app.push_screen(RunPicker(candidates), picked)
