"""The keys help: every key of the screen it was opened on, the way to each screen, and the app's own, scrolled
with the arrow and page keys (the palette's "Keys" opens it)."""

from __future__ import annotations

from typing import Any, Iterable, List, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from screens.widgets.key_bar import NAV, shown_key

ANYWHERE = [("^p", "Palette: every command by name"), ("^b", "Low bandwidth on/off"), ("escape", "Leave a field")]
CLOSE = "escape or ? closes · ↑ ↓ PgUp PgDn scroll"


def own_keys(bindings: Iterable[Any]) -> List[Tuple[str, str]]:
    """(keys, label) of every binding of a screen with a label, hidden ones included (the bar shows few)."""
    out = []
    for binding in bindings:
        if not binding.description or binding.action.startswith("app."):
            continue
        out.append((" ".join(shown_key(k) for k in binding.key.split(",")), binding.description))
    return out


def keys_text(title: str, bindings: Iterable[Any]) -> Text:
    """The help's lines: the screen's own keys first, then the way to each screen, then keys that work anywhere."""
    text = Text()
    for heading, pairs in (
        ("%s screen" % title, own_keys(bindings)),
        ("Screens", [(k, v) for k, v in NAV]),
        ("Anywhere", ANYWHERE),
    ):
        if text:
            text.append("\n")
        text.append(heading + "\n", style="bold underline")
        for keys, label in pairs:
            text.append("  %-10s" % keys, style="bold")
            text.append(" %s\n" % label)
    return text


class KeysScreen(ModalScreen):
    """Every key of the screen below it, in a panel that scrolls on a terminal of any height."""

    DEFAULT_CSS = """
    KeysScreen { align: right top; }
    KeysScreen > VerticalScroll { width: 48; max-width: 100%; height: 100%; border-left: thick $accent;
                                  background: $surface; padding: 0 1; }
    KeysScreen #keys-close { color: $text-muted; }
    """
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, title: str, bindings: Iterable[Any]) -> None:
        super().__init__()
        self.text = keys_text(title, bindings)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="keys-scroll"):
            yield Static(CLOSE, id="keys-close")
            yield Static(self.text, id="keys-list")

    def on_mount(self) -> None:
        self.query_one("#keys-scroll").focus()
