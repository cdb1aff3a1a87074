"""The Export screen fed by recorded export jobs: snapshots, hashes, failed reload, the run key."""

from __future__ import annotations

import re

import pytest
from textual.widgets import DataTable, Select, TextArea

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, text_of, wait_ingested
from workbench.config.layers import defaults
from workbench.events.protocol import EventReader, read_all
from workbench.fold.tracker import TrackedJob
from workbench.run.runner import JobRunner
from workbench.session.store import JobStatus, SessionStore, job_status
from workbench.system.atomic import read_json
from workbench.views.export import FRESH, default_choice, export_overrides, train_choices

SID = "20240101-000000-e5e5"
FAILED_EXIT = dict(OK_EXIT, returncode=1)
TRAIN = ("train-001", "train", FIXTURES / "train_for_export.jsonl", OK_EXIT)
RECORDED = {
    "pass": ("export_ok.jsonl", OK_EXIT),
    "failed-reload": ("export_failed_reload.jsonl", FAILED_EXIT),
}


def _app(tmp_path, monkeypatch, name: str, with_export: bool = True) -> WorkbenchApp:
    """The app on a session with a recorded train job and (optionally) one recorded export job."""
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    jobs = [TRAIN]
    if with_export:
        events, exit_record = RECORDED[name]
        jobs.append(("export-001", "export", FIXTURES / events, exit_record))
    sid = make_recorded_session(tmp_path, jobs)
    return WorkbenchApp(SessionStore(tmp_path), sid, defaults())


async def _show_export(pilot) -> None:
    await pilot.press("5")
    await wait_ingested(pilot, pilot.app)
    view = pilot.app.views["export"]
    await until(pilot, lambda: view.state and pilot.app.screen.drawn_version == view.version, timeout_s=30)
    await settled(pilot)


@pytest.mark.parametrize("name,size", [("pass", (120, 36)), ("pass", (80, 24)), ("failed-reload", (120, 36))])
def test_snapshot(snap_compare, tmp_path, monkeypatch, name, size):
    assert snap_compare(_app(tmp_path, monkeypatch, name), terminal_size=size, run_before=_show_export)


async def test_all_passing_export_lists_checks_and_full_hashes(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "pass")
    events = read_all(str(FIXTURES / "export_ok.jsonl"))
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_export(pilot)
        view = app.views["export"]
        assert view.state == "ok"
        table = app.screen.query_one("#ex-checks", DataTable)
        ids = [str(ev["id"]) for ev in view.load_checks()]
        assert ids == [
            "ckpt-reload",
            "mindir-export",
            "mindir-load",
            "mindir-b64",
            "mindir-b1",
            "mindir-b32",
            "lite-cpu",
            "lite-target",
        ]
        assert table.row_count == len(ids)
        verdicts = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert verdicts == ["PASS"] * 6 + ["NOT RUN"] * 2
        assert [str(table.get_row_at(i)[1]) for i in range(3, 6)] == ["b64", "b1", "b32"]
        assert str(table.get_row_at(0)[3]) == "0"  # the checkpoint reload diff, exactly zero
        # Every artefact's full SHA-256, one per line, in `sha256sum -c` format.
        artifacts = [ev for ev in events if ev["type"] == "artifact"]
        lines = app.screen.query_one("#ex-hashes", TextArea).text.splitlines()
        assert lines == ["%s  %s" % (ev["sha256"], ev["path"]) for ev in artifacts]
        assert all(re.fullmatch(r"[0-9a-f]{64}  \S+", line) for line in lines)
        reference = text_of(app, "#ex-reference")
        assert "23 covering 10/10 classes" in reference
        summary = [ev for ev in events if ev["type"] == "result"][0]["summary"]
        for pair in summary["reference"]["confused_pairs"]:
            assert "%s→%s (%d)" % (pair["true_class"], pair["pred_class"], pair["count"]) in reference
        picker = app.screen.query_one("#ex-from", Select)
        assert picker.value == "train-001"  # the latest training job that ended ok


async def test_failed_reload_shows_the_unloaded_parameters(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "failed-reload")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_export(pilot)
        view = app.views["export"]
        assert view.state == "failed"
        reload = view.checks["ckpt-reload"]
        assert reload["status"] == "observed-fail"
        table = app.screen.query_one("#ex-checks", DataTable)
        assert str(table.get_row_at(0)[2]) == "FAIL"
        detail = text_of(app, "#ex-detail")
        for name in ("1.weight", "3.bias", "dense1.weight", "dense2.bias"):
            assert name in detail
        assert "hint:" in detail
        runline = text_of(app, "#ex-runline")
        assert "ExportCheckFailed" in runline
        assert "no artefacts" not in app.screen.query_one("#ex-hashes", TextArea).text
        assert "not written yet" in text_of(app, "#ex-reference")


async def test_r_runs_an_export_from_the_picked_training_job(tmp_path, monkeypatch):
    """A real export job starts with export.from set; the recorded training job has no checkpoint, so it
    fails, and says which file is missing."""
    app = _app(tmp_path, monkeypatch, "pass", with_export=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await wait_ingested(pilot, app)
        picker = app.screen.query_one("#ex-from", Select)
        await until(pilot, lambda: picker.value == "train-001", timeout_s=30)
        assert [value for _, value in picker._options if value is not Select.BLANK] == ["train-001", FRESH]
        await pilot.press("r")
        job_dir = tmp_path / SID / "jobs" / "export-001"
        await until(pilot, lambda: (job_dir / "config.json").exists(), timeout_s=30)
        assert read_json(job_dir / "config.json")["export"]["from"] == "train-001"
        assert JobRunner.wait(job_dir, timeout_s=300)
        assert job_status(job_dir).state == "failed"
        view = app.views["export"]
        await until(pilot, lambda: view.jid == "export-001" and view.error is not None, timeout_s=30)
        assert "best.ckpt does not exist" in view.error["message"]


def test_picker_offers_train_jobs_newest_first_and_defaults_to_the_latest_ok_one(tmp_path):
    def job(jid: str, kind: str, state: str, reason: str = "", ckpt: bool = False) -> TrackedJob:
        if ckpt:
            (tmp_path / jid / "artifacts").mkdir(parents=True)
            (tmp_path / jid / "artifacts" / "best.ckpt").write_bytes(b"weights")
        return TrackedJob(
            tmp_path / jid,
            {"kind": kind},
            EventReader(str(tmp_path / jid / "events.jsonl")),
            JobStatus(state, reason, None),
        )

    jobs = [
        job("train-001", "train", "ok"),
        job("data-001", "data", "ok"),
        job("train-002", "train", "ok"),
        job("train-003", "train", "failed", "returncode 1", ckpt=True),  # failed after an epoch: it has weights
        job("train-004", "train", "cancelled", "cancelled"),  # cancelled before any epoch: nothing to export
        job("train-005", "train", "failed", "refused: device CPU:0 is held by job x/train-003 (pid 1)"),
    ]
    assert [value for _, value in train_choices(jobs)] == ["train-003", "train-002", "train-001", FRESH]
    assert default_choice(jobs) == "train-002"
    assert default_choice(jobs, candidate_run="train-001") == "train-001"  # the frozen candidate first
    assert default_choice(jobs, candidate_run="train-004") == "train-002"  # a candidate that is not listed: no
    assert default_choice([job("train-001", "train", "failed")]) == FRESH
    assert export_overrides("train-002") == {"export": {"from": "train-002"}}
    assert export_overrides(FRESH) == {"export": {"from": None}}
