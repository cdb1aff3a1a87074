"""The real command in a pseudo-terminal, with every write of Textual's terminal driver kept in order."""

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
import termios
import time
from pathlib import Path
from typing import Any, Dict, List

# Run in the child: every LinuxDriver.write (one per drawn update) appended to a file with whether the garbage
# collector was on and the UI thread's nice value, and a line once the app has noted its first paint; then
# `ms-workbench` as usual.
_LAUNCH = (
    "import gc, json, os, sys\n"
    "from textual.drivers import linux_driver\n"
    "from screens.app import WorkbenchApp\n"
    "log = open(os.environ['WRITES_LOG'], 'w')\n"
    "def note(entry):\n"
    "    log.write(json.dumps(entry) + '\\n'); log.flush()\n"
    "write = linux_driver.LinuxDriver.write\n"
    "def logged(self, data):\n"
    "    note({'write': data, 'gc': gc.isenabled(), 'nice': os.getpriority(os.PRIO_PROCESS, 0)})\n"
    "    return write(self, data)\n"
    "linux_driver.LinuxDriver.write = logged\n"
    "painted = WorkbenchApp._first_painted\n"
    "def noted(self):\n"
    "    painted(self)\n"
    "    note({'first_paint': True, 'gc': gc.isenabled(), 'nice': os.getpriority(os.PRIO_PROCESS, 0)})\n"
    "WorkbenchApp._first_painted = noted\n"
    "from workbench.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def driver_writes(home: Path, argv: List[str], size=(120, 36), timeout_s: float = 60.0) -> List[Dict[str, Any]]:
    """What the app wrote to its terminal, write by write ({write, gc, nice}), up to the app's note of its first
    paint ({first_paint, gc, nice}); then it is killed."""
    root = str(Path(__file__).resolve().parents[2])
    log = home / "writes.jsonl"
    env = dict(os.environ, TERM="xterm-256color", HOME=str(home), WRITES_LOG=str(log), TEXTUAL_ANIMATIONS="none")
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env["COLUMNS"], env["LINES"] = str(size[0]), str(size[1])
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH] + argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=str(home),
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    entries: List[Dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.05)  # drain the terminal so the app never blocks
            if ready:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    break
            if log.exists():
                entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
                if any("first_paint" in e for e in entries):
                    break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)
    return entries
