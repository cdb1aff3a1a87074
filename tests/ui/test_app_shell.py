"""Pilot tests of the app shell: modes, the Session screen, quitting with a job running."""

from screens.app import WorkbenchApp
from screens.dialogs import QuitScreen
from tests.support.pilot import settled, until
from workbench.config.layers import defaults
from workbench.run.runner import JobRunner
from workbench.session.store import SessionStore, job_status

MODES = ["environment", "data", "training", "alignment", "export", "session"]


def _drill(store, sid, **drill):
    cfg = defaults()
    cfg["drill"].update(drill)
    return JobRunner(store).start(sid, "drill", cfg)


async def test_switches_through_all_six_screens(tmp_path):
    store = SessionStore(tmp_path)
    app = WorkbenchApp(store, None, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        for key, mode in zip("123456", MODES):
            await pilot.press(key)
            await settled(pilot)
            assert app.current_mode == mode
        assert app.sid is None  # opening the app alone creates no session


async def test_session_screen_lists_jobs_with_reason(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    ok = _drill(store, sid, steps=3)
    crashed = _drill(store, sid, steps=5, crash_signal="SIGSEGV", crash_after=2)
    JobRunner.wait(ok, 30)
    JobRunner.wait(crashed, 30)
    app = WorkbenchApp(store, sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        view = app.views["session"]
        await until(pilot, lambda: len(view.rows) == 2 and all(r.state != "running" for r in view.rows.values()))
        assert view.rows[ok.name].state == "ok"
        assert view.rows[crashed.name].state == "crashed"
        assert "SIGSEGV" in view.rows[crashed.name].reason
        await until(pilot, lambda: "SIGSEGV" in app.export_screenshot())


async def _quit_with_running_drill(tmp_path, button: str):
    """Start a long drill, open the app, press q and choose `button` in the quit dialog; return the job folder."""
    store = SessionStore(tmp_path)
    sid = store.create()
    job = _drill(store, sid, steps=2000, rate=50)
    app = WorkbenchApp(store, sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.tracker.running())
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.click(button)
        await until(pilot, lambda: app._exit, what="the app to act on the choice and exit")
    return job


async def test_quit_with_running_job_can_leave_it_running(tmp_path):
    job = await _quit_with_running_drill(tmp_path, "#leave")
    assert job_status(job).state == "running"
    JobRunner.cancel(job)
    JobRunner.wait(job, 30)
    assert job_status(job).state == "cancelled"


async def test_quit_with_running_job_can_stop_it(tmp_path):
    job = await _quit_with_running_drill(tmp_path, "#stop")
    JobRunner.wait(job, 30)
    assert job_status(job).state == "cancelled"


async def test_low_bandwidth_mode_toggles_theme_and_rate(tmp_path):
    cfg = defaults()
    cfg["ui"]["low_bandwidth"] = True
    app = WorkbenchApp(SessionStore(tmp_path), None, cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        assert app.theme == "ansi-dark" and app.refresh_hz == 1.0
        await pilot.press("ctrl+b")
        await settled(pilot)
        assert app.theme == "textual-dark" and app.refresh_hz == cfg["ui"]["refresh_hz"]
