"""A child with a time limit: a hang kills the whole group, a signal is named, output goes to files."""

from __future__ import annotations

import sys

from tests.support.waiting import poll_until
from workbench.system.childproc import pid_running, run_child


def _gone(pid: int, within_s: float = 5.0) -> bool:
    return bool(poll_until(lambda: not pid_running(pid), within_s))


def test_hang_is_killed_with_its_grandchildren(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, threading; p = subprocess.Popen(['sleep', '600']); "
        "open(%r, 'w').write(str(p.pid)); threading.Event().wait()" % str(pid_file)
    )
    ticks = []
    out = run_child(
        [sys.executable, "-c", code], 1.0, str(tmp_path), str(tmp_path / "o"), str(tmp_path / "e"), tick=ticks.append
    )
    assert out["timed_out"] and out["signal"] == "SIGKILL" and not out["stopped"]
    assert 1.0 <= out["elapsed_s"] < 10 and ticks
    assert _gone(int(pid_file.read_text()))


def test_signal_and_exit_code_and_output_files(tmp_path):
    crash = run_child(
        [sys.executable, "-c", "import os, signal; print('before'); os.kill(os.getpid(), signal.SIGSEGV)"],
        30,
        str(tmp_path),
        str(tmp_path / "o"),
        str(tmp_path / "e"),
    )
    assert (crash["returncode"], crash["signal"], crash["timed_out"]) == (-11, "SIGSEGV", False)
    assert (tmp_path / "o").read_text() == "before\n"
    plain = run_child(
        [sys.executable, "-c", "import sys; sys.stderr.write('no'); sys.exit(3)"],
        30,
        str(tmp_path),
        str(tmp_path / "o2"),
        str(tmp_path / "e2"),
    )
    assert (plain["returncode"], plain["signal"]) == (3, None) and (tmp_path / "e2").read_text() == "no"


def test_stop_request_kills_the_child(tmp_path):
    asked = {"n": 0}

    def should_stop() -> bool:
        asked["n"] += 1
        return asked["n"] > 3

    out = run_child(
        [sys.executable, "-c", "import threading; threading.Event().wait()"],
        60,
        str(tmp_path),
        str(tmp_path / "o"),
        str(tmp_path / "e"),
        should_stop=should_stop,
    )
    assert out["stopped"] and not out["timed_out"] and out["signal"] == "SIGKILL" and out["elapsed_s"] < 30
