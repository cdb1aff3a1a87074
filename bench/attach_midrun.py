"""The CPU cost of attaching the TUI to a running training job, at several points of the run, against controls.

A real training job (MLP, CPU, graph mode, the bundled data, many epochs) is started detached
through the CLI (with device locks of this bench's own, so another bench's job is not refused).
At each point of `--at` (seconds into the run), while it trains, `--rounds` rounds each run three
arms in a random order: the real `ms-workbench attach SID` in a pseudo-terminal (120x36) with
MS_WORKBENCH_TIMING set (bench/attach_probe.py); the same command on an empty session (the floor of
Python + Textual + the first screen); and a minimal Textual app (bench/minimal_app.py). The cost of
an attach is the CPU seconds of the UI process from exec until it has painted and caught up (the
frame showing the job's events so far is out). The first run of each program in this bench is
listed as cold. Goal (issue 21): attaching mid-run under 1 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.attach_probe import ROOT, attach, baseline_paint  # noqa: E402
from bench.stats import load, ratio, scratch, shuffled, spread  # noqa: E402
from workbench.run.runner import LOCK_DIR_ENV, JobRunner  # noqa: E402
from workbench.session.store import SessionStore, job_status  # noqa: E402

GOAL_CPU_S = 1.0
ARMS = ("attach mid-run", "control (empty session)", "minimal app")


def start_training(sessions: Path, epochs: int) -> Path:
    """Start the real training job detached; return its folder."""
    cmd = [
        sys.executable,
        "-m",
        "workbench",
        "run",
        "train",
        "--detach",
        "--sessions",
        str(sessions),
        "--set",
        "model.name=mlp",
        "--set",
        "train.epochs=%d" % epochs,
        "--set",
        "device.target=CPU",
    ]
    done = subprocess.run(
        cmd,
        cwd=str(ROOT),
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return Path(done.stdout.strip().splitlines()[-1])


def cost(row: Dict[str, Any]) -> float:
    """CPU seconds from exec until both painted and caught up (the later of the two marks)."""
    return max(row["first_paint_cpu_s"] or 0.0, row["caught_up_cpu_s"] or 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--at", default="10,40,80", help="seconds into the run at which to attach (comma-separated)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds at each point, the arms in a random order each")
    ap.add_argument("--epochs", type=int, default=60, help="epochs of the job (it is cancelled at the end)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None, help="folder for midrun.json (default: a new scratch folder)")
    args = ap.parse_args()
    points = [float(a) for a in args.at.split(",")]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    out = scratch("ms-workbench-midrun-out-", args.out)
    load_before = load()
    print("seed %d; results to %s; load %.1f" % (seed, out, load_before), flush=True)
    rows: List[Dict[str, Any]] = []
    seen: set = set()
    with tempfile.TemporaryDirectory(prefix="ms-workbench-midrun-") as tmp:
        sessions = Path(tmp) / "sessions"
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")  # this bench's own device locks (and its children's)
        store = SessionStore(sessions)
        empty = store.create(["bench", "control"])
        job = start_training(sessions, args.epochs)
        sid = job.parent.parent.name
        events = job / "events.jsonl"
        started = time.monotonic()
        try:
            for point in points:
                while time.monotonic() - started < point:
                    time.sleep(0.2)
                for i in range(args.rounds):
                    pair: Dict[str, Dict[str, Any]] = {}
                    for arm in shuffled(ARMS, rng):
                        size = events.stat().st_size if arm == "attach mid-run" else 0
                        if arm == "minimal app":
                            row = baseline_paint()
                        else:
                            row = attach(sessions, sid if arm == "attach mid-run" else empty, timeout_s=120)
                        row.update(
                            arm=arm,
                            at_s=point,
                            since_start_s=time.monotonic() - started,
                            round=i + 1,
                            events_bytes=size,
                            job_running=job_status(job).state == "running",
                            cpu_s=cost(row),
                            cold=arm not in seen,
                            load=load(),
                        )
                        seen.add(arm)
                        pair[arm] = row
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                    pair["attach mid-run"]["cpu_ratio_to_control"] = ratio(
                        pair["attach mid-run"]["cpu_s"], pair["control (empty session)"]["cpu_s"]
                    )
        finally:
            JobRunner.cancel(job)
            JobRunner.wait(job, 60)
    print()
    print(
        "| attached at (s into the run) | events file MB | arm | CPU s exec → painted and caught up | "
        "first paint s | caught up s | CPU ÷ control, per round | peak RSS MB | job running | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for point in points:
        for arm in ARMS:
            mine = [r for r in rows if r["at_s"] == point and r["arm"] == arm]
            print(
                "| %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                % (
                    point,
                    spread([r["events_bytes"] / 1e6 for r in mine]) if arm == "attach mid-run" else "-",
                    arm,
                    spread([r["cpu_s"] for r in mine]),
                    spread([r["first_paint_s"] for r in mine]),
                    spread([r["caught_up_s"] for r in mine]) if arm != "minimal app" else "-",
                    spread([r.get("cpu_ratio_to_control") for r in mine]) if arm == "attach mid-run" else "-",
                    spread([r["hwm_mb"] for r in mine], "%.0f"),
                    "/".join(sorted({"yes" if r["job_running"] else "no" for r in mine})),
                    spread([r["load"] for r in mine], "%.1f"),
                )
            )
    for r in rows:
        if r["cold"]:
            print(
                "cold (first in this run): %s at %.0f s: CPU %.2f s, first paint %.2f s"
                % (r["arm"], r["at_s"], r["cpu_s"], r["first_paint_s"] or -1)
            )
    mid = [r["cpu_s"] for r in rows if r["arm"] == "attach mid-run"]
    print(
        "goal: attaching mid-run < %.1f s CPU: %s (max %.2f s over %d attaches)"
        % (
            GOAL_CPU_S,
            "met in every attach" if max(mid) < GOAL_CPU_S else "NOT met in every attach",
            max(mid),
            len(mid),
        )
    )
    print("load average before %.1f, after %.1f" % (load_before, load()))
    (out / "midrun.json").write_text(
        json.dumps({"seed": seed, "rows": rows, "load_before": load_before, "load_after": load()}, indent=1) + "\n",
        encoding="utf-8",
    )
    print("written: %s" % (out / "midrun.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
