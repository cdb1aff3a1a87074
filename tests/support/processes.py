"""The processes of a job folder, found in /proc, and a check that none is left."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, Dict, List

from tests.support.waiting import poll_until
from workbench.system.childproc import pid_running


def processes_of(job_dir: Path) -> List[str]:
    """Live processes whose command line or working folder mentions the job folder."""
    needle = str(job_dir)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        if not pid_running(int(entry)):
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
            cwd = os.readlink("/proc/%s/cwd" % entry)
        except (OSError, IndexError):
            continue
        if needle in cmdline or cwd == needle or cwd.startswith(needle + os.sep):
            found.append("%s cwd=%s %s" % (entry, cwd, cmdline[:160]))
    return found


def assert_no_process_left(job_dir: Path) -> None:
    """Nothing of the job runs any more (waits a little for the kernel to reap the last ones)."""
    poll_until(lambda: not processes_of(job_dir), 10)
    left = processes_of(job_dir)
    for line in left:  # do not leave them behind for the next test
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, "processes of %s still alive:\n  %s" % (job_dir.name, "\n  ".join(left))


def by_type(events: List[Dict[str, Any]], type_: str) -> List[Dict[str, Any]]:
    """Events of one type."""
    return [e for e in events if e.get("type") == type_]
