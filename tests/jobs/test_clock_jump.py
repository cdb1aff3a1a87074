"""A wall-clock step while a job runs: its duration comes from the monotonic clock, never from the dates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import PROJECT_ROOT
from tests.support.drills import newest_job, sets
from workbench.session.store import job_status
from workbench.system.atomic import read_json

WALLCLOCK = Path(__file__).resolve().parents[1] / "support" / "wallclock"
DAY_S = 86400


@pytest.mark.parametrize("jump_s", [DAY_S, -DAY_S], ids=["forward-a-day", "back-a-day"])
def test_a_clock_step_during_a_job_does_not_change_its_duration(run_cli, sessions, jump_s):
    env = {
        "PYTHONPATH": os.pathsep.join([str(WALLCLOCK), str(PROJECT_ROOT)]),
        "MS_WORKBENCH_TEST_WALL_JUMP_S": str(jump_s),
        "MS_WORKBENCH_TEST_WALL_JUMP_AFTER_S": "0.5",
    }
    proc = run_cli(
        "run",
        "drill",
        "--sessions",
        sessions,
        *sets("drill.steps=20", "drill.rate=10", "drill.crash_signal=SIGKILL", "drill.crash_after=20"),
        env=env,
        timeout=60,
    )
    job_dir = newest_job(sessions)
    record = read_json(job_dir / "exit.json")
    assert abs(record["ended_at"] - record["started_at"] - jump_s) < 60, "the wall clock did not step in the test"
    status = job_status(job_dir)
    assert status.state == "crashed" and status.duration_s is not None, status.label()
    assert 1.0 <= status.duration_s < 60, status.label()
    assert "after 8" not in status.label() and "after -" not in status.label(), status.label()
    assert status.label() in proc.stdout, proc.stdout
