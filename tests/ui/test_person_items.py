"""What a newcomer over SSH meets, key by key: forms, landing, test result, export source, small terminals,
chart captions, the command palette and feedback on long actions (issue 19), from recorded runs."""

from __future__ import annotations

import json

from textual.command import CommandList

from screens.app import WorkbenchApp
from screens.commands import WorkbenchCommands
from screens.dialogs import ConfirmScreen, QuitScreen
from tests.support.pilot import until
from tests.support.recorded import mark_running, text_of, wait_ingested
from tests.support.screen_states import state_config, state_session
from workbench.fold.eta import eta_s
from workbench.session.store import SessionStore
from workbench.views.training import tail_steps


def _app(root, state: str, running_train: bool = False) -> WorkbenchApp:
    sid = state_session(root, state)
    if running_train:  # the training still runs (a live pid, no exit record); the others ended
        (root / sid / "jobs" / "train-001" / "exit.json").unlink()
        mark_running(root / sid / "jobs" / "train-001")
    return WorkbenchApp(SessionStore(root), sid, state_config())


async def test_form_fields_are_labelled_and_checked_by_the_config_rules(tmp_path):
    app = _app(tmp_path, "idle")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: app.screen.query("#f-epochs"), what="the Training form")
        labels = [str(w.label_text) for w in app.screen.query("LabelledField")]
        assert labels == ["model", "mode", "precision", "device", "layers every", "epochs", "batch size", "lr", "split"]
        app.screen.query_one("#f-epochs").focus()
        await pilot.press("0")  # a focused field selects its text: typing replaces it
        keys = app.screen.active_bindings
        assert "ctrl+s" in keys and "s" not in keys and "1" not in keys  # typing keeps 1-6 and s in the field
        await pilot.press("ctrl+s")
        error = text_of(app, "#error")
        assert "epochs (train.epochs) = 0" in error and ">= 1" in error, error
        assert not app.tracker.jobs  # nothing started
        await pilot.press("escape")
        assert app.focused is None
        assert "s" in app.screen.active_bindings and "1" in app.screen.active_bindings
        app.screen.query_one("#f-lr").value = "fast"
        await pilot.press("s")
        assert "lr (train.lr) = 'fast'" in text_of(app, "#error") and "float" in text_of(app, "#error")
        assert not app.tracker.jobs


async def test_reopening_lands_on_the_last_screen_else_the_running_job(tmp_path):
    app = _app(tmp_path, "idle")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await until(pilot, lambda: app.current_mode == "alignment")
    info = json.loads((tmp_path / app.sid / "session.json").read_text())
    assert info["ui"]["last_screen"] == "alignment"
    again = WorkbenchApp(SessionStore(tmp_path), app.sid, state_config())
    async with again.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: again.current_mode == "alignment", what="landing on the last screen")


async def test_attach_lands_on_the_running_training_with_its_settings(tmp_path):
    sid = _app(tmp_path, "done", running_train=True).sid
    config = tmp_path / sid / "jobs" / "train-001" / "config.json"
    cfg = json.loads(config.read_text())
    cfg["train"]["epochs"] = 30
    config.write_text(json.dumps(cfg))
    app = WorkbenchApp(SessionStore(tmp_path), sid, state_config())  # the app reads the session's jobs when it is made
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.current_mode == "training", what="landing on Training")
        await wait_ingested(pilot, app)
        await until(pilot, lambda: app.screen.query_one("#f-epochs").value == "30", what="the run's 30 epochs")
        assert "form = the settings of train-001" in text_of(app, "#form-state")
        app.screen.query_one("#f-epochs").value = "7"
        await until(pilot, lambda: "EDITED" in text_of(app, "#form-state"))
        assert "epochs 7 (train-001 ran 30)" in text_of(app, "#form-state")


async def test_test_result_and_a_question_before_testing_a_failed_run(tmp_path):
    done = _app(tmp_path / "done", "done")
    async with done.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, done)
        await until(pilot, lambda: "acc 0.8421" in text_of(done, "#testline"), what="the test result")
        line = text_of(done, "#testline")
        assert "macro-F1 0.8397" in line and "evaluated 1×" in line and "best.ckpt, epoch 1 of train-001" in line
    failed = _app(tmp_path / "failed", "failed")
    async with failed.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, failed)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(failed.screen, ConfirmScreen), what="the question")
        assert "did not end ok" in str(failed.screen.query_one("#question").content)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(failed.screen, ConfirmScreen))
        assert "test-001" not in failed.tracker.jobs


