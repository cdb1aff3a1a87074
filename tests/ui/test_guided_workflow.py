"""The TUI as one workflow: a start the device refuses creates no job, the form keeps what was asked, irreversible
acts ask first, a cancelled run resumes from the TUI, and the candidate and the data split carry across screens."""

from __future__ import annotations

from screens.app import WorkbenchApp
from screens.commands import WorkbenchCommands
from screens.dialogs import ConfirmScreen
from screens.render_svgs import _settled as settled  # the renderer's "mounted and nothing queued"
from screens.training import PANE_KEYS, PANES, TrainingScreen
from tests.support.pilot import until
from tests.support.recorded import text_of, wait_ingested
from tests.support.workflow import (
    CANCELLED_EXIT,
    FIXTURES,
    OK_EXIT,
    evaluation_events,
    freeze,
    hold_device,
    refused_exit,
    save_state,
    session,
    set_job_config,
    small_cfg,
    train_events,
)
from workbench.compare.inputs import candidate_runs
from workbench.session.store import SessionStore


def _app(root, jobs, target: str = "CPU", configs=None) -> WorkbenchApp:
    """The app on a recorded session; `configs` changes sections of a job's config.json first."""
    sid = session(root, jobs)
    for jid, sections in (configs or {}).items():
        set_job_config(root, sid, jid, **sections)
    return WorkbenchApp(SessionStore(root), sid, small_cfg(target))


def _jobs_on_disk(app) -> list:
    return sorted(p.name for p in (app.store.root / app.sid / "jobs").iterdir())


async def test_start_while_the_device_is_held_creates_no_job_and_keeps_following_the_run(tmp_path):
    app = _app(tmp_path, [("train-001", "train", train_events(cut_after_epoch=True), None)])
    hold_device(app.sid, "train-001")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.current_mode == "training", what="landing on the running training")
        await wait_ingested(pilot, app)
        await pilot.press("s")
        await until(pilot, lambda: app.last_refusal is not None, what="the start to be refused")
        assert _jobs_on_disk(app) == ["train-001"]  # no second job, not even a refused one
        assert app.views["training"].jid == "train-001"
        error = text_of(app, "#error")
        assert "device CPU:0 is held by job %s/train-001" % app.sid in error, error
        assert "train-001 goes on" in error


