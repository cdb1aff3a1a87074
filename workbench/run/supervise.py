"""The supervisor: runs one job in its own process group and always writes exit.json.

Started by the runner as `python -m workbench.run.supervise --job-dir DIR` in a new process
session. It takes the device lock, starts the job by exec, enforces the time limit and the
stall watchdog, forwards a cancel (SIGTERM, grace, SIGKILL to the group) and records how the
job ended.

If the supervisor itself dies (SIGKILL, the OOM killer), the job dies with it: the job gets
SIGKILL from the kernel (parent-death signal) and a small watchdog, forked before the job
runs and waiting on a pipe only the supervisor holds, stops the rest of the job's group
(SIGTERM, grace, SIGKILL). The watchdog runs in a session of its own, so a SIGKILL sent to the
supervisor's whole group does not take it too. The device lock is held by the supervisor alone, so the OS
releases it when the supervisor dies; `job_status` reports `crashed: supervisor lost`.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench.events.protocol import tail_events
from workbench.run.locks import try_shared_lock
from workbench.system import diskspace, monotonic
from workbench.system.atomic import read_json, write_json
from workbench.system.childproc import die_with_parent, group_alive, signal_name
from workbench.system.regular import kind_of

POLL_S = 0.2
_held_locks: List[int] = []  # device lock fds; the watchdog closes its copies


class LockFileRefused(OSError):
    """A lock file that is not one a workbench made (a symlink, FIFO, device or hard link planted there)."""


def open_lock_file(lock_path: Path) -> int:
    """Open (create) a lock file in the machine-wide folder, readable and lockable by every user.

    The folder is world-writable: anything but a regular file with one link is refused (LockFileRefused,
    naming the path), never followed, blocked on or written through.
    """
    shared_dir(lock_path.parent)
    # O_NOFOLLOW: in a world-writable folder a planted symlink must not make us truncate its target;
    # O_NONBLOCK: a planted FIFO must not block the open.
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(str(lock_path), flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(str(lock_path)):
            raise LockFileRefused(
                "lock file %s is a symbolic link, not a lock a workbench made; remove it to free the device" % lock_path
            )
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        what = "a regular file with %d links" % st.st_nlink if stat.S_ISREG(st.st_mode) else kind_of(st.st_mode)
        raise LockFileRefused(
            "lock file %s is %s, not a lock a workbench made; remove it to free the device" % (lock_path, what)
        )
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o666)  # another user's workbench must be able to open it to flock it
    except OSError:
        pass
    return fd


def try_lock(lock_path: Path, holder: Dict[str, Any]) -> Tuple[Optional[int], Optional[str]]:
    """Take an exclusive flock; return (fd, None) or (None, who holds it)."""
    fd = open_lock_file(lock_path)
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


def take_lock(lock: Dict[str, Any], holder: Dict[str, Any]) -> Tuple[Optional[int], Optional[str]]:
    """A job spec's device lock: shared among the nodes of one distributed run ("share"), else exclusive."""
    if lock.get("share"):
        return try_shared_lock(Path(lock["path"]), holder, lock["share"], open_lock=open_lock_file)
    return try_lock(Path(lock["path"]), holder)


def kill_group(pgid: int, sig: int) -> None:
    """Signal a whole process group, ignoring one that is already gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def shared_dir(path: Path) -> None:
    """Create the lock folder; the machine-wide one is sticky and world-writable, like /tmp."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(str(path), 0o1777)
    except OSError:
        pass


