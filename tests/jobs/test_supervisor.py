"""The supervisor with real processes: crashes, hangs, cancels, device locks and detached jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.drills import live_group_members, newest_job, pid_running, sets, start_detached, step_count, types
from workbench.events.protocol import EventReader, read_all, validate_file
from workbench.run.runner import JobRunner
from workbench.session.store import job_status
from workbench.system.atomic import read_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FAST = ("drill.steps=5", "drill.rate=200")
QUICK_STOP = ("limits.grace_s=0.3",)


def run_drill(run_cli, sessions: Path, *items: str, extra=(), timeout: float = 30.0):
    """Run a drill in the foreground; return (completed process, job folder)."""
    proc = run_cli("run", "drill", "--sessions", sessions, *sets(*items), *extra, timeout=timeout)
    return proc, newest_job(sessions)


def exit_record(job_dir: Path) -> dict:
    """The supervisor's exit.json."""
    return read_json(job_dir / "exit.json")


# --- normal end --------------------------------------------------------------------------------


def test_ok_drill(run_cli, sessions, assert_events_valid):
    proc, job_dir = run_drill(run_cli, sessions, *FAST)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert types(job_dir) == ["started"] + ["step"] * 5 + ["result", "finished"]
    rec = exit_record(job_dir)
    assert rec["returncode"] == 0 and rec["signal"] is None and not rec["stalled"]
    status = job_status(job_dir)
    assert status.state == "ok" and status.label() == "ok"
    pids = read_json(job_dir / "pids.json")
    assert pids["pgid"] == pids["job"] == rec["job_pid"]
    assert (job_dir / "config.yaml").is_file() and (job_dir / "stderr.log").is_file()
    assert_events_valid(job_dir)


# --- crashes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSEGV"])
def test_signal_crash_is_named(run_cli, sessions, assert_events_valid, sig):
    proc, job_dir = run_drill(
        run_cli, sessions, "drill.steps=10", "drill.rate=200", "drill.crash_signal=%s" % sig, "drill.crash_after=3"
    )
    assert proc.returncode == 1
    status = job_status(job_dir)
    assert status.state == "crashed"
    assert status.label().startswith("crashed: %s after " % sig), status.label()
    rec = exit_record(job_dir)
    assert rec["returncode"] == -getattr(signal, sig) and rec["signal"] == sig
    assert types(job_dir) == ["started", "step", "step", "step"]  # no finished, never "ok"
    assert status.label() in proc.stdout
    assert_events_valid(job_dir)


@pytest.mark.parametrize(
    "exit_code, state, reason",
    [
        (0, "failed", "exited 0 without a finished event"),
        (3, "crashed", "exit code 3 without a finished event"),
    ],
)
def test_exit_without_finished_is_not_ok(run_cli, sessions, assert_events_valid, exit_code, state, reason):
    proc, job_dir = run_drill(run_cli, sessions, *FAST, "drill.no_finished=true", "drill.exit_code=%d" % exit_code)
    assert proc.returncode == 1
    status = job_status(job_dir)
    assert (status.state, status.reason.split(" after ")[0]) == (state, reason), status.label()
    assert exit_record(job_dir)["returncode"] == exit_code
    assert "finished" not in types(job_dir)
    assert_events_valid(job_dir)


# --- hangs: stall watchdog and time limit -------------------------------------------------------


