"""Time to first paint of `ms-workbench`, and proof that the UI process never loads MindSpore.

Runs the real command in a pseudo-terminal (as over SSH), measures until the status bar is drawn,
then reads /proc/<pid>/maps to show no MindSpore library is mapped. Baseline in the same run:
a bare `python -c "import textual"` start, so the ratio is meaningful on a noisy machine.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 5
MARK = b"ms-workbench \xe2\x94\x82"  # "ms-workbench │" from the status bar


def first_paint_s(argv, env) -> tuple:
    """Seconds until MARK appears on the terminal, and whether mindspore is mapped then."""
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, start_new_session=True
    )
    os.close(slave)
    buf = b""
    elapsed = None
    while time.perf_counter() - t0 < 20:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                buf += os.read(master, 65536)
            except OSError:
                break
            if MARK in buf:
                elapsed = time.perf_counter() - t0
                break
    maps = ""
    try:
        with open("/proc/%d/maps" % proc.pid) as fh:
            maps = fh.read()
    except OSError:
        pass
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    os.close(master)
    return elapsed, ("mindspore" in maps.lower())


def import_baseline_s() -> float:
    """Seconds for a bare interpreter to import textual.app (the floor of any Textual app)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import textual.app"], check=True)
    return time.perf_counter() - t0


def main() -> int:
    """Print the table."""
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="36")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "workbench", "--sessions", tmp]
        paints, base, mapped = [], [], []
        for _ in range(RUNS):
            base.append(import_baseline_s())
            secs, ms_loaded = first_paint_s(argv, env)
            if secs is None:
                print("the workbench did not paint within 20 s")
                return 1
            paints.append(secs)
            mapped.append(ms_loaded)
    p, b = statistics.median(paints), statistics.median(base)
    print("| measure | median of %d | min | max |" % RUNS)
    print("|---|---|---|---|")
    print("| `import textual.app` (baseline) | %.3f s | %.3f s | %.3f s |" % (b, min(base), max(base)))
    print("| `ms-workbench` first paint | %.3f s | %.3f s | %.3f s |" % (p, min(paints), max(paints)))
    print("| ratio first paint / baseline | %.2f× | | |" % (p / b))
    print(
        "| mindspore mapped in the UI process | %s | | |" % ("YES" if any(mapped) else "no (checked /proc/<pid>/maps)")
    )
    print("goal: first paint < 1 s: %s" % ("met" if p < 1.0 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
