"""The real `ms-workbench attach` in a pseudo-terminal, timed by the app's own marks (MS_WORKBENCH_TIMING).

Used by bench/scale.py (attach to a big session) and bench/attach_midrun.py (attach to a running
training job). The app appends `first_paint` (after its first screen refresh) and `caught_up` (the
first time every job's reader reached the end of its file), each with the seconds since the
process started, its CPU seconds and VmRSS/VmHWM (workbench/system/timing.py). From the outside this
also notes when the status bar's bytes first reached the terminal, as a check on the inner mark.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
MARK = "ms-workbench \u2502".encode("utf-8")  # the status bar's first bytes
COLUMNS, LINES = 120, 36


_COMPILED: List[bool] = []


def compile_tree() -> None:
    """Byte-compile this tree once, as an installed package is: a run that compiles every module from source
    (PYTHONDONTWRITEBYTECODE is set in some shells) would time the compiler, not the workbench."""
    if not _COMPILED:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "workbench", "screens", "jobs"],
            cwd=str(ROOT),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        _COMPILED.append(True)


def descendants(pid: int) -> List[int]:
    """Every live descendant of a process (from /proc/<pid>/task/*/children), whatever its group or session."""
    out: List[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir("/proc/%d/task" % parent)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/children" % (parent, tid)) as fh:
                    kids = [int(c) for c in fh.read().split()]
            except (OSError, ValueError):
                continue
            out += kids
            todo += kids
    return out


def _marks(path: Path) -> Dict[str, Dict[str, Any]]:
    """The first mark of each name in the timing file."""
    out: Dict[str, Dict[str, Any]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        if line.endswith("}"):
            entry = json.loads(line)
            out.setdefault(entry["mark"], entry)
    return out


def attach(
    sessions: Path,
    sid: str,
    timeout_s: float = 900.0,
    key: Optional[bytes] = None,
    key_after_s: float = 0.3,
    key_shows: bytes = b"",
    argv: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """Run `python -m workbench attach SID` until it has painted and caught up; return its marks, then kill it.

    With `key`, that key is typed `key_after_s` after the first paint was seen and the time until
    `key_shows` appears on the terminal is reported (the UI answering while it catches up).
    `argv` runs another program that writes the same marks (bench/minimal_app.py, the baseline).
    """
    compile_tree()
    info = sessions / sid / "session.json"
    kept = info.read_bytes() if info.exists() else None  # a key that switches screens records the screen there
    with tempfile.TemporaryDirectory(prefix="ms-workbench-attach-") as tmp:
        timing = Path(tmp) / "timing.jsonl"
        env = dict(
            os.environ,
            TERM="xterm-256color",
            COLUMNS=str(COLUMNS),
            LINES=str(LINES),
            PYTHONPATH=str(ROOT),
            MS_WORKBENCH_TIMING=str(timing),
            TEXTUAL_ANIMATIONS="none",
        )
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        os.set_blocking(master, False)
        argv = argv or [sys.executable, "-m", "workbench", "attach", sid, "--sessions", str(sessions)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=str(ROOT),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        seen: Dict[str, float] = {}
        buf = b""
        marks: Dict[str, Dict[str, Any]] = {}
        key_sent_at: Optional[float] = None
        try:
            while time.perf_counter() - t0 < timeout_s and proc.poll() is None:
                ready, _, _ = select.select([master], [], [], 0.02)
                if ready:
                    try:
                        chunk = os.read(master, 1 << 16)
                    except OSError:
                        break
                    now = time.perf_counter() - t0
                    buf = (buf + chunk)[-(1 << 16) :]
                    if "paint_seen" not in seen and MARK in buf:
                        seen["paint_seen"] = now
                    if key_sent_at is not None and "key_shown" not in seen and key_shows in buf:
                        seen["key_shown"] = now
                        seen["key_ms"] = 1000.0 * (now - key_sent_at)
                now = time.perf_counter() - t0
                if key and key_sent_at is None and "paint_seen" in seen and now >= seen["paint_seen"] + key_after_s:
                    buf = b""  # only what is drawn after the key counts
                    os.write(master, key)
                    key_sent_at = now
                    marks_now = _marks(timing)
                    seen["key_before_caught_up"] = "caught_up" not in marks_now
                marks = _marks(timing)
                done = "first_paint" in marks and "caught_up" in marks
                if done and (key is None or "key_shown" in seen or now - (key_sent_at or now) > 10):
                    break
        finally:
            # its descendants too: one in a session of its own (the backlog's fold) is not in the app's group and
            # would go on using the CPU after the app is gone, into the next arm's measurement (or another bench's)
            others = descendants(proc.pid)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for pid in others:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
            os.close(master)
            if kept is not None:
                info.write_bytes(kept)
        marks = _marks(timing)
    paint, caught = marks.get("first_paint", {}), marks.get("caught_up", {})
    return {
        "first_paint_s": paint.get("since_start_s"),
        "first_paint_cpu_s": paint.get("cpu_s"),
        "first_paint_read_bytes": paint.get("read_bytes"),
        "paint_seen_s": seen.get("paint_seen"),
        "caught_up_s": caught.get("since_start_s"),
        # every process of the attach: the app and the child that folded its backlog (reaped before caught up)
        "caught_up_cpu_s": (caught["cpu_s"] + caught.get("children_cpu_s", 0.0)) if caught else None,
        "caught_up_own_cpu_s": caught.get("cpu_s"),
        "handoff_s": marks.get("handoff", {}).get("since_start_s"),
        "caught_up_events": caught.get("events"),
        "caught_up_read_bytes": caught.get("read_bytes"),
        "rss_mb": caught.get("rss_mb"),
        "hwm_mb": caught.get("hwm_mb"),
        "key_ms": seen.get("key_ms"),
        "key_before_caught_up": seen.get("key_before_caught_up"),
        "timed_out": not (paint and caught),
    }


def baseline_paint(timeout_s: float = 60.0) -> Dict[str, Any]:
    """The minimal Textual app (bench/minimal_app.py) in the same pseudo-terminal: its first paint is the floor."""
    return attach(ROOT, "-", timeout_s=timeout_s, argv=[sys.executable, str(ROOT / "bench" / "minimal_app.py")])


def summary(row: Dict[str, Any]) -> List[str]:
    """Short human lines for one attach result."""
    return [
        "first paint %.2f s (seen on the terminal at %.2f s), caught up %.2f s, CPU %.2f s, peak RSS %.0f MB"
        % (
            row["first_paint_s"] or -1,
            row["paint_seen_s"] or -1,
            row["caught_up_s"] or -1,
            row["caught_up_cpu_s"] or -1,
            row["hwm_mb"] or -1,
        )
    ]
