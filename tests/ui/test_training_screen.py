"""The Training screen from recorded real runs: idle, mid-epoch, finished, failed; the run keys."""

from __future__ import annotations

import json
import os

import pytest

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, wait_ingested
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

SID = "20240101-000000-7a7a"
FAILED_EXIT = dict(OK_EXIT, returncode=1)


def _cfg():
    cfg = defaults()
    cfg["data"]["source"] = "synthetic"
    cfg["train"].update(epochs=2, warmup_steps=3)
    return cfg


def _events(name):
    return [json.loads(line) for line in open(FIXTURES / name)]


def _app(tmp_path, monkeypatch, state: str) -> WorkbenchApp:
    """The app on a session whose train job is in the given state."""
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    jobs = []
    if state == "finished":
        jobs = [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)]
    elif state == "failed":
        jobs = [("train-001", "train", FIXTURES / "train_device_error.jsonl", FAILED_EXIT)]
    elif state == "mid-epoch":
        events = _events("train_ok.jsonl")
        cut = next(i for i, e in enumerate(events) if e["type"] == "epoch") + 12
        jobs = [("train-001", "train", events[:cut], None)]
    sid = make_recorded_session(tmp_path, jobs, cfg=defaults() if state == "failed" else _cfg())
    if state == "mid-epoch":  # a live pid stands for the job, so the job reads as running
        job_dir = tmp_path / sid / "jobs" / "train-001"
        (job_dir / "pids.json").write_text(
            json.dumps({"supervisor": os.getpid(), "job": os.getpid(), "pgid": os.getpid()})
        )
    return WorkbenchApp(SessionStore(tmp_path), sid, _cfg())


@pytest.mark.parametrize(
    "state,size",
    [
        ("idle", (120, 36)),
        ("mid-epoch", (120, 36)),
        ("finished", (120, 36)),
        ("failed", (120, 36)),
        ("finished", (80, 24)),
    ],
)
def test_snapshot(snap_compare, tmp_path, monkeypatch, state, size):
    app = _app(tmp_path, monkeypatch, state)

    async def show(pilot):
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=show)


async def test_view_follows_recorded_run(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "finished")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        view = app.views["training"]
        assert [e["epoch"] for e in view.epochs] == [1, 2]
        assert view.best is not None and view.best["is_best"]
        assert len(view.compile_ms) == 2  # first step and the tail-batch recompile, not in the steady line
        assert view.warmup_seen == 3
        assert view.perf["steady"]["n"] > 0
        assert {"effective-config", "device-activity"} <= set(view.checks)
        assert view.checks["device-activity"]["status"] == "not-run"


async def test_failed_device_shows_error_and_hint(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "failed")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await until(pilot, lambda: app.screen.query_one("#error").display, timeout_s=20)
        view = app.views["training"]
        assert view.error["type"] == "DeviceError" and "Ascend" in view.error["message"]
        assert view.steps_seen == 0


async def test_start_key_starts_a_train_job_with_the_form(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "idle")
    started = []
    monkeypatch.setattr(app, "start_job", lambda kind, overrides=None: started.append((kind, overrides)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await settled(pilot)
        app.screen.query_one("#f-epochs").value = "3"
        await pilot.press("s")
        await until(pilot, lambda: started, what="the start key to start a job")
    kind, overrides = started[0]
    assert kind == "train" and overrides["train"]["epochs"] == 3 and overrides["model"]["name"] == "mlp"