@pytest.mark.parametrize(
    "limits, state, flag",
    [
        (("limits.stall_s=1",), "stalled", "stalled"),
        (("limits.job_timeout_s=1", "limits.stall_s=0"), "timed-out", "timed_out"),
    ],
)
def test_hang_stops_the_whole_group(run_cli, sessions, wait_for, assert_events_valid, limits, state, flag):
    t0 = time.monotonic()
    proc, job_dir = run_drill(
        run_cli, sessions, "drill.steps=2", "drill.rate=200", "drill.hang=true", *QUICK_STOP, *limits
    )
    elapsed_s = time.monotonic() - t0
    assert proc.returncode == 1
    status = job_status(job_dir)
    assert status.state == state, status.label()
    rec = exit_record(job_dir)
    assert rec[flag] is True and rec["signal"] == "SIGKILL"  # the hang ignores the SIGTERM flag
    assert 1.0 <= rec["duration_s"] < 10 and elapsed_s < 15
    child_pid = int((job_dir / "child.pid").read_text())
    pgid = read_json(job_dir / "pids.json")["pgid"]
    wait_for(lambda: not pid_running(child_pid), 3, what="grandchild %d to end" % child_pid)
    assert live_group_members(pgid) == []
    assert not pid_running(rec["job_pid"])
    assert_events_valid(job_dir)


def test_slow_but_steady_job_is_not_stalled(run_cli, sessions):
    # 1.5 s in total, longer than stall_s, but never 1 s without an event.
    proc, job_dir = run_drill(run_cli, sessions, "drill.steps=6", "drill.rate=4", "limits.stall_s=1")
    assert proc.returncode == 0, job_status(job_dir).label()
    assert not exit_record(job_dir)["stalled"]


# --- cancel ------------------------------------------------------------------------------------


def test_cancel_running_job(run_cli, sessions, wait_for, assert_events_valid):
    job_dir = start_detached(run_cli, sessions, "drill.steps=400", "drill.rate=40")
    wait_for(lambda: step_count(job_dir) >= 2, 10, what="two steps")
    t_cancel = time.time()
    assert JobRunner.cancel(job_dir) is True
    assert JobRunner.wait(job_dir, timeout_s=10)
    wait_for(lambda: (job_dir / "exit.json").exists(), 5, what="exit.json")
    rec = exit_record(job_dir)
    assert rec["cancelled"] is True and rec["returncode"] == 3 and rec["signal"] is None
    assert rec["ended_at"] - t_cancel < 3  # the job stopped on SIGTERM, no SIGKILL needed (grace 5 s)
    events = read_all(str(job_dir / "events.jsonl"))
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "cancelled"
    assert step_count(job_dir) < 400
    status = job_status(job_dir)
    assert status.state == "cancelled" and status.label().startswith("cancelled: stopped on request")
    assert JobRunner.cancel(job_dir) is False  # nothing runs any more
    assert_events_valid(job_dir)


def test_cancel_escalates_to_sigkill_after_grace(run_cli, sessions, wait_for, assert_events_valid):
    grace_s = 1.0
    job_dir = start_detached(
        run_cli, sessions, "drill.steps=1", "drill.hang=true", "drill.ignore_term=true", "limits.grace_s=%s" % grace_s
    )
    wait_for(lambda: (job_dir / "child.pid").exists(), 10, what="the drill to hang")
    t_cancel = time.time()
    assert JobRunner.cancel(job_dir) is True
    assert JobRunner.wait(job_dir, timeout_s=10)
    rec = exit_record(job_dir)
    assert rec["cancelled"] is True and rec["signal"] == "SIGKILL" and rec["returncode"] == -9
    assert rec["ended_at"] - t_cancel >= grace_s - 0.05, "SIGKILL came before the grace period ended"
    assert rec["ended_at"] - t_cancel < grace_s + 5
    assert job_status(job_dir).state == "cancelled"
    assert "finished" not in types(job_dir)
    child_pid = int((job_dir / "child.pid").read_text())
    wait_for(lambda: not pid_running(child_pid), 3, what="grandchild to end")
    assert live_group_members(rec["job_pid"]) == []
    assert_events_valid(job_dir)


# --- damaged event files -----------------------------------------------------------------------


