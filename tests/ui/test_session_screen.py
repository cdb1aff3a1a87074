"""Session screen snapshots: jobs with their status and reason, the selected job's events."""

from __future__ import annotations

import pytest

from tests.ui.recorded import OK_EXIT, make_recorded_session, wait_ingested
from workbench.app import WorkbenchApp
from workbench.config import defaults
from workbench.session import SessionStore

SID = "20240101-000000-5e55"
DEVICE = {"requested": "auto", "resolved": "CPU", "id": 0, "why": "auto: recorded"}


def _drill(n_steps: int, finished: bool):
    events = [{"v": 1, "seq": 0, "t": 1.7e9, "type": "started", "kind": "drill", "pid": 4242, "python": "python3",
               "argv": [], "version": "0.1.0", "device": DEVICE, "mode": "drill"}]
    for i in range(n_steps):
        events.append({"v": 1, "seq": 1 + i, "t": 1.7e9 + i, "type": "step", "epoch": 1, "step": i + 1,
                       "loss": 1.0 / (i + 1), "step_ms": 10.0, "batch_size": 64})
    if finished:
        events.append({"v": 1, "seq": 1 + n_steps, "t": 1.7e9 + n_steps, "type": "finished", "status": "ok",
                       "error": None})
    return events


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_snapshot(snap_compare, tmp_path, monkeypatch, size):
    monkeypatch.setattr("workbench.session.new_sid", lambda now=None: SID)
    crashed = dict(OK_EXIT, returncode=-11, signal="SIGSEGV", duration_s=41.0)
    sid = make_recorded_session(tmp_path, [("drill-001", "drill", _drill(100, True), OK_EXIT),
                                           ("drill-002", "drill", _drill(40, False), crashed)])
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())

    async def show(pilot):
        await pilot.press("6")
        await wait_ingested(pilot, app)
        await pilot.pause(0.6)

    assert snap_compare(app, terminal_size=size, run_before=show)
