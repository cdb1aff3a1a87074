"""Keys pressed right after Escape closes the palette reach the screen, as they did before it opened."""

from __future__ import annotations

from textual import events
from textual.command import CommandInput, CommandPalette
from textual.widgets import Input

from screens.app import WorkbenchApp
from screens.training import TrainingScreen
from tests.support.pilot import until
from tests.support.recorded import wait_ingested
from tests.support.workflow import OK_EXIT, hold_device, session, small_cfg, train_events
from workbench.session.store import SessionStore


def _burst(app, *keys: str) -> None:
    """Keys arriving together, as a terminal delivers quick typing: queued before the app handles the first."""
    for key in keys:
        app.post_message(events.Key(key, {"escape": "\x1b", "ctrl+p": "\x10"}.get(key, key)))


async def _palette_open(pilot, app) -> None:
    await pilot.press("ctrl+p")
    await until(pilot, lambda: CommandPalette.is_open(app), what="the palette to open")
    await pilot.press(*"check")


async def test_s_right_after_escape_closes_the_palette_acts_on_training(tmp_path):
    app = WorkbenchApp(
        SessionStore(tmp_path),
        session(tmp_path, [("train-001", "train", train_events(cut_after_epoch=True), None)]),
        small_cfg(),
    )
    hold_device(str(app.sid), "train-001")  # train-001 is running: s is refused in place, no job made
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.current_mode == "training", what="landing on the running training")
        await wait_ingested(pilot, app)
        training = app.screen
        assert isinstance(training, TrainingScreen)
        await _palette_open(pilot, app)
        _burst(app, "escape", "e", "s")
        await until(pilot, lambda: app.last_refusal is not None, what="s after the palette to try a start")
        assert training.pane == "epochs"  # e, typed between, reached the screen too
        assert app.screen is training and not CommandPalette.is_open(app)
        assert "held by job" in str(training.query_one("#error").render())


async def test_the_palette_opens_again_right_after_escape_closed_it(tmp_path):
    app = WorkbenchApp(
        SessionStore(tmp_path), session(tmp_path, [("train-001", "train", train_events(), OK_EXIT)]), small_cfg()
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ingested(pilot, app)
        await _palette_open(pilot, app)
        _burst(app, "escape", "ctrl+p", *"compare")
        await until(pilot, lambda: CommandPalette.is_open(app), what="ctrl+p to open the palette again")
        await until(pilot, lambda: app.screen.query_one(CommandInput).value == "compare", what="the typed search")
        await pilot.press("escape")  # the app left steady before it is torn down: no key still on its way
        await until(pilot, lambda: not CommandPalette.is_open(app), what="escape to close the palette")
        await pilot.pause()


async def test_escape_off_the_palette_still_leaves_a_field_and_the_palette_gives_no_field_focus(tmp_path):
    app = WorkbenchApp(
        SessionStore(tmp_path), session(tmp_path, [("train-001", "train", train_events(), OK_EXIT)]), small_cfg()
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ingested(pilot, app)
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "training", what="the Training screen")
        batch = app.screen.query_one("#f-batch")
        batch.focus()
        await until(pilot, lambda: batch.has_focus)
        await pilot.press("escape")
        await until(pilot, lambda: app.focused is None, what="escape to leave the field")
        await _palette_open(pilot, app)
        _burst(app, "escape")
        await until(pilot, lambda: not CommandPalette.is_open(app), what="escape to close the palette")
        await pilot.pause()
        assert not isinstance(app.focused, Input), app.focused  # one-letter keys are the screen's, not typed
