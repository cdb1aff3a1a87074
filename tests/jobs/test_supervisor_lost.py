"""Issue 18.1 and 18.6: a supervisor that dies takes its job along; device locks are machine-wide."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.drills import live_group_members, pid_running, sets, start_detached, step_count
from workbench.run.runner import JobRunner
from workbench.session.store import job_status
from workbench.system.atomic import read_json, write_json

GRACE_S = 1.0


def lock_is_free(*lock_dirs: Path) -> bool:
    """True when every lock file in the folders can be flock'ed at once (nobody holds it)."""
    files = [p for d in lock_dirs for p in d.glob("*.lock")]
    assert files, "no lock file in %s" % (lock_dirs,)
    for path in files:
        fd = os.open(str(path), os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            assert exc.errno in (errno.EAGAIN, errno.EACCES)
            return False
        finally:
            os.close(fd)
    return True


def test_job_dies_with_its_killed_supervisor(run_cli, sessions, wait_for, private_lock_dir):
    job_dir = start_detached(
        run_cli, sessions, "drill.device=true", "drill.steps=1", "drill.hang=true", "limits.grace_s=%s" % GRACE_S
    )
    wait_for(lambda: (job_dir / "child.pid").exists(), 10, what="the drill to hang")
    pids = read_json(job_dir / "pids.json")
    grandchild = int((job_dir / "child.pid").read_text())
    assert not lock_is_free(private_lock_dir, sessions / ".locks")
    t_kill = time.monotonic()
    os.kill(pids["supervisor"], signal.SIGKILL)  # as the OOM killer would
    wait_for(
        lambda: not pid_running(pids["job"]) and not pid_running(grandchild) and not live_group_members(pids["pgid"]),
        GRACE_S + 1,
        what="the orphaned job to die",
    )
    assert lock_is_free(private_lock_dir, sessions / ".locks")
    assert time.monotonic() - t_kill <= GRACE_S + 1
    assert not (job_dir / "exit.json").exists()
    status = job_status(job_dir)
    assert status.state == "crashed" and status.reason.startswith("supervisor lost ("), status.label()
    assert "supervisor pid %d gone without exit.json" % pids["supervisor"] in status.reason
    proc = run_cli("sessions", "--json", "--sessions", sessions, timeout=30)
    job = json.loads(proc.stdout)[0]["jobs"][0]
    assert job["status"] == "crashed" and job["reason"].startswith("supervisor lost ("), job
    proc = run_cli("watch", str(job_dir.parent.parent.name) + "/" + job_dir.name, "--sessions", sessions, timeout=30)
    assert proc.returncode == 1 and "crashed: supervisor lost (" in proc.stdout
    # The device is free for the next job at once.
    proc = run_cli("run", "drill", "--sessions", sessions, *sets("drill.device=true", "drill.steps=2"), timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cancel_without_supervisor_escalates_to_sigkill(tmp_path, wait_for):
    """A group whose supervisor is gone and which ignores SIGTERM is SIGKILLed after limits.grace_s."""
    job_dir = tmp_path / "drill-001"
    job_dir.mkdir()
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, threading\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n"
            "threading.Event().wait()",
        ],
        stdout=subprocess.PIPE,
        process_group=0,
    )
    try:
        assert stubborn.stdout.readline() == b"ready\n"
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        write_json(job_dir / "job.json", {"grace_s": 0.5})
        write_json(job_dir / "pids.json", {"supervisor": dead.pid, "job": stubborn.pid, "pgid": stubborn.pid})
        t0 = time.monotonic()
        assert JobRunner.cancel(job_dir) is True
        assert stubborn.wait(timeout=5) == -signal.SIGKILL
        assert time.monotonic() - t0 >= 0.45
    finally:
        stubborn.kill()
        stubborn.wait()


