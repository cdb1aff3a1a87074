"""The keys help lists every key of the screen it was opened on and scrolls to its end at 80×24."""

from __future__ import annotations

from textual.binding import Binding

from screens.app import WorkbenchApp
from screens.keys_help import KeysScreen
from screens.training import TrainingScreen
from tests.support.pilot import until
from tests.support.recorded import wait_ingested
from tests.support.workflow import FIXTURES, OK_EXIT, session, small_cfg
from workbench.session.store import SessionStore


def _visible(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_the_keys_help_reaches_every_training_key_at_80x24(tmp_path):
    sid = session(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    app = WorkbenchApp(SessionStore(tmp_path), sid, small_cfg())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ingested(pilot, app)
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "training", what="the Training screen")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, KeysScreen), what="the keys help")
        scroll = app.screen.query_one("#keys-scroll")
        await until(pilot, lambda: scroll.max_scroll_y > 0, what="the help to be laid out")
        assert scroll.has_focus  # the arrow keys scroll it at once
        labels = [b.description for b in TrainingScreen.BINDINGS if isinstance(b, Binding) and b.description]
        first = _visible(app)
        assert "Start" in first and "Anywhere" not in first  # more than a screen: the end is below
        for _ in range(int(scroll.max_scroll_y) + 1):
            await pilot.press("down")
        await until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y, what="the help to scroll to its end")
        last = _visible(app)
        assert "Leave a field" in last and "Quit" in last, last
        seen = first + last
        missing = [label for label in labels if label not in seen]
        assert not missing, missing
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, KeysScreen), what="the help to close")
        assert app.current_mode == "training"


async def test_the_palette_s_keys_command_opens_the_scrolling_help(tmp_path):
    sid = session(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    app = WorkbenchApp(SessionStore(tmp_path), sid, small_cfg())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ingested(pilot, app)
        app.action_command_palette()
        await pilot.press(*"keys")
        await until(pilot, lambda: "Keys" in _visible(app), what="the Keys command")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, KeysScreen), what="the keys help")
