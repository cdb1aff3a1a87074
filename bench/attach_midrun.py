"""The CPU cost of attaching the TUI to a running training job, against an idle app on an empty session.

A real training job (MLP, CPU, graph mode, the bundled data, many epochs) is started detached
through the CLI; after `--after` seconds, while it trains, the real `ms-workbench attach SID` is
run in a pseudo-terminal (120x36) with MS_WORKBENCH_TIMING set (bench/attach_probe.py). Its cost
is the CPU seconds of the UI process from exec until it has both painted and caught up with the
job's events file. The control, interleaved round by round, is the same command on an empty
session: the floor of Python + Textual + the first screen. Goal (issue 21): under 1 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.attach_probe import ROOT, attach  # noqa: E402
from workbench.run.runner import JobRunner  # noqa: E402
from workbench.session.store import SessionStore, job_status  # noqa: E402

GOAL_CPU_S = 1.0


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
    ap.add_argument("--after", type=float, default=25.0, help="seconds of training before the first attach")
    ap.add_argument("--rounds", type=int, default=3, help="attach + control pairs")
    ap.add_argument("--epochs", type=int, default=40, help="epochs of the job (it is cancelled at the end)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ms-workbench-midrun-") as tmp:
        sessions = Path(tmp) / "sessions"
        store = SessionStore(sessions)
        empty = store.create(["bench", "control"])
        job = start_training(sessions, args.epochs)
        sid = job.parent.parent.name
        events = job / "events.jsonl"
        try:
            started = time.monotonic()
            while time.monotonic() - started < args.after:  # a bench waits for the job to have written a while
                time.sleep(0.5)
            for i in range(args.rounds):
                for arm, target in (("control (empty session)", empty), ("attach mid-run", sid)):
                    size = events.stat().st_size if arm != "control (empty session)" else 0
                    row = attach(sessions, target, timeout_s=120)
                    running = job_status(job).state == "running"
                    row.update(
                        arm=arm,
                        round=i + 1,
                        events_bytes=size,
                        job_running=running,
                        cpu_s=cost(row),
                        load=os.getloadavg()[0],
                    )
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            JobRunner.cancel(job)
            JobRunner.wait(job, 60)
    print()
    print(
        "| arm | round | events file MB | first paint s | caught up s | CPU s (exec → painted and caught up) "
        "| peak RSS MB | job running | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.0f | %s | %.1f |"
            % (
                r["arm"],
                r["round"],
                r["events_bytes"] / 1e6,
                r["first_paint_s"] or -1,
                r["caught_up_s"] or -1,
                r["cpu_s"],
                r["hwm_mb"] or -1,
                "yes" if r["job_running"] else "no",
                r["load"],
            )
        )
    for arm in ("control (empty session)", "attach mid-run"):
        cpu = [r["cpu_s"] for r in rows if r["arm"] == arm]
        print("%s: CPU median %.2f s (%.2f–%.2f)" % (arm, statistics.median(cpu), min(cpu), max(cpu)))
    mid = statistics.median(r["cpu_s"] for r in rows if r["arm"] == "attach mid-run")
    print("goal: attaching mid-run < %.1f s CPU: %s" % (GOAL_CPU_S, "met" if mid < GOAL_CPU_S else "NOT met"))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