def test_device_lock_is_shared_by_two_sessions_roots(run_cli, tmp_path, wait_for, private_lock_dir):
    """Another MS_WORKBENCH_SESSIONS on the same machine is refused the held device, and --detach says so."""
    root_a, root_b = tmp_path / "a", tmp_path / "b"
    first = start_detached(run_cli, root_a, "drill.device=true", "drill.steps=400", "drill.rate=40")
    try:
        wait_for(lambda: step_count(first) >= 1, 10, what="the first job to hold the device")
        t0 = time.monotonic()
        proc = run_cli("run", "drill", "--detach", "--sessions", root_b, *sets("drill.device=true"), timeout=30)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert time.monotonic() - t0 < 10
        assert "refused: device CPU:0 is held by" in proc.stderr
        second = next(root_b.glob("*/jobs/drill-001"))
        assert job_status(second).reason.startswith("refused: device CPU:0 is held by job ")
        assert [p.name for p in private_lock_dir.iterdir()] == ["device-CPU-0.lock"]
        assert not (root_a / ".locks").exists() and not (root_b / ".locks").exists()
    finally:
        JobRunner.cancel(first)
        JobRunner.wait(first, timeout_s=10)


def test_sigkill_of_the_supervisors_whole_group_still_stops_the_jobs_children(run_cli, sessions, wait_for):
    """`kill -9 -<supervisor's group>` takes supervisor and anything in its group; the job's own child must go too."""
    job_dir = start_detached(run_cli, sessions, "drill.steps=1", "drill.hang=true", "limits.grace_s=%s" % GRACE_S)
    wait_for(lambda: (job_dir / "child.pid").exists(), 10, what="the drill to hang")
    pids = read_json(job_dir / "pids.json")
    grandchild = int((job_dir / "child.pid").read_text())
    os.killpg(os.getpgid(pids["supervisor"]), signal.SIGKILL)
    wait_for(
        lambda: not pid_running(grandchild) and not live_group_members(pids["pgid"]),
        GRACE_S + 5,
        what="the job's child to be stopped",
    )
    status = job_status(job_dir)
    assert status.state == "crashed" and "supervisor pid %d gone" % pids["supervisor"] in status.reason
    assert "left alive" not in status.reason, status.reason


def test_a_survivor_nothing_could_stop_is_named_in_the_status(run_cli, sessions, wait_for):
    """Supervisor and watchdog both lost: the status names the job's processes still alive, and how to stop them."""
    job_dir = start_detached(run_cli, sessions, "drill.steps=1", "drill.hang=true", "limits.grace_s=%s" % GRACE_S)
    wait_for(lambda: (job_dir / "child.pid").exists(), 10, what="the drill to hang")
    pids = read_json(job_dir / "pids.json")
    grandchild = int((job_dir / "child.pid").read_text())
    try:
        os.kill(pids["watchdog"], signal.SIGSTOP)  # frozen first, so it cannot act when the supervisor goes
        os.kill(pids["supervisor"], signal.SIGKILL)
        os.kill(pids["watchdog"], signal.SIGKILL)
        wait_for(lambda: not pid_running(pids["job"]), 10, what="the job to die with its supervisor")
        wait_for(lambda: not pid_running(pids["watchdog"]), 10, what="the watchdog to die")
        assert pid_running(grandchild)
        reason = job_status(job_dir).reason
        assert "left alive in the job's process group %d" % pids["pgid"] in reason, reason
        assert "pid %d (sleep)" % grandchild in reason and "kill -9 -- -%d" % pids["pgid"] in reason, reason
        proc = run_cli("watch", job_dir.parent.parent.name + "/" + job_dir.name, "--sessions", sessions, timeout=30)
        assert proc.returncode == 1 and "pid %d (sleep)" % grandchild in proc.stdout, proc.stdout
    finally:
        try:
            os.killpg(pids["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not pid_running(grandchild), 10, what="the survivor to be stopped by the test")
    assert "left alive" not in job_status(job_dir).reason
