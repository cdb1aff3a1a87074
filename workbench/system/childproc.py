"""Run one child program with a time limit, in its own process group, and say how it ended.

Used for device probes: a probe that hangs is killed with its whole group (grandchildren
included), a probe that dies of a signal is named by that signal, and neither stops the
caller. The child also gets SIGKILL if the caller dies first (Linux parent-death signal), so
a cancelled job leaves no probe behind. Pure code for Python 3.9.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

POLL_S = 0.05
KILL_WAIT_S = 5.0
_PR_SET_PDEATHSIG = 1


def signal_name(num: int) -> str:
    """SIGSEGV for 11, and so on."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return "SIG%d" % num


def proc_stat(pid: int) -> Optional[List[str]]:
    """The fields of /proc/PID/stat after the command name (state first), or None if gone or unreadable."""
    try:
        with open("/proc/%d/stat" % int(pid), "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].decode("ascii", "replace").split()
    except (OSError, IndexError, ValueError):
        return None


def pid_running(pid: Optional[int]) -> bool:
    """True while `pid` exists and is not a zombie (a zombie left for init is not running)."""
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if not os.path.isdir("/proc/self"):  # no /proc (macOS): kill(0) is all we can know
        return True
    fields = proc_stat(int(pid))
    return fields is not None and fields[0] != "Z"


def group_members(pgid: int) -> List[int]:
    """Pids of the live (non-zombie) processes of a process group."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(int(entry))
            if fields and fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry))
    return members


def describe(pid: int) -> str:
    """'pid 123 (sleep)': a process as people name it; the command name from /proc when readable."""
    try:
        with open("/proc/%d/stat" % int(pid), "rb") as fh:
            raw = fh.read()
        name = raw[raw.index(b"(") + 1 : raw.rindex(b")")].decode("utf-8", "replace")
    except (OSError, ValueError):
        return "pid %d" % pid
    return "pid %d (%s)" % (pid, name)


def group_alive(pgid: int) -> bool:
    """True while any process of the group is alive (zombies left for init do not count)."""
    if os.path.isdir("/proc/self"):
        return bool(group_members(pgid))
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """In a child before exec: ask Linux for `sig` when the parent dies; False where unavailable."""
    # ctypes here, not at the top: importing this module (the UI's start does) does not load it. run_child
    # imports it before its fork, so the child's hook imports nothing.
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: the process-group kill still applies
        return False


def _die_with_parent() -> None:
    die_with_parent(signal.SIGKILL)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_child(
    argv: List[str],
    timeout_s: float,
    cwd: str,
    stdout_path: str,
    stderr_path: str,
    env: Optional[Mapping[str, str]] = None,
    should_stop: Optional[Callable[[], bool]] = None,
    tick: Optional[Callable[[float], None]] = None,
) -> Dict[str, Any]:
    """Run argv to its end or its time limit; {returncode, signal, timed_out, stopped, elapsed_s, pid}.

    Output goes to files, never to a pipe that must be drained. On timeout, or when
    `should_stop()` turns true, the child's process group gets SIGKILL. `tick(elapsed_s)` is
    called every poll, so the caller can show it is alive.
    """
    import ctypes.util  # noqa: F401  (for die_with_parent in the child: loaded before the fork)

    start = time.monotonic()
    with open(stdout_path, "ab") as out, open(stderr_path, "ab") as err:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            close_fds=True,
        )
    timed_out = stopped = False
    while proc.poll() is None:
        elapsed = time.monotonic() - start
        if elapsed > timeout_s:
            timed_out = True
        elif should_stop is not None and should_stop():
            stopped = True
        if timed_out or stopped:
            _kill_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(timeout=KILL_WAIT_S)
            except subprocess.TimeoutExpired:  # stuck in the kernel (state D): report, do not wait forever
                pass
            break
        if tick is not None:
            tick(elapsed)
        time.sleep(POLL_S)
    _kill_group(proc.pid, signal.SIGKILL)  # whatever the child left running in its group goes with it
    rc = proc.poll()
    return {
        "returncode": rc,
        "signal": signal_name(-rc) if rc is not None and rc < 0 else None,
        "timed_out": timed_out,
        "stopped": stopped,
        "elapsed_s": round(time.monotonic() - start, 3),
        "pid": proc.pid,
    }


def stop_group(pgid: int, grace_s: float) -> bool:
    """SIGTERM a process group, SIGKILL what is left after grace_s; False if nothing was running."""
    if not group_alive(pgid):
        return False
    _kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(POLL_S)
    _kill_group(pgid, signal.SIGKILL)
    return True
