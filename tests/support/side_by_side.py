"""Two benches started at once, each with a temporary folder of its own, and what each left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence

from tests.support.waiting import poll_until

ROOT = Path(__file__).resolve().parents[2]


def processes_with_env(key: str, value: str) -> List[str]:
    """'pid cmdline' of every live process whose environment has key=value (a bench's descendants inherit it)."""
    want = ("%s=%s" % (key, value)).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as fh:
                env = fh.read().split(b"\0")
            with open("/proc/%s/cmdline" % entry, "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if want in env:
            found.append("%s %s" % (entry, cmd[:160]))
    return found


def run_pair(commands: Dict[str, Sequence[str]], base: Path, timeout_s: float = 900.0) -> Dict[str, Dict]:
    """Start every command at once (TMPDIR = base/NAME/tmp, output in base/NAME/out); wait; report on each.

    Each report: rc, the last lines of its output, what is left in its TMPDIR, and the processes still
    alive a few seconds after it ended that carry its TMPDIR in their environment.
    """
    procs = {}
    for name, argv in commands.items():
        tmp, out = base / name / "tmp", base / name / "out"
        tmp.mkdir(parents=True)
        out.mkdir(parents=True)
        env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
        log = open(str(base / name / "log.txt"), "wb")
        argv = [a.replace("{out}", str(out)) for a in argv]
        procs[name] = (subprocess.Popen(argv, cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT), log, tmp)
    reports: Dict[str, Dict] = {}
    deadline = time.monotonic() + timeout_s
    for name, (proc, log, tmp) in procs.items():
        try:
            rc = proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        log.close()
        reports[name] = {"rc": rc, "tmp": tmp}
    # a detached job cancelled at the end gets its moment to exit: wait until none carries a TMPDIR (or 10 s)
    poll_until(lambda: not any(processes_with_env("TMPDIR", str(r["tmp"])) for r in reports.values()), 10.0)
    for name, rep in reports.items():
        tmp = rep.pop("tmp")
        rep["left_in_tmp"] = sorted(p.name for p in tmp.iterdir())
        rep["alive"] = processes_with_env("TMPDIR", str(tmp))
        rep["tail"] = (base / name / "log.txt").read_text(encoding="utf-8", errors="replace")[-3000:]
    return reports


def python() -> str:
    """The interpreter running the tests (the benches run on it too)."""
    return sys.executable
