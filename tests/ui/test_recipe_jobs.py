"""Overfit, resume and precision started from the TUI run with the frozen candidate's recipe (its run's
config.yaml, as the CLI's printed command passes it), not the app's settings, and the screen says which."""

from __future__ import annotations

from screens.app import WorkbenchApp
from screens.commands import WorkbenchCommands
from tests.support.pilot import until
from tests.support.recorded import OK_EXIT, wait_ingested
from tests.support.workflow import freeze, session, small_cfg, train_events
from workbench.config.layers import dump
from workbench.session.store import SessionStore

RECIPE = {"hidden": 8, "lr": 0.005, "batch_size": 32}  # the candidate run's; the app's form has 128, 0.001, 64


def _app(root, frozen: bool = True):
    sid = session(root, [("train-001", "train", train_events(), OK_EXIT)])
    run_cfg = small_cfg()
    run_cfg["model"]["hidden"] = RECIPE["hidden"]
    run_cfg["train"].update(lr=RECIPE["lr"], batch_size=RECIPE["batch_size"])
    (root / sid / "jobs" / "train-001" / "config.yaml").write_text(dump(run_cfg))
    if frozen:
        freeze(root, sid, "train-001")
    app = WorkbenchApp(SessionStore(root), sid, small_cfg())
    app.launcher = None
    started = []

    def start(sid, kind, cfg, command=None):
        started.append((kind, cfg))
        return root / sid / "jobs" / ("%s-001" % kind)  # no process: the test reads what would have run

    app.runner.start = start
    return app, started


def _recipe(cfg):
    return {"hidden": cfg["model"]["hidden"], "lr": cfg["train"]["lr"], "batch_size": cfg["train"]["batch_size"]}


async def test_the_palette_runs_the_checks_with_the_candidates_recipe_and_says_so(tmp_path):
    app, started = _app(tmp_path)
    notes = []
    app.notify = lambda message, **kw: notes.append(message)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        commands = {title: (run, help_text) for title, run, help_text in WorkbenchCommands(app.screen).commands()}
        for title in ("Run the overfit check", "Run the resume check", "Run the precision check"):
            run, help_text = commands[title]
            assert "with candidate #1's recipe (train-001)" in help_text
            run()
    assert [kind for kind, _ in started] == ["overfit", "resume", "precision"]
    assert all(_recipe(cfg) == RECIPE for _, cfg in started)
    assert any(
        "overfit-001 with candidate #1's recipe (train-001): name mlp, hidden 8, lr 0.005" in n for n in notes
    ), notes


async def test_the_next_step_list_names_the_recipe_and_enter_uses_it(tmp_path):
    app, started = _app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        steps = app.screen.query_one("#next")
        await until(pilot, lambda: steps.option_count > 0, what="the next steps")
        labels = [str(steps.get_option_at_index(i).prompt) for i in range(steps.option_count)]
        overfit = next((i for i, label in enumerate(labels) if "run overfit" in label), None)
        assert overfit is not None, labels
        assert "with candidate #1's recipe (train-001)" in labels[overfit]
        steps.focus()
        steps.highlighted = overfit
        await pilot.press("enter")
        await until(pilot, lambda: started, what="the overfit job")
    assert started[0][0] == "overfit" and _recipe(started[0][1]) == RECIPE


async def test_without_a_candidate_the_apps_settings_are_used_and_said(tmp_path):
    app, started = _app(tmp_path, frozen=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        commands = {title: (run, help_text) for title, run, help_text in WorkbenchCommands(app.screen).commands()}
        run, help_text = commands["Run the overfit check"]
        assert "with the app's settings (no candidate frozen)" in help_text
        run()
    assert _recipe(started[0][1]) == {"hidden": 128, "lr": 0.001, "batch_size": 64}


async def test_a_candidate_whose_run_config_is_gone_refuses_the_start_naming_the_file(tmp_path):
    app, started = _app(tmp_path)
    (tmp_path / app.sid / "jobs" / "train-001" / "config.yaml").unlink()
    notes = []
    app.notify = lambda message, **kw: notes.append(message)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        commands = {title: (run, help_text) for title, run, help_text in WorkbenchCommands(app.screen).commands()}
        run, help_text = commands["Run the overfit check"]
        assert "no recipe" in help_text and "config.yaml" in help_text
        run()
    assert not started  # never the app's settings in the candidate's place
    assert any("train-001/config.yaml" in n and "cannot read" in n for n in notes), notes
