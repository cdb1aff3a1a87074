"""How long a running job has run is read from the monotonic clock: a wall-clock step cannot change it."""

from __future__ import annotations

import os
import time

import pytest

from workbench.session import store
from workbench.session.store import job_status
from workbench.system import monotonic
from workbench.system.atomic import write_json

DAY_S = 86400.0


def _job(tmp_path, age_s: float, supervisor=None):
    job_dir = tmp_path / "drill-001"
    job_dir.mkdir()
    started = monotonic.stamp()
    started["t"] -= age_s
    write_json(job_dir / "job.json", {"created": time.time() - age_s, "created_monotonic": started})
    if supervisor:
        write_json(job_dir / "pids.json", {"supervisor": supervisor, "job": supervisor, "pgid": supervisor})
    return job_dir


@pytest.mark.parametrize("step_s", [DAY_S, -DAY_S])
def test_a_running_jobs_time_so_far_ignores_a_wall_clock_step(tmp_path, monkeypatch, step_s):
    job_dir = _job(tmp_path, 5.0, supervisor=os.getpid())
    true_time = time.time
    monkeypatch.setattr(store.time, "time", lambda: true_time() + step_s)
    status = job_status(job_dir)
    assert status.state == "running" and 5.0 <= status.duration_s < 60, status


def test_a_clock_set_back_does_not_keep_a_job_that_never_started_starting(tmp_path, monkeypatch):
    job_dir = _job(tmp_path, 30.0)  # no pids.json: its supervisor never got to start the job
    true_time = time.time
    monkeypatch.setattr(store.time, "time", lambda: true_time() - DAY_S)
    status = job_status(job_dir)
    assert status.state == "crashed" and status.reason.startswith("supervisor lost"), status


def test_stamps_of_another_boot_do_not_compare():
    mine = monotonic.stamp()
    assert monotonic.elapsed(dict(mine, boot="another-boot")) is None
    assert monotonic.elapsed({"boot": mine["boot"], "t": float("nan")}) is None
    assert monotonic.elapsed("garbage") is None
    assert 0 <= monotonic.elapsed(mine) < 60
