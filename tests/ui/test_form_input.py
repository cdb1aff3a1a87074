"""Numeric fields check what is typed: letters are refused with the reason on screen, and the config's rules
(lr > 0, a batch no larger than the train split) are shown as soon as the field holds the value."""

from __future__ import annotations

from screens.app import WorkbenchApp
from tests.support.pilot import until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, text_of, wait_ingested
from workbench.config.layers import defaults
from workbench.session.store import SessionStore


def _app(tmp_path, jobs=()) -> WorkbenchApp:
    cfg = defaults()  # the official data: 54000 images in the train split at data.val_fraction 0.1
    sid = make_recorded_session(tmp_path, list(jobs), cfg=cfg)
    return WorkbenchApp(SessionStore(tmp_path), sid, cfg)


async def _training(pilot, app):
    await pilot.press("3")
    await wait_ingested(pilot, app)
    await until(pilot, lambda: app.screen.query("#f-epochs"))


async def _retype(pilot, app, wid: str, text: str) -> None:
    field = app.screen.query_one(wid)
    field.focus()
    field.value = ""
    await pilot.press(*text)


async def test_a_letter_in_a_number_field_is_refused_as_typed_saying_why(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await _training(pilot, app)
        await _retype(pilot, app, "#f-epochs", "3")
        await pilot.press("a")
        assert app.screen.query_one("#f-epochs").value == "3"  # not taken
        await until(pilot, lambda: "'a' not typed" in text_of(app, "#form-state"))
        state = text_of(app, "#form-state")
        assert "epochs" in state and "train.epochs takes a whole number" in state and ">= 1" in state
        await _retype(pilot, app, "#f-lr", "0.0x")
        assert app.screen.query_one("#f-lr").value == "0.0"
        await until(pilot, lambda: "'x' not typed: train.lr takes a number" in text_of(app, "#form-state"))


async def test_lr_zero_and_a_batch_larger_than_the_split_are_shown_as_typed_and_refused_at_start(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await _training(pilot, app)
        await _retype(pilot, app, "#f-lr", "0")
        await until(pilot, lambda: "lr (train.lr) = 0.0" in text_of(app, "#form-state"))
        assert "> 0.0" in text_of(app, "#form-state")
        await _retype(pilot, app, "#f-lr", "0.001")
        await _retype(pilot, app, "#f-batch", "60000")
        await until(
            pilot, lambda: "train.batch_size 60000 > 54000 images in the train split" in text_of(app, "#form-state")
        )
        app.screen.action_start()
        await until(pilot, lambda: "cannot start" in text_of(app, "#error"))
        assert "60000 > 54000" in text_of(app, "#error")
        assert not list((tmp_path / app.sid / "jobs").iterdir())  # no job was made
        await _retype(pilot, app, "#f-batch", "64")
        await until(pilot, lambda: "✗" not in text_of(app, "#form-state"))


async def test_the_new_seed_field_says_why_a_letter_is_refused(tmp_path):
    app = _app(tmp_path, [("data-001", "data", FIXTURES / "data_ok.jsonl", OK_EXIT)])
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await wait_ingested(pilot, app)
        await pilot.press("s")
        field = app.screen.query_one("#seed-input")
        await until(pilot, lambda: app.focused is field)
        before = field.value
        await pilot.press("q")
        assert field.value == before
        await until(pilot, lambda: "'q' not typed" in text_of(app, "#seed-label"))
        assert "data.split_seed takes a whole number" in text_of(app, "#seed-label")