def test_garbage_line_is_shown_not_fatal(run_cli, sessions):
    proc, job_dir = run_drill(run_cli, sessions, *FAST, "drill.garbage=true")
    assert proc.returncode == 0 and job_status(job_dir).state == "ok"
    events = read_all(str(job_dir / "events.jsonl"))
    garbage = [e for e in events if e.get("raw")]
    assert [(g["type"], g["level"], g["message"]) for g in garbage] == [("log", "garbage", "this is not json")]
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "ok"
    problems = validate_file(str(job_dir / "events.jsonl"))
    assert len(problems) == 1 and "not a JSON event: 'this is not json'" in problems[0]
    assert "garbage: this is not json" in proc.stdout


def test_torn_line_mid_file_becomes_garbage_and_later_events_count(run_cli, sessions):
    proc, job_dir = run_drill(run_cli, sessions, *FAST, "drill.torn=true")
    assert proc.returncode == 0
    events = read_all(str(job_dir / "events.jsonl"))
    torn = [e for e in events if e.get("raw")]
    assert len(torn) == 1 and torn[0]["message"].startswith('{"v": 1, "seq": 999, "t": 0, "type": "st')
    assert events[-1]["type"] == "finished" and job_status(job_dir).state == "ok"
    assert any("not a JSON event" in p for p in validate_file(str(job_dir / "events.jsonl")))


def test_torn_last_line_waits_and_job_is_not_ok(run_cli, sessions):
    proc, job_dir = run_drill(run_cli, sessions, *FAST, "drill.torn=true", "drill.no_finished=true")
    assert proc.returncode == 1
    reader = EventReader(str(job_dir / "events.jsonl"))
    events = reader.read_new()
    assert [e["type"] for e in events] == ["started"] + ["step"] * 5
    assert reader.pending_bytes == len('{"v": 1, "seq": 999, "t": 0, "type": "st')
    status = job_status(job_dir)
    assert status.state == "failed" and "without a finished event" in status.reason
    assert validate_file(str(job_dir / "events.jsonl")) == ["line 7: torn (no newline)"]


# --- detached jobs outlive their launcher ------------------------------------------------------


@pytest.mark.parametrize("detach", [True, False], ids=["detach", "foreground"])
def test_job_survives_its_launcher_being_killed(sessions, wait_for, assert_events_valid, detach):
    argv = [
        sys.executable,
        "-m",
        "workbench",
        "run",
        "drill",
        "--sessions",
        str(sessions),
        *sets("drill.steps=30", "drill.rate=20"),
        *(["--detach"] if detach else []),
    ]
    # Own process group, same session as the test: killing that group must not reach the job.
    launcher = subprocess.Popen(
        argv,
        cwd=str(PROJECT_ROOT),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        process_group=0,
    )
    try:
        pids_path = wait_for(lambda: next(iter(sessions.glob("*/jobs/*/pids.json")), None), 10, what="the job to start")
        job_dir = pids_path.parent
        wait_for(lambda: step_count(job_dir) >= 1, 10, what="a first step")
        assert not (job_dir / "exit.json").exists(), "the job ended before the launcher was killed"
        os.killpg(launcher.pid, signal.SIGHUP)
        os.killpg(launcher.pid, signal.SIGKILL)
    finally:
        launcher.kill()
        launcher.wait(5)
    pids = read_json(job_dir / "pids.json")
    assert os.getsid(pids["supervisor"]) == pids["supervisor"] != os.getsid(0)  # its own session
    wait_for(lambda: (job_dir / "exit.json").exists(), 15, what="the job to finish")
    events = read_all(str(job_dir / "events.jsonl"))
    assert [e["type"] for e in events] == ["started"] + ["step"] * 30 + ["result", "finished"]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert job_status(job_dir).state == "ok"
    assert_events_valid(job_dir)


# --- device lock -------------------------------------------------------------------------------


