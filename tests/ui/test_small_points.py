"""The small points of a first use at 80×24: a message takes a line of the key bar instead of covering the screen,
focus leaves the form after ctrl+s, a focused Select stands out, and the palette offers nothing that does nothing."""

from __future__ import annotations

from textual.widgets import Input, Select

from screens.app import WorkbenchApp
from screens.commands import WorkbenchCommands
from screens.dialogs import QuitScreen
from screens.widgets.key_bar import NAV, KeyBar, screen_keys
from tests.support.pilot import until
from tests.support.recorded import wait_ingested
from tests.support.workflow import CANCELLED_EXIT, FIXTURES, OK_EXIT, hold_device, session, small_cfg, train_events
from workbench.session.store import SessionStore

LONG = (
    "train-002 not started: device CPU:0 is held by job 20261201-135938-fad9/train-001 (pid 4242) — train-001 goes on"
)


def _app(root, jobs) -> WorkbenchApp:
    return WorkbenchApp(SessionStore(root), session(root, jobs), small_cfg())


def _bar(app) -> str:
    return app.screen.query_one(KeyBar).render_str(str(app.screen.query_one(KeyBar).render())).plain


async def test_a_message_takes_a_line_above_the_keys_and_covers_nothing(tmp_path):
    app = _app(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ingested(pilot, app)
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "training", what="the Training screen")
        bar = app.screen.query_one(KeyBar)
        keys_only = bar.region
        app.notify(LONG, severity="warning", timeout=4.0)  # long enough to read under load
        await until(pilot, lambda: "not started" in _bar(app), what="the message on the key bar")
        await pilot.pause()
        text = _bar(app)
        first, *keys = text.splitlines()
        assert first.startswith("train-002 not started") and first.endswith("…") and len(first) <= 80
        assert not first[-2].isalnum()  # cut between words
        own = screen_keys(type(app.screen).BINDINGS, app.screen.active_bindings)
        assert all("%s %s" % pair in "\n".join(keys) for pair in NAV + own), text
        assert bar.region.height == keys_only.height + 1 and bar.region.bottom == keys_only.bottom
        body = app.screen.query_one("#body")
        assert body.region.bottom <= bar.region.y  # the screen gave the line room: nothing lies under it
        assert not any(toast.display and toast.region for toast in app.screen.query("Toast"))
        await until(pilot, lambda: "not started" not in _bar(app), what="the message to go after its time")
        # the text goes first, the line it took at the next layout: the bar is back to its keys only, or this times out
        await until(pilot, lambda: bar.region == keys_only, what="the key bar back to the keys' own lines")


async def test_focus_leaves_the_form_after_ctrl_s_so_q_quits_instead_of_typing(tmp_path):
    app = _app(tmp_path, [("train-001", "train", train_events(cut_after_epoch=True), None)])
    hold_device(str(app.sid), "train-001")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.current_mode == "training", what="landing on the running training")
        await wait_ingested(pilot, app)
        batch = app.screen.query_one("#f-batch", Input)
        batch.focus()
        await until(pilot, lambda: batch.has_focus)
        value = batch.value
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.last_refusal is not None, what="the start to be refused")
        assert app.focused is None
        error = app.screen.query_one("#error")
        app.screen.invalidate()  # a redraw of the screen (leaving the field is one) keeps the reason shown
        await until(pilot, lambda: app.screen.drawn_version == app.views["training"].version, what="a redraw")
        assert error.display and "held by job" in str(error.render())
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), what="q to ask about quitting")
        assert batch.value == value


async def test_a_focused_select_looks_different_from_the_others(tmp_path):
    app = _app(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "training", what="the Training screen")
        device, model = app.screen.query_one("#f-device", Select), app.screen.query_one("#f-model", Select)
        device.focus()
        await until(pilot, lambda: device.has_focus)
        await pilot.pause()
        focused = device.query_one("SelectCurrent").styles
        other = model.query_one("SelectCurrent").styles
        assert focused.background != other.background
        assert "bold" in str(focused.text_style) and "bold" not in str(other.text_style)


async def test_the_palette_offers_stop_only_while_running_and_resume_only_when_stopped_early(tmp_path):
    running = _app(tmp_path / "a", [("train-001", "train", train_events(cut_after_epoch=True), None)])
    hold_device(str(running.sid), "train-001")
    async with running.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: running.current_mode == "training", what="landing on the running training")
        await wait_ingested(pilot, running)
        titles = [t for t, _, _ in WorkbenchCommands(running.screen).commands()]
        assert "Stop the followed training run (asks first)" in titles
        assert "Resume the followed training run" not in titles and "Switch to Training" not in titles
    stopped = _app(tmp_path / "b", [("train-001", "train", train_events(cut_after_epoch=True), CANCELLED_EXIT)])
    async with stopped.run_test(size=(80, 24)) as pilot:
        await wait_ingested(pilot, stopped)
        await pilot.press("3")
        await until(pilot, lambda: stopped.views["training"].state == "cancelled", what="the cancelled run")
        titles = [t for t, _, _ in WorkbenchCommands(stopped.screen).commands()]
        assert "Resume the followed training run" in titles
        assert "Stop the followed training run (asks first)" not in titles
