"""The candidate on new-distribution data, over the Training screen (`n`): heat map, scope of use, failure cases.

It draws the newest shift job of the session (workbench.views.shift); `r` starts one on the frozen
candidate, `←`/`→` pick the set whose most confident failures are shown as thumbnails.
"""

from __future__ import annotations

from typing import Any, List, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from screens.base import workbench_app
from screens.widgets.pixels import HalfBlockImage
from workbench.data.fashion import CLASS_NAMES

THUMBS = 2  # side by side beside the heat map when the terminal is wide enough; one at 80 columns
TWO_THUMBS_WIDTH = 110
REDRAW_S = 0.5


def heat_text(names: List[str], severities: List[int], grid: List[List[Optional[float]]], plain: bool) -> Text:
    """One row per set: its macro-F1 at each severity, shaded red (0) to green (1) unless plain."""
    out = Text(no_wrap=True)
    out.append("%-16s" % "set", style="bold")
    for s in severities:
        out.append(" s%-4d" % s, style="bold")
    out.append("\n")
    for name, cells in zip(names, grid):
        out.append("%-16s" % name[:16])
        for value in cells:
            if value is None:
                out.append("     -")
                continue
            style = (
                ""
                if plain
                else ("black on green" if value >= 0.7 else "black on yellow" if value >= 0.4 else "white on red")
            )
            out.append(" ")
            out.append("%5.2f" % value, style=style)
        out.append("\n")
    return out


def _num(value: Any, digits: int = 3) -> str:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return "%.*f" % (digits, value) if ok else "-"


def _name(label: Any) -> str:
    ok = type(label) is int and 0 <= label < len(CLASS_NAMES)
    return CLASS_NAMES[label][:10] if ok else "?"


class ShiftOverlay(ModalScreen):
    """The newest new-distribution evaluation of the session (Esc closes, r runs one, ←/→ pick the set)."""

    DEFAULT_CSS = """
    ShiftOverlay { align: center middle; }
    ShiftOverlay #sh-box { width: 100%; height: 100%; border: round $accent; background: $surface; }
    ShiftOverlay #sh-body { height: 1fr; }
    ShiftOverlay .sh-section { height: auto; margin-bottom: 1; }
    ShiftOverlay #sh-top { height: 18; }
    ShiftOverlay #sh-heat { width: 48; height: 17; }
    ShiftOverlay #sh-fail { width: 1fr; height: 18; }
    ShiftOverlay #sh-set { height: 2; }
    ShiftOverlay #sh-thumbs { height: 16; }
    ShiftOverlay .sh-thumb { width: 30; height: 16; }
    ShiftOverlay .sh-caption { height: 1; width: 28; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("r", "run", "Run shift"),
        Binding("left", "set(-1)", "Previous set", show=False),
        Binding("right", "set(1)", "Next set", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pick = 0
        self.drawn = -1

    @property
    def view(self) -> Any:
        """The app's shift model."""
        return workbench_app(self.app).views["shift"]

    def compose(self) -> ComposeResult:
        with Vertical(id="sh-box"):
            with VerticalScroll(id="sh-body"):
                yield Static("", id="sh-head", classes="sh-section")
                with Horizontal(id="sh-top"):
                    yield Static("", id="sh-heat")
                    with Vertical(id="sh-fail"):
                        yield Static("", id="sh-set")
                        with Horizontal(id="sh-thumbs"):
                            for i in range(THUMBS):
                                with Vertical(classes="sh-thumb", id="sh-thumb-%d" % i):
                                    yield HalfBlockImage(id="sh-img-%d" % i)
                                    yield Static("", id="sh-cap-%d" % i, classes="sh-caption")
                yield Static("", id="sh-scope", classes="sh-section")

    def on_mount(self) -> None:
        self.query_one("#sh-body").focus()  # the arrow keys up/down scroll at once
        box = self.query_one("#sh-box")
        box.border_title = "new-distribution data (the frozen candidate)"
        box.border_subtitle = "Esc close  r run  ←→ set  ↑↓ scroll"
        self.draw()
        self.set_interval(REDRAW_S, self._maybe_draw)

    def on_resize(self, event: Any) -> None:
        self.draw()

    def _maybe_draw(self) -> None:
        if self.view.version != self.drawn:
            self.draw()

    def action_close(self) -> None:
        """Back to the Training screen."""
        self.dismiss(None)

    def action_run(self) -> None:
        """Start a shift job on the session's frozen candidate (the job refuses, naming `freeze`, without one)."""
        workbench_app(self.app).start_job("shift", {})

    def action_set(self, step: int) -> None:
        """Show the failure cases of the previous or next set."""
        names = self.view.heat_map()[0]
        if names:
            self.pick = (self.pick + step) % len(names)
            self.draw()

    def draw(self) -> None:
        """Render the newest shift job's result."""
        view = self.view
        self.drawn = view.version
        plain = bool(getattr(self.app, "low_bandwidth", False))
        head = self.query_one("#sh-head", Static)
        res = view.summary
        if not view.jid:
            head.update(
                "No new-distribution evaluation in this session yet. Press r to evaluate the frozen candidate on "
                "shifted test images (lighting, backgrounds, framing, blur, noise, flips). The job needs a frozen "
                "candidate (`ms-workbench freeze`)."
            )
            return
        if not res:
            head.update(Text("%s: %s" % (view.jid, view.status or view.state), style="yellow"))
            return
        cand = res.get("candidate") if isinstance(res.get("candidate"), dict) else {}
        clean = res["clean"].get("macro_f1") if isinstance(res.get("clean"), dict) else None
        images_part = res.get("images") if isinstance(res.get("images"), dict) else {}
        head.update(
            "%s · candidate %s · %s images per set · clean macro-F1 %s · holds within %s"
            % (view.jid, cand.get("label", "-"), images_part.get("n", "?"), _num(clean), _num(res.get("tolerance")))
        )
        scope = view.scope()
        text = Text()
        for line in scope["breaks"]:
            text.append("✗ " if not plain else "NO  ", style="bold red")
            text.append(line + "\n")
        for line in scope["holds"]:
            text.append("✓ " if not plain else "OK  ", style="bold green")
            text.append(line + "\n")
        self.query_one("#sh-scope", Static).update(text)
        names, severities, grid = view.heat_map()
        self.query_one("#sh-heat", Static).update(heat_text(names, severities, grid, plain))
        if not names:
            return
        name = names[self.pick % len(names)]
        cases = view.failures(name)
        images = view.thumbnails(name)
        error = "" if not view.thumbs_error else " — " + view.thumbs_error
        position = "set %d/%d, ←/→" % (self.pick % len(names) + 1, len(names))
        self.query_one("#sh-set", Static).update(
            Text("%s: most confident failures (%s)%s" % (name, position, error), style="bold")
        )
        self.query_one("#sh-thumb-1").display = self.size.width >= TWO_THUMBS_WIDTH
        for i in range(THUMBS):
            img = self.query_one("#sh-img-%d" % i, HalfBlockImage)
            cap = self.query_one("#sh-cap-%d" % i, Static)
            if images is not None and i < len(cases) and i < len(images):
                img.show(images[i], plain)
                c = cases[i]
                cap.update("%s→%s %s" % (_name(c.get("true")), _name(c.get("pred")), _num(c.get("confidence"), 2)))
            else:
                img.show(None)
                cap.update("")