async def test_export_defaults_to_the_ok_training_and_untrained_needs_a_yes(tmp_path):
    done = _app(tmp_path / "done", "done")
    async with done.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await wait_ingested(pilot, done)
        assert done.screen.query_one("#ex-from").value == "train-001"
        await until(pilot, lambda: "from train-001" in text_of(done, "#ex-runline"), what="the real source")
    idle = _app(tmp_path / "idle", "idle")
    async with idle.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await until(pilot, lambda: "fresh net (untrained)" in text_of(idle, "#ex-runline"))
        await pilot.press("r")
        await until(pilot, lambda: isinstance(idle.screen, ConfirmScreen), what="the untrained question")
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(idle.screen, ConfirmScreen))
        assert not idle.tracker.jobs


async def test_charts_say_what_they_show(tmp_path):
    app = _app(tmp_path, "done")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        view = app.views["training"]
        await until(pilot, lambda: "last %.3f" % view.loss[-1] in text_of(app, "#loss-label"))
        scale = view.loss_range()  # the y-range drawn, from the plotted series after compile and warm-up
        assert "y %.3f–%.3f" % (scale.lo, scale.hi) in text_of(app, "#loss-label")
        steps = list(view.step_ms)[-60:]
        label = text_of(app, "#step-label")
        assert "%.1f–%.1f" % (min(steps), max(steps)) in label
        assert "epoch 2 = the last epoch" in text_of(app, "#matrix-label")
        await pilot.press("b")
        await until(pilot, lambda: "epoch 1 = the best epoch" in text_of(app, "#matrix-label"))


async def test_eta_counts_the_validations_left(tmp_path):
    app = _app(tmp_path, "running")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        view = app.views["training"]
        marks = view.record.epoch_marks
        assert marks.step_s() is not None and marks.validation_s() is not None  # epoch 1 validated, 2 runs
        eta = view.eta_s()
        assert eta == eta_s(marks, view.record.last_t, 2, tail_steps(view.cfg)) and eta > 0
        await until(pilot, lambda: "ETA %ds" % eta in text_of(app, "#runline"))


async def test_small_terminal_one_key_per_pane_after_a_resize(tmp_path):
    app = _app(tmp_path, "done")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: app.screen.has_class("compact"), what="the compact layout")
        assert "best: epoch 1" in text_of(app, "#summary") and "newest: epoch 2" in text_of(app, "#summary")
        for key, shown in (("e", "#epochs"), ("m", "#matrix"), ("k", "#perclass"), ("u", "#curves")):
            await pilot.press(key)
            await until(
                pilot,
                lambda shown=shown: app.screen.query_one(shown).display and app.screen.query_one(shown).size.height,
                what="%s after %s" % (shown, key),
            )
        footer = [key for key, b in app.screen.active_bindings.items() if b.binding.show]
        assert footer[:7] == ["1", "2", "3", "4", "5", "6", "q"]  # first, so 80 columns never cut them


async def test_palette_has_the_workbench_actions(tmp_path):
    app = _app(tmp_path, "done")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        provider = WorkbenchCommands(app.screen)
        titles = [title for title, _, _ in provider.commands()]
        for wanted in (
            "Start a training run",
            "Evaluate on the test set",
            "Profile run",
            "Export the session record",
            "Switch to Session",
            "Toggle low bandwidth",
        ):
            assert wanted in titles
        for meaningless in ("Stop the followed training run (asks first)", "Resume the followed training run"):
            assert meaningless not in titles  # the followed run ended ok: nothing to stop or resume
        await pilot.press("ctrl+p")
        await pilot.press(*"switch to session")
        await until(
            pilot,
            lambda: any(c.option_count for c in app.screen.query(CommandList)),
            what="the palette to list the matching command",
        )
        await pilot.press("enter")
        await until(pilot, lambda: app.current_mode == "session", what="the palette to switch screens")


async def test_session_table_cuts_long_statuses_and_quit_text_fits_64_columns(tmp_path):
    app = _app(tmp_path, "failed")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        table = app.screen.query_one("#jobs")
        await until(pilot, lambda: table.row_count == 5)
        cell = str(table.get_row("export-001")[1])
        assert cell.endswith("…") and len(cell) <= 40, cell
        table.move_cursor(row=4)
        await until(pilot, lambda: "2 export check(s) failed: source" in text_of(app, "#selected"))
    busy = _app(tmp_path / "busy", "running")
    async with busy.run_test(size=(64, 24)) as pilot:
        await pilot.press("q")
        await until(
            pilot,
            lambda: (
                isinstance(busy.screen, QuitScreen)
                and all(label.size.width > 0 for label in busy.screen.query("Label"))
            ),
            what="the quit dialog laid out",
        )
        shown = " ".join(str(label.render()) for label in busy.screen.query("Label"))
        widths = [label.size.width for label in busy.screen.query("Label")]
        assert all(0 < w <= 60 for w in widths) and "or stop them?" in shown
        assert all(label.size.height >= 1 for label in busy.screen.query("Label"))
        await pilot.press("escape")
