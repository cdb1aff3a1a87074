"""The bottom lines: the way to each screen and out, then the screen's own keys, each whole at 80 columns.

One line when everything fits; else the screen's keys get a second line, so no key is cut mid-word.
A binding shows the key that works now: `s` with no field focused, `^s` while a field takes letters.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Tuple

from rich.text import Text
from textual.widgets import Static

from screens.widgets.words import clip_words

NAV = [("1", "Env"), ("2", "Data"), ("3", "Train"), ("4", "Align"), ("5", "Export"), ("6", "Session"), ("q", "Quit")]
PALETTE = ("^p", "Palette")
SEP = " │ "
ARROWS = {"left": "←", "right": "→", "up": "↑", "down": "↓"}


def shown_key(key: str) -> str:
    """A key as the bar shows it: ctrl+s as ^s, left as ←."""
    return "^" + key[5:] if key.startswith("ctrl+") else ARROWS.get(key, key)


def screen_keys(bindings: Iterable[Any], active: Any = None) -> List[Tuple[str, str]]:
    """(key, label) of a screen's own shown bindings in their order: the first of each binding's keys that is active."""
    out = []
    for binding in bindings:
        if not getattr(binding, "show", True) or not binding.description or binding.action.startswith("app."):
            continue
        keys = binding.key.split(",")
        live = [k for k in keys if active is None or k in active]
        if live:
            out.append((shown_key(live[0]), binding.description))
    return out


def width_of(pairs: List[Tuple[str, str]]) -> int:
    """Cells the pairs take: 'k label' each, one space between."""
    return sum(len(k) + 1 + len(v) for k, v in pairs) + max(0, len(pairs) - 1)


def _pairs(text: Text, pairs: Iterable[Tuple[str, str]]) -> None:
    for n, (key, label) in enumerate(pairs):
        if n:
            text.append(" ")
        text.append(key, style="reverse bold")
        text.append(" " + label)


def key_lines(own: List[Tuple[str, str]], width: int) -> List[Text]:
    """The bar's lines: one when the navigation, the screen's keys and the palette fit, else two."""
    nav_w, own_w = width_of(NAV), width_of(own)
    lines = []
    first = Text(no_wrap=True, overflow="crop")
    _pairs(first, NAV)
    together = own and nav_w + len(SEP) + own_w <= width
    if together:
        first.append(SEP, style="dim")
        _pairs(first, own)
    used = len(first.plain)
    if used + len(SEP) + width_of([PALETTE]) <= width:
        first.append(SEP, style="dim")
        _pairs(first, [PALETTE])
    lines.append(first)
    if own and not together:
        second = Text(no_wrap=True, overflow="crop")
        _pairs(second, own)
        lines.append(second)
    return lines


SEVERITY_STYLE = {"error": "bold white on red", "warning": "bold black on yellow", "information": "bold"}


def message_line(notifications: Iterable[Any], width: int) -> Optional[Text]:
    """The newest notification not yet expired, on one line cut at a word; None when there is none."""
    live = [n for n in notifications if not n.has_expired]
    if not live:
        return None
    note = live[-1]
    plain = " ".join(("%s: %s" % (note.title, note.message) if note.title else str(note.message)).split())
    line = Text(clip_words(plain, width), style=SEVERITY_STYLE.get(note.severity, "bold"), no_wrap=True)
    line.overflow = "crop"
    return line


class KeyBar(Static):
    """The keys of the screen it is on: 1-6 and q, then the screen's own keys, never cut mid-word."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: auto; max-height: 3; background: $panel; color: $text; }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)
        self.redraw()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Any) -> None:
        if self.is_attached and screen is self.screen:
            self.redraw()

    def on_resize(self, event) -> None:
        self.redraw()

    def on_screen_resume(self) -> None:
        self.redraw()

    def lines(self) -> List[Text]:
        """The lines for the bar's width and the keys active now, under the newest message still shown."""
        width = self.size.width or self.app.size.width
        keys = key_lines(screen_keys(type(self.screen).BINDINGS, self.screen.active_bindings), width)
        note = message_line(getattr(self.app, "_notifications", ()), width)
        return ([note] if note is not None else []) + keys

    def redraw(self) -> None:
        """Lay the bar out again (only when its text changed: an update reflows the screen)."""
        lines = self.lines()
        plain = "\n".join(line.plain for line in lines)
        if plain != getattr(self, "_plain", None):
            self._plain = plain
            self.update(Text("\n").join(lines))