async def test_start_with_the_device_free_is_not_refused(tmp_path):
    app = _app(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    hold_device(app.sid, "train-001").write_text("job x/train-001 (pid 999999999)")  # its holder is gone
    assert app.runner.device_held("train", app.cfg) is None
    hold_device(app.sid, "train-001")
    assert "held by job" in app.runner.device_held("train", app.cfg)


async def test_a_refused_run_is_not_followed_nor_offered_and_its_reason_is_shown(tmp_path):
    app = _app(
        tmp_path,
        [
            ("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT),
            ("train-002", "train", [], refused_exit("job s/train-001 (pid 1)")),
        ],
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.current_mode == "environment")
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await until(pilot, lambda: "train-002 not started" in text_of(app, "#error"), what="the refusal")
        assert app.views["training"].jid == "train-001"
        assert "held by" in text_of(app, "#error") and "following train-001" in text_of(app, "#error")
        await pilot.press("5")
        await until(pilot, lambda: app.current_mode == "export")
        options = [value for _, value in app.screen.query_one("#ex-from")._options]
        assert "train-002" not in options and "train-001" in options
    picked = [path.name for path, _ in candidate_runs(app.store, app.sid)]
    assert picked == ["train-001"]


async def test_the_form_keeps_auto_when_the_run_asked_for_auto(tmp_path):
    app = _app(
        tmp_path,
        [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)],
        target="auto",
        configs={"train-001": {"device": {"target": "CPU", "requested": "auto", "why": "auto"}}},
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await until(pilot, lambda: app.screen.form_from == "train-001", what="the form filled from train-001")
        assert app.screen.query_one("#f-device").value == "auto"
        assert app.screen.form_overrides()["device"]["target"] == "auto"


async def test_a_second_test_set_evaluation_asks_first_and_says_what_it_costs(tmp_path):
    app = _app(
        tmp_path,
        [
            ("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT),
            ("test-001", "test", evaluation_events("train-001"), OK_EXIT),
        ],
    )
    started = []
    app.start_job = lambda kind, overrides=None: started.append((kind, overrides))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        question = str(app.screen.query_one("#question").content)
        assert "test-001" in question and "spent" in question
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert started == []
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: started, what="the evaluation after a yes")
    assert started == [("test", {"test": {"from": "train-001"}})]


async def test_the_first_test_set_evaluation_of_an_ok_run_does_not_ask(tmp_path):
    app = _app(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    started = []
    app.start_job = lambda kind, overrides=None: started.append((kind, overrides))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.press("t")
        await until(pilot, lambda: started, what="the evaluation")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_stop_asks_with_the_step_reached(tmp_path):
    app = _app(tmp_path, [("train-001", "train", train_events(cut_after_epoch=True), None)])
    stopped = []
    app.cancel_job = stopped.append
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.current_mode == "training")
        await wait_ingested(pilot, app)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        question = str(app.screen.query_one("#question").content)
        done = app.views["training"].progress["done"]
        assert "Stop train-001" in question and "step %d of" % done in question and "r on this screen" in question
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert stopped == []
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: stopped, what="the stop after a yes")
    assert stopped == ["train-001"]


async def test_resume_key_resumes_a_cancelled_run_with_its_own_settings(tmp_path):
    app = _app(
        tmp_path,
        [("train-001", "train", train_events(cut_after_epoch=True), CANCELLED_EXIT)],
        target="auto",
        configs={
            "train-001": {"device": {"target": "CPU", "requested": "auto", "id": 0}, "train": {"epochs": 4, "lr": 0.05}}
        },
    )
    save_state(tmp_path, app.sid, "train-001")
    started = []
    app.start_job = lambda kind, overrides=None: started.append((kind, overrides))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await until(pilot, lambda: "r resumes train-001" in text_of(app, "#error"), what="the resume hint")
        await pilot.press("r")
        await until(pilot, lambda: started, what="the resumed run")
    kind, overrides = started[0]
    assert kind == "train" and overrides["train"]["resume_from"] == "train-001"
    assert overrides["train"]["epochs"] == 4 and overrides["train"]["lr"] == 0.05
    assert overrides["device"]["target"] == "auto"


async def test_resume_key_says_why_when_there_is_no_saved_state(tmp_path):
    app = _app(tmp_path, [("train-001", "train", train_events(cut_after_epoch=True), CANCELLED_EXIT)])
    started = []
    app.start_job = lambda kind, overrides=None: started.append((kind, overrides))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.press("r")
        await until(pilot, lambda: any("saved no state" in str(n.message) for n in app._notifications))
    assert started == []


async def test_enter_on_a_session_row_opens_that_run_on_the_training_screen(tmp_path):
    app = _app(
        tmp_path,
        [
            ("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT),
            ("train-002", "train", FIXTURES / "train_ok.jsonl", OK_EXIT),
        ],
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        table = app.screen.query_one("#jobs")
        await until(pilot, lambda: table.row_count == 2)
        assert [str(table.get_row_at(i)[0]) for i in range(2)] == ["train-001", "train-002"]  # chronological
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("enter")
        await until(pilot, lambda: app.current_mode == "training", what="the Training screen")
        assert app.views["training"].jid == "train-001"
        await until(pilot, lambda: "train-001" in text_of(app, "#runline"))


async def test_the_pane_bar_names_the_keys_the_screen_binds():
    bound = {}
    for binding in TrainingScreen.BINDINGS:
        for key in binding.key.split(","):
            bound[key] = binding.action
    for pane, key in zip(PANES, PANE_KEYS):
        assert bound[key] == "pane('%s')" % pane, (key, pane)


async def test_training_uses_the_newest_ok_data_split_and_it_can_be_changed(tmp_path):
    app = _app(
        tmp_path,
        [
            ("data-001", "data", FIXTURES / "data_ok.jsonl", OK_EXIT),
            ("data-002", "data", FIXTURES / "data_ok.jsonl", OK_EXIT),
        ],
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        split = app.screen.query_one("#f-split")
        await until(pilot, lambda: split.value == "data-002", what="the newest data split chosen")
        assert app.screen.form_overrides()["data"]["from"] == "data-002"
        split.value = "own"
        assert app.screen.form_overrides()["data"]["from"] is None


async def test_the_candidate_is_named_on_each_screen_and_is_the_default_source(tmp_path):
    app = _app(
        tmp_path,
        [
            ("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT),
            ("train-002", "train", FIXTURES / "train_ok.jsonl", OK_EXIT),
        ],
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await until(pilot, lambda: "none frozen" in text_of(app, "CandidateLine"), what="no candidate yet")
        freeze(tmp_path, app.sid, "train-001", epoch=1, sha256="3f2a9c1e" + "0" * 56)
        await until(pilot, lambda: "#1 train-001 epoch 1 · sha 3f2a9c1e00" in text_of(app, "CandidateLine"))
        assert "train-002 shown: not frozen" in text_of(app, "CandidateLine")
        for key, mode, field in (("4", "alignment", "#al-weights"), ("5", "export", "#ex-from")):
            await pilot.press(key)
            await until(pilot, lambda mode=mode: app.current_mode == mode)
            await until(
                pilot, lambda field=field: app.screen.query_one(field).value == "train-001", what=mode + " source"
            )
            assert "train-001 epoch 1" in text_of(app, "CandidateLine")
            assert "not frozen" not in text_of(app, "CandidateLine")
        await pilot.press("6")
        await until(pilot, lambda: "train-001 epoch 1" in text_of(app, "CandidateLine"))


async def test_the_palette_runs_overfit_resume_precision_and_compare_in_the_screens_words(tmp_path):
    app = _app(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    started = []
    app.start_job = lambda kind, overrides=None: started.append(kind)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        titles = {title: run for title, run, _ in WorkbenchCommands(app.screen).commands()}
        assert "Stop the selected job (asks first)" in titles and not any("Session job" in t for t in titles)
        for title in ("Run the overfit check", "Run the resume check", "Run the precision check"):
            titles[title]()
        assert started == ["overfit", "resume", "precision"]
        titles["Compare two training runs"]()
        await until(pilot, lambda: app.current_mode == "training", what="the compare to open on Training")
        # the Training screen is built on this first visit: leaving before its widgets finished mounting tears the
        # app down under them (a Select mounting after its label was removed raises in Textual)
        await until(pilot, lambda: settled(app, app.screen), what="the Training screen mounted")


async def test_the_session_screen_lists_the_next_steps_and_enter_runs_one(tmp_path):
    app = _app(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)])
    started = []
    app.start_job = lambda kind, overrides=None: started.append((kind, overrides))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        steps = app.screen.query_one("#next")
        await until(pilot, lambda: steps.option_count > 0, what="the next steps")
        labels = [str(steps.get_option_at_index(i).prompt) for i in range(steps.option_count)]
        overfit = next((i for i, label in enumerate(labels) if "run overfit" in label), None)
        assert overfit is not None, labels
        assert any("run resume" in label for label in labels) and any("run precision" in label for label in labels)
        steps.focus()
        steps.highlighted = overfit
        await pilot.press("enter")
        await until(pilot, lambda: started, what="the overfit job")
        assert started[0][0] == "overfit"
        test = next(i for i, label in enumerate(labels) if "t on the Training screen" in label)
        steps.highlighted = test
        await pilot.press("enter")
        await until(pilot, lambda: len(started) == 2, what="the test-set evaluation through Training's key")
        assert app.current_mode == "training" and started[1] == ("test", {"test": {"from": "train-001"}})
