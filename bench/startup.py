"""Time to first paint of `ms-workbench`, and proof that the UI process never loads MindSpore.

Runs the real command of this checkout (PYTHONPATH set to it, started from a folder outside it) in a
pseudo-terminal (as over SSH), measures until the status bar is drawn, then reads /proc/<pid>/maps
to show no MindSpore library is mapped. Baseline in the same run, round by round in a random order:
a minimal Textual app (bench/minimal_app.py) measured the same way until its first line is drawn,
and, for reference, `python -c "import textual.app"`. Ratios are per round; the goal is judged on the
95 % interval of their logarithms (as train_throughput judges its 5 %), every round over the goal counted.

Bytecode: every process it starts writes and reads its .pyc files in a cache of its own
(PYTHONPYCACHEPREFIX in its temporary folder), whatever PYTHONDONTWRITEBYTECODE says in the caller's
environment: an installed copy runs from compiled bytecode, and a checkout run with that variable set
would otherwise compile every workbench module from source at each start. One warm-up run of each arm
fills the cache before the rounds (its times are printed as the cold start, not counted).
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import List

RUNS = 7
GOAL = 1.5  # first paint at most this many times the minimal app's
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.stats import interval_verdict, load, ratio, scratch, shuffled, spread  # noqa: E402

MARK = b"ms-workbench \xe2\x94\x82"  # "ms-workbench │" from the status bar


def first_paint_s(argv, env) -> tuple:
    """Seconds until MARK appears on the terminal, and whether mindspore is mapped then."""
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, start_new_session=True, cwd=env["HOME"]
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


def import_baseline_s(env) -> float:
    """Seconds for a bare interpreter to import textual.app (for reference: no screen is drawn)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import textual.app"], check=True, env=env)
    return time.perf_counter() - t0


def main() -> int:
    """Print the table."""
    import argparse
    import random

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=RUNS)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None, help="also write the rounds to startup.json in this folder")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        # the checkout measured is this one, wherever the command starts (an installed copy is never timed)
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="36", PYTHONPATH=ROOT, HOME=tmp)
        env["TEXTUAL_ANIMATIONS"] = "none"
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # bytecode as an install has it, kept out of the checkout
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
        arms = {
            "ms-workbench": [sys.executable, "-m", "workbench", "--sessions", os.path.join(tmp, "sessions")],
            "minimal app": [sys.executable, os.path.join(ROOT, "bench", "minimal_app.py")],
        }
        cold = {arm: first_paint_s(argv, env)[0] for arm, argv in shuffled(list(arms.items()), rng)}
        rows = []
        for r in range(args.rounds):
            row = {"round": r, "load": load()}  # before the round; load_after at its end
            for arm in shuffled(list(arms) + ["import textual.app"], rng):
                if arm == "import textual.app":
                    row[arm] = import_baseline_s(env)
                    continue
                secs, ms_loaded = first_paint_s(arms[arm], env)
                if secs is None:
                    print("%s did not paint within 20 s" % arm)
                    return 1
                row[arm] = secs
                if arm == "ms-workbench":
                    row["mindspore"] = ms_loaded
            row["ratio"] = ratio(row["ms-workbench"], row["minimal app"])
            row["load_after"] = load()
            rows.append(row)
    print(
        "seed %d, %d rounds, load before %s, after %s"
        % (seed, len(rows), spread([r["load"] for r in rows], "%.1f"), spread([r["load_after"] for r in rows], "%.1f"))
    )
    print("| measure | median [min–max] (n) | first round | cold start (empty bytecode cache, not counted) |")
    print("|---|---|---|---|")
    for key, label in (
        ("minimal app", "minimal Textual app first paint (baseline)"),
        ("ms-workbench", "`ms-workbench` first paint"),
        ("ratio", "ratio, per round"),
        ("import textual.app", "`import textual.app` (reference)"),
    ):
        fmt = "%.2f" if key == "ratio" else "%.3f"
        first = cold.get(key)  # no ratio: whichever arm ran first compiled the shared modules (textual)
        print(
            "| %s | %s | %s | %s |"
            % (label, spread([r[key] for r in rows], fmt), fmt % rows[0][key], "-" if first is None else fmt % first)
        )
    mapped = any(r.get("mindspore") for r in rows)
    print("| mindspore mapped in the UI process | %s | | |" % ("YES" if mapped else "no (checked /proc/<pid>/maps)"))
    worst = max(r["ratio"] for r in rows)
    if args.out:
        out = scratch("ms-workbench-startup-out-", args.out)
        doc = {"seed": seed, "cold": cold, "rounds": rows, "worst_ratio": worst}
        (out / "startup.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(goal_line([r["ratio"] for r in rows]))
    return 0


def goal_line(ratios: List[float]) -> str:
    """The verdict on the 95 % interval of the per-round ratios (as train_throughput judges), with every round's count."""
    return "goal: first paint ≤ %.1f× the minimal app's: %s" % (GOAL, interval_verdict(ratios, GOAL))


if __name__ == "__main__":
    sys.exit(main())
