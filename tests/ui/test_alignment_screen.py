"""The Alignment screen fed by recorded align jobs: snapshots, selection, the run form."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input

from screens.app import WorkbenchApp
from tests.support.events import assert_events_valid
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, wait_ingested
from workbench.config.layers import defaults
from workbench.run.runner import JobRunner
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json

SID = "20240101-000000-a1a1"
FAILED_EXIT = dict(OK_EXIT, returncode=1)
RECORDED = {
    "pass": ("align_pass.jsonl", OK_EXIT),
    "fail": ("align_fail.jsonl", OK_EXIT),  # differing tensors are a finding: the job itself ended ok
    "blocked": ("align_blocked.jsonl", FAILED_EXIT),
}


def _app(tmp_path, monkeypatch, name: str) -> WorkbenchApp:
    """The app on a session replaying one recorded align job (fixed session id for stable snapshots)."""
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    events, exit_record = RECORDED[name]
    sid = make_recorded_session(tmp_path, [("align-001", "align", FIXTURES / events, exit_record)])
    return WorkbenchApp(SessionStore(tmp_path), sid, defaults())


async def _show_alignment(pilot) -> None:
    await pilot.press("4")
    await wait_ingested(pilot, pilot.app)
    view = pilot.app.views["alignment"]
    await until(pilot, lambda: view.status and pilot.app.screen.drawn_version == view.version)
    await settled(pilot)


@pytest.mark.parametrize(
    "name,size",
    [
        pytest.param("pass", (120, 36), id="pass-120x36"),
        pytest.param("fail", (120, 36), id="first-failure-120x36"),
        pytest.param("fail", (80, 24), id="first-failure-80x24"),
        pytest.param("blocked", (120, 36), id="blocked-120x36"),
    ],
)
def test_snapshot(snap_compare, tmp_path, monkeypatch, name, size):
    assert snap_compare(_app(tmp_path, monkeypatch, name), terminal_size=size, run_before=_show_alignment)


async def test_all_passing_run_shows_every_tensor_and_no_divergence(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "pass")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_alignment(pilot)
        view = app.views["alignment"]
        assert view.verdict == "observed-pass" and view.first_failure is None
        table = app.screen.query_one("#tensors", DataTable)
        assert table.row_count == len(view.diffs) == 17
        assert view.selected == "logits"  # nothing failed: the logits are shown first
        assert "every tensor within tolerance" in str(app.screen.query_one("#divergence").render())


async def test_first_failure_is_selected_and_other_rows_can_be_inspected(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "fail")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_alignment(pilot)
        view = app.views["alignment"]
        first = view.first_failure
        assert first is not None
        first_name = view.diffs[first]["name"]
        assert view.selected == first_name
        table = app.screen.query_one("#tensors", DataTable)
        assert table.cursor_row == first
        detail = str(app.screen.query_one("#detail").render())
        assert first_name in detail and "worst element" in detail and "|diff| histogram" in detail
        table.focus()
        await pilot.press("ctrl+end")
        last = view.diffs[-1]["name"]
        await until(pilot, lambda: view.selected == last and last in str(app.screen.query_one("#detail").render()))
        await pilot.press("f")  # back to the first failure
        await until(pilot, lambda: view.selected == first_name)


async def test_blocked_candidate_shows_the_device_message_and_no_table(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "blocked")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_alignment(pilot)
        view = app.views["alignment"]
        assert view.side_status("cand") == "blocked" and view.diffs == []
        assert app.screen.query_one("#tensors", DataTable).row_count == 0
        panel = str(app.screen.query_one("#path-cand").render())
        assert "Unsupported device target Ascend" in panel
        assert "nothing compared" in str(app.screen.query_one("#divergence").render())


async def test_preset_and_tolerance_go_into_the_started_job(tmp_path):
    store = SessionStore(tmp_path)
    config = defaults()
    config["align"]["weights_from"] = "init"  # a fresh session has no frozen candidate: align on initial weights
    app = WorkbenchApp(store, None, config)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await settled(pilot)
        await pilot.press("p", "p")  # second preset: fp32 vs amp-O2
        app.screen.query_one("#atol", Input).value = "0.001"
        overrides = app.screen.form_overrides()
        assert overrides["align"]["reference"] == {"target": "CPU", "mode": "graph", "precision": "fp32"}
        assert overrides["align"]["candidate"] == {"target": "CPU", "mode": "graph", "precision": "amp-O2"}
        assert overrides["align"]["atol"] == 0.001 and overrides["align"]["rtol"] is None
        app.screen.query_one("#atol", Input).value = "abc"
        app.screen.action_run_align()  # a bad tolerance is refused by the config check, nothing starts
        assert app.sid is None or not store.jobs(app.sid)
        app.screen.query_one("#atol", Input).value = "0.001"
        app.screen.query_one("#tensors", DataTable).focus()
        await pilot.press("r")
        await until(pilot, lambda: app.sid is not None and store.jobs(app.sid))
        job_dir = store.jobs(app.sid)[0]
        cfg = read_json(job_dir / "config.json")
        assert cfg["align"]["candidate"]["precision"] == "amp-O2" and cfg["align"]["atol"] == 0.001
        assert cfg["align"]["weights_from"] == "init"
        JobRunner.cancel(job_dir)  # a real job was started: stop it (its whole process group)
        await until(pilot, lambda: job_status(job_dir).done, timeout_s=60)
        assert job_status(job_dir).state == "cancelled"
    if (job_dir / "events.jsonl").exists():  # a cancel can land before the job process wrote anything
        assert_events_valid(job_dir)
