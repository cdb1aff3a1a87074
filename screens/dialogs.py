"""The app's questions: quitting with jobs running, and confirming an action that needs an explicit yes."""

from __future__ import annotations

from typing import List

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 90%; max-width: 100; height: auto; border: thick $warning; padding: 1 2;
                     background: $surface; }}
{name} Label {{ width: 100%; }}
{name} Horizontal {{ height: auto; margin-top: 1; }}
{name} Button {{ margin-right: 1; }}
"""


class QuitScreen(ModalScreen):
    """Asked when quitting with jobs running: leave them running, stop them, or stay."""

    DEFAULT_CSS = DIALOG_CSS.format(name="QuitScreen")
    BINDINGS = [Binding("escape", "dismiss('stay')", "Stay")]

    def __init__(self, running: List[str]):
        super().__init__()
        self.running = running

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Jobs still running: %s" % ", ".join(self.running))
            yield Label("Leave them running (reopen the session to follow them again), or stop them?")
            with Horizontal():
                yield Button("Leave running", id="leave", variant="primary")
                yield Button("Stop jobs", id="stop", variant="error")
                yield Button("Stay", id="stay")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)


class ConfirmScreen(ModalScreen):
    """A yes/no question before an action the user should choose on purpose; dismisses with True or False."""

    DEFAULT_CSS = DIALOG_CSS.format(name="ConfirmScreen")
    BINDINGS = [
        Binding("escape", "dismiss(False)", "Cancel"),
        Binding("y", "dismiss(True)", "Yes"),
        Binding("n", "dismiss(False)", "No"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "Cancel"):
        super().__init__()
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, id="question")
            with Horizontal():
                yield Button("%s (y)" % self.yes, id="yes", variant="warning")
                yield Button("%s (n)" % self.no, id="no", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
