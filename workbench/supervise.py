"""The supervisor: runs one job in its own process group and always writes exit.json.

Started by the runner as `python -m workbench.supervise --job-dir DIR` in a new process
session. It takes the device lock, starts the job by exec, enforces the time limit and the
stall watchdog, forwards a cancel (SIGTERM, grace, SIGKILL to the group) and records how the
job ended.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from workbench.atomic import read_json, write_json

POLL_S = 0.2


def signal_name(num: int) -> str:
    """SIGSEGV for 11, and so on."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return "SIG%d" % num


def try_lock(lock_path: Path, holder: Dict[str, Any]) -> Tuple[Optional[int], Optional[str]]:
    """Take an exclusive flock; return (fd, None) or (None, who holds it)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(lock_path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        try:
            who = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "unknown holder"
        finally:
            os.close(fd)
        return None, who
    text = "job %s/%s (pid %d)" % (holder["session"], holder["jid"], holder["pid"])
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)
    return fd, None


def kill_group(pgid: int, sig: int) -> None:
    """Signal a whole process group, ignoring one that is already gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def group_alive(pgid: int) -> bool:
    """True while any process of the group is alive (zombies left for init do not count)."""
    if os.path.isdir("/proc/self"):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry, "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                return True
        return False
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the group, wait up to grace_s, then SIGKILL whatever is left."""
    kill_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not group_alive(proc.pid):
            return
        time.sleep(0.05)
    kill_group(proc.pid, signal.SIGKILL)


def supervise(job_dir: Path) -> int:
    """Run the job described by job.json; return the supervisor's exit code."""
    spec = read_json(job_dir / "job.json")
    t0 = time.time()
    record: Dict[str, Any] = {
        "returncode": None, "signal": None, "duration_s": 0.0, "timed_out": False,
        "stalled": False, "cancelled": False, "refused": None, "started_at": t0, "ended_at": None,
        "supervisor_pid": os.getpid(), "job_pid": None,
    }
    lock_fds = []
    for lock in spec.get("locks") or []:
        fd, holder = try_lock(Path(lock["path"]), {"jid": spec["jid"], "session": spec.get("session"),
                                                     "pid": os.getpid()})
        if fd is None:
            for held in lock_fds:
                os.close(held)
            record.update(refused="device %s is held by %s" % (lock["device"], holder), ended_at=time.time())
            write_json(job_dir / "exit.json", record)
            return 1
        lock_fds.append(fd)

    cancel = {"asked": False}

    def on_term(signum, frame):
        cancel["asked"] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a dropped SSH link must not end the job

    env = dict(os.environ)
    env.update(spec.get("env") or {})
    with open(job_dir / "stdout.log", "ab") as out, open(job_dir / "stderr.log", "ab") as err:
        proc = subprocess.Popen(spec["argv"], cwd=str(job_dir), env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, preexec_fn=os.setpgrp,
                                pass_fds=tuple(lock_fds))
    record["job_pid"] = proc.pid
    write_json(job_dir / "pids.json", {"supervisor": os.getpid(), "job": proc.pid, "pgid": proc.pid})

    events = job_dir / "events.jsonl"
    timeout_s = float(spec.get("timeout_s") or 0)
    stall_s = float(spec.get("stall_s") or 0)
    grace_s = float(spec.get("grace_s") or 5)
    last_size, last_change = -1, time.monotonic()
    start = time.monotonic()
    while proc.poll() is None:
        time.sleep(POLL_S)
        now = time.monotonic()
        try:
            size = events.stat().st_size
        except FileNotFoundError:
            size = 0
        if size != last_size:
            last_size, last_change = size, now
        reason = None
        if cancel["asked"]:
            reason = "cancelled"
        elif timeout_s and now - start > timeout_s:
            reason = "timed_out"
        elif stall_s and now - last_change > stall_s:
            reason = "stalled"
        if reason:
            record[reason] = True
            stop_group(proc, grace_s)
            proc.wait()
            break
    # The job may leave children behind in its group: they go with it.
    if group_alive(proc.pid):
        stop_group(proc, min(grace_s, 2.0))
    rc = proc.returncode
    record["returncode"] = rc
    if rc is not None and rc < 0:
        record["signal"] = signal_name(-rc)
    record["ended_at"] = time.time()
    record["duration_s"] = round(record["ended_at"] - t0, 3)
    write_json(job_dir / "exit.json", record)
    for fd in lock_fds:
        os.close(fd)
    return 0 if rc == 0 else 1


def main(argv=None) -> int:
    """Command-line entry of the supervisor."""
    parser = argparse.ArgumentParser(prog="workbench.supervise")
    parser.add_argument("--job-dir", required=True)
    args = parser.parse_args(argv)
    return supervise(Path(args.job_dir).resolve())


if __name__ == "__main__":
    sys.exit(main())
