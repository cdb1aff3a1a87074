"""The monitor bench's sliced job arm: two real train jobs at once, run in turns, and nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stopped_or_alive_under(folder: Path) -> list:
    """Processes whose command line names `folder` (the bench's jobs run from there), with their state."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(folder) in cmd and state != "Z":
            found.append((proc.name, state, cmd[:200]))
    return found


def _bench(tmp_path: Path, *args: str) -> tuple:
    """(the bench's scratch folder, its command, its environment): two rounds of the sliced job arm."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = [sys.executable, str(ROOT / "bench" / "monitor_overhead.py"), "--arms", "job-sliced", "--rounds", "2"]
    return scratch, argv + list(args), dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(ROOT))


def test_the_sliced_job_arm_times_two_monitored_and_plain_jobs_and_leaves_nothing_stopped(tmp_path):
    scratch, argv, env = _bench(tmp_path, "--job-epochs", "2", "--job-limit", "640", "--slice", "0.1")
    proc = subprocess.run(argv, cwd=str(tmp_path), capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])[0]
    assert got["arm"] == "job-sliced" and got["rounds"] == 2 and len(got["ratios"]) == 2
    assert all(0.2 < r < 5.0 for r in got["ratios"])  # both jobs' steady epochs were given running time
    assert got["verdict"] in ("met", "not met", "not settled")
    assert "round 2: steady running time" in proc.stdout
    assert not _stopped_or_alive_under(scratch)  # no job left stopped or running
    assert not list(scratch.iterdir())  # each round's folder (sessions, locks) removed


def test_a_sliced_round_cut_short_leaves_no_job_stopped_or_running(tmp_path):
    """Ctrl+C while both jobs are alive (one stopped): every job goes on, is asked to stop, and its folder goes."""
    import signal
    import time

    from tests.support.waiting import wait_for

    scratch, argv, env = _bench(tmp_path, "--job-epochs", "4", "--job-limit", "6400")
    proc = subprocess.Popen(
        argv,
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for(lambda: len(list(scratch.glob("*/*/jobs/*/pids.json"))) == 2, timeout_s=120, what="both jobs started")
        time.sleep(0.5)  # turns under way
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    wait_for(lambda: not _stopped_or_alive_under(scratch), timeout_s=30, what="no job left under the bench's folder")
    assert not list(scratch.iterdir())