def test_second_device_job_is_refused_naming_the_holder(run_cli, sessions, wait_for, assert_events_valid):
    first = start_detached(run_cli, sessions, "drill.device=true", "drill.steps=400", "drill.rate=40")
    wait_for(lambda: (first / "pids.json").exists(), 10, what="the first job to take the lock")
    sid = first.parent.parent.name
    holder_pid = read_json(first / "pids.json")["supervisor"]
    t0 = time.monotonic()
    proc, second = run_drill(run_cli, sessions, "drill.device=true", *FAST, extra=("--session", sid))
    refused_s = time.monotonic() - t0
    assert second.name == "drill-002" and second != first
    assert proc.returncode == 1
    assert refused_s < 5
    status = job_status(second)
    assert status.state == "failed" and status.reason.startswith("refused: device CPU:0 is held by")
    assert "job %s/drill-001 (pid %d)" % (sid, holder_pid) in status.reason
    assert not (second / "events.jsonl").exists() and not (second / "pids.json").exists()
    assert "refused" in proc.stdout
    assert job_status(first).state == "running"
    # A job that needs no device is not held up by the lock.
    proc, free = run_drill(run_cli, sessions, *FAST, extra=("--session", sid))
    assert proc.returncode == 0 and job_status(free).state == "ok"
    JobRunner.cancel(first)
    assert JobRunner.wait(first, timeout_s=10)
    assert_events_valid(first)


def test_stale_lock_of_killed_holder_does_not_block(run_cli, sessions, wait_for, assert_events_valid, private_lock_dir):
    first = start_detached(run_cli, sessions, "drill.device=true", "drill.steps=400", "drill.rate=40")
    wait_for(lambda: step_count(first) >= 1, 10, what="the holder to run")
    pids = read_json(first / "pids.json")
    os.kill(pids["supervisor"], signal.SIGKILL)
    os.killpg(pids["pgid"], signal.SIGKILL)
    wait_for(
        lambda: not pid_running(pids["supervisor"]) and not live_group_members(pids["pgid"]),
        5,
        what="the holder to die",
    )
    locks = list(private_lock_dir.iterdir())
    assert len(locks) == 1 and "/drill-001 (pid" in locks[0].read_text()  # the stale file is still there
    assert not (first / "exit.json").exists()
    status = job_status(first)
    assert status.state == "crashed" and "without exit.json" in status.reason
    proc, second = run_drill(run_cli, sessions, "drill.device=true", *FAST)
    assert proc.returncode == 0, job_status(second).label()
    assert job_status(second).state == "ok"
    assert_events_valid(second)


def test_align_locks_both_paths_devices(tmp_path):
    from workbench.config.layers import defaults
    from workbench.run.runner import device_targets, effective_config

    cfg = defaults()
    cfg["device"]["target"] = "CPU"
    cfg["align"]["candidate"]["target"] = "Ascend"
    cfg["align"]["candidate"]["id"] = 3
    cfg = effective_config(cfg)
    assert device_targets("align", cfg) == [("Ascend", 3), ("CPU", 0)]
    assert device_targets("train", cfg) == [("CPU", 0)]


@pytest.mark.parametrize("planted", ["fifo", "symlink", "hardlink"])
def test_a_planted_lock_file_is_refused_at_once_naming_the_path(run_cli, sessions, private_lock_dir, tmp_path, planted):
    proc, first = run_drill(run_cli, sessions, "drill.device=true", *FAST)
    assert proc.returncode == 0
    (lock,) = [p for p in private_lock_dir.iterdir() if not p.name.endswith(".guard")]
    lock.unlink()
    if planted == "fifo":
        os.mkfifo(str(lock))
    elif planted == "symlink":
        os.symlink(str(tmp_path / "victim"), str(lock))
    else:
        (tmp_path / "other").write_text("")
        os.link(str(tmp_path / "other"), str(lock))
    proc = run_cli("run", "drill", "--sessions", sessions, "--detach", *sets("drill.device=true", *FAST))
    assert proc.returncode == 1, proc.stderr  # refused, and --detach says so
    second = newest_job(sessions)
    status = job_status(second)
    assert status.state == "failed" and status.reason.startswith("refused: device "), status.label()
    assert str(lock) in status.reason and "not a lock a workbench made" in status.reason
    assert not (tmp_path / "victim").exists()