def start_watchdog(pgid: int, grace_s: float) -> Tuple[int, int]:
    """Fork a watchdog that stops the job's group if this supervisor dies; return (its pid, pipe fd).

    The watchdog blocks reading a pipe whose only write end is ours (non-inheritable, so the
    job never holds it): a byte means "ended normally", end-of-file means we died.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()  # safe: the supervisor never imports MindSpore and runs no threads
    if pid:
        os.close(read_fd)
        return pid, write_fd
    try:
        os.close(write_fd)
        # Out of the supervisor's group: `kill -9 -<its group>` must leave us to stop the job's group.
        os.setsid()
        for fd in _held_locks:  # the lock must die with the supervisor, not live on in us
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            try:
                said = os.read(read_fd, 1)
                break
            except InterruptedError:
                continue
        if not said and group_alive(pgid):
            os.write(
                2,
                (
                    "supervisor lost: stopping job group %d (SIGTERM, then SIGKILL after %.1f s)\n" % (pgid, grace_s)
                ).encode(),
            )
            kill_group(pgid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and group_alive(pgid):
                time.sleep(0.05)
            kill_group(pgid, signal.SIGKILL)
    finally:
        os._exit(0)


def end_watchdog(watchdog: Tuple[int, int]) -> None:
    """Tell the watchdog we ended normally, and reap it."""
    pid, write_fd = watchdog
    try:
        os.write(write_fd, b"d")
    finally:
        os.close(write_fd)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _job_setup(supervisor_pid: int) -> None:
    """In the job, before exec: own process group, and SIGKILL if the supervisor dies."""
    os.setpgrp()
    die_with_parent(signal.SIGKILL)
    if os.getppid() != supervisor_pid:  # it died before prctl took effect
        os._exit(1)


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
    t0 = time.time()  # a date, for people; durations come from the monotonic stamps below
    started = monotonic.stamp()
    record: Dict[str, Any] = {
        "returncode": None,
        "signal": None,
        "duration_s": 0.0,
        "timed_out": False,
        "stalled": False,
        "cancelled": False,
        "refused": None,
        "started_at": t0,
        "ended_at": None,
        "monotonic": {"started": started, "ended": None},
        "supervisor_pid": os.getpid(),
        "job_pid": None,
    }
    reserved = diskspace.reserve(job_dir)
    lock_fds = _held_locks
    for lock in spec.get("locks") or []:
        try:
            fd, holder = take_lock(lock, {"jid": spec["jid"], "session": spec.get("session"), "pid": os.getpid()})
            why = "device %s is held by %s" % (lock["device"], holder)
        except LockFileRefused as exc:
            fd, why = None, "device %s: %s" % (lock["device"], exc)
        if fd is None:
            for held in lock_fds:
                os.close(held)
            del lock_fds[:]
            record.update(refused=why, ended_at=time.time())
            write_final(job_dir, record, reserved)
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
    grace_s = float(spec.get("grace_s") or 5)
    me = os.getpid()
    with open(job_dir / "stdout.log", "ab") as out, open(job_dir / "stderr.log", "ab") as err:
        # The lock fds are not passed on: an orphaned job must not keep the device locked.
        proc = subprocess.Popen(
            spec["argv"],
            cwd=str(job_dir),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            preexec_fn=lambda: _job_setup(me),
        )
    watchdog = start_watchdog(proc.pid, grace_s)
    record["job_pid"] = proc.pid
    write_json(
        job_dir / "pids.json", {"supervisor": os.getpid(), "job": proc.pid, "pgid": proc.pid, "watchdog": watchdog[0]}
    )

    events = job_dir / "events.jsonl"
    timeout_s = float(spec.get("timeout_s") or 0)
    stall_s = float(spec.get("stall_s") or 0)
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
    if not _ended_ok(job_dir, rc, record):
        record["disk_full"] = diskspace.disk_full(job_dir)
        record["removed_partial"] = diskspace.remove_partials(job_dir)
    record["ended_at"] = time.time()
    ended = monotonic.stamp()
    record["monotonic"]["ended"] = ended
    took = monotonic.elapsed(started, ended)  # None only where there is no boot id: the wall clock then
    record["duration_s"] = round(took if took is not None else max(0.0, record["ended_at"] - t0), 3)
    write_final(job_dir, record, reserved)
    for fd in lock_fds:
        os.close(fd)
    end_watchdog(watchdog)
    return 0 if rc == 0 else 1


def _ended_ok(job_dir: Path, rc: Optional[int], record: Dict[str, Any]) -> bool:
    if rc != 0 or record["cancelled"] or record["timed_out"] or record["stalled"]:
        return False
    for event in reversed(tail_events(str(job_dir / "events.jsonl"))):
        if event.get("type") == "finished" and event.get("rank") in (None, 0):
            return event.get("status") == "ok"
    return False


def write_final(job_dir: Path, record: Dict[str, Any], reserved: Optional[Path]) -> None:
    """Write exit.json into the space reserved at the start (a full disk cannot stop it)."""
    diskspace.release(reserved)
    write_json(job_dir / "exit.json", record)


def main(argv=None) -> int:
    """Command-line entry of the supervisor."""
    parser = argparse.ArgumentParser(prog="workbench.run.supervise")
    parser.add_argument("--job-dir", required=True)
    args = parser.parse_args(argv)
    return supervise(Path(args.job_dir).resolve())


if __name__ == "__main__":
    sys.exit(main())
