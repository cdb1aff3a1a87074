"""Session screen: snapshots of jobs with their status and reason; the `e` export, written and failing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.widgets import Static

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import OK_EXIT, make_recorded_session, wait_ingested
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

SID = "20240101-000000-5e55"
DEVICE = {"requested": "auto", "resolved": "CPU", "id": 0, "why": "auto: recorded"}


def _drill(n_steps: int, finished: bool):
    events = [
        {
            "v": 1,
            "seq": 0,
            "t": 1.7e9,
            "type": "started",
            "kind": "drill",
            "pid": 4242,
            "python": "python3",
            "argv": [],
            "version": "0.1.0",
            "device": DEVICE,
            "mode": "drill",
        }
    ]
    for i in range(n_steps):
        events.append(
            {
                "v": 1,
                "seq": 1 + i,
                "t": 1.7e9 + i,
                "type": "step",
                "epoch": 1,
                "step": i + 1,
                "loss": 1.0 / (i + 1),
                "step_ms": 10.0,
                "batch_size": 64,
            }
        )
    if finished:
        events.append(
            {"v": 1, "seq": 1 + n_steps, "t": 1.7e9 + n_steps, "type": "finished", "status": "ok", "error": None}
        )
    return events


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_snapshot(snap_compare, tmp_path, monkeypatch, size):
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    crashed = dict(OK_EXIT, returncode=-11, signal="SIGSEGV", duration_s=41.0)
    sid = make_recorded_session(
        tmp_path,
        [("drill-001", "drill", _drill(100, True), OK_EXIT), ("drill-002", "drill", _drill(40, False), crashed)],
    )
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())

    async def show(pilot):
        await pilot.press("6")
        await wait_ingested(pilot, app)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=show)


@contextmanager
def unwritable(folder: Path):
    """Make `folder` refuse new entries for real: chmod for a user; root ignores modes, so chattr +i."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    made = (
        subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
        if shutil.which("chattr")
        else None
    )
    if made is None or made.returncode != 0:
        pytest.skip("running as root without chattr +i here: no way to make a folder unwritable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def _export_status(app) -> str:
    widget = app.screen.query_one("#export-status", Static)
    return widget.content.plain if widget.display else ""


async def test_export_key_writes_the_record_with_screenshots(tmp_path):
    sid = make_recorded_session(tmp_path, [("drill-001", "drill", _drill(20, True), OK_EXIT)])
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await until(pilot, lambda: "drill-001" in app.views["session"].rows, what="the job listed")
        assert not app.screen.query_one("#export-status").display  # hidden until an export: snapshots unchanged
        await pilot.press("e")
        await until(
            pilot,
            lambda: "session record written to" in _export_status(app),
            timeout_s=180,
            what="the export to finish",
        )
        out = tmp_path / sid / "export"
        assert str(out) in _export_status(app)
        shots = json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["screenshots"]
        assert shots["error"] is None and "screenshots/session.svg" in shots["files"]
        assert (out / ("%s.tar.gz" % sid)).is_file()


async def test_a_failing_export_is_shown_and_the_app_stays_up(tmp_path):
    sid = make_recorded_session(tmp_path, [("drill-001", "drill", _drill(20, True), OK_EXIT)])
    session_dir = tmp_path / sid
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())
    with unwritable(session_dir):  # the export stages its folder beside the record's: that write fails
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("6")
            await until(pilot, lambda: "drill-001" in app.views["session"].rows, what="the job listed")
            await pilot.press("e")
            await until(
                pilot,
                lambda: "session export failed" in _export_status(app),
                timeout_s=60,
                what="the failure on the screen",
            )
            status = _export_status(app)
            assert "PermissionError" in status and str(session_dir) in status  # what failed, and where
            assert "(writing the record to %s)" % (session_dir / "export") in status
            await until(pilot, lambda: "PermissionError" in app.export_screenshot(), what="the error drawn")
            assert app.is_running and app.return_code is None
            await pilot.press("1")  # the app still answers keys
            await until(pilot, lambda: app.current_mode == "environment", what="switching screens")
    assert not (session_dir / "export").exists()
