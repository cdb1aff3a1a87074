"""Cost of the training-state monitor: the `train` job with train.monitor.every=N against the same run without it.

One run of this script measures both arms in the same run, interleaved round by round (baseline,
monitored, baseline, monitored, ...) so drifting machine load hits them alike: MLP 784-128-10, Adam
lr 0.001, batch 64, graph mode, CPU, `--limit` training images (default 12 800: 200 steps an epoch),
`--epochs` epochs. Each arm is a real `ms-workbench run train` in its own process.

What is compared: the mean wall time of a step over the steady steps of every epoch (compile and
warm-up steps left out, as the job's own timing rule does; a monitored step counts with its extra
work, the point being its cost), and the epochs' train_s (steps + events, validation excluded).
Prints each round, the medians of both arms and the ratio monitored / baseline. Not part of the
test suite. The goal: at most 1.05 at every=10.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.events.files import read_all  # noqa: E402
from workbench.events.steps import expand_steps  # noqa: E402

GOAL = 1.05


def run_arm(sessions: Path, every: int, limit: int, epochs: int, synthetic: bool) -> Dict[str, Any]:
    """One train job; its steady mean step ms, summed train_s and monitor samples."""
    sets = [
        "device.target=CPU",
        "train.epochs=%d" % epochs,
        "train.train_limit=%d" % limit,
        "train.val_limit=500",
        "train.warmup_steps=10",
        "train.monitor.every=%d" % every,
    ]
    if synthetic:
        sets += ["data.source=synthetic", "data.synthetic_train=%d" % max(limit + 500, 2000)]
    argv = [sys.executable, "-m", "workbench", "run", "train", "--sessions", str(sessions)]
    for item in sets:
        argv += ["--set", item]
    proc = subprocess.run(argv, cwd=str(ROOT), capture_output=True, text=True, timeout=3600)
    found = re.search(r"job \S+ in session \S+: (\S+)", proc.stderr)
    if not found:
        raise SystemExit("no job started:\n%s" % proc.stderr[-2000:])
    job = Path(found.group(1))
    events = read_all(str(job / "events.jsonl"))
    finished = [e for e in events if e["type"] == "finished"]
    if not finished or finished[-1]["status"] != "ok":
        raise SystemExit("%s did not finish ok: %s" % (job, finished[-1] if finished else "no finished event"))
    steps = [s for e in events if e["type"] in ("step", "steps") for s in expand_steps(e)]
    steady = [s["step_ms"] for s in steps if s.get("phase") == "steady"]
    samples = sum(len(e["global_step"]) for e in events if e["type"] == "monitor")
    train_s = sum(e["train_s"] for e in events if e["type"] == "epoch")
    return {
        "every": every,
        "steady_mean_ms": statistics.fmean(steady),
        "steady_n": len(steady),
        "train_s": train_s,
        "samples": samples,
    }


def main() -> int:
    """Run the rounds, print each, the medians and the ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--limit", type=int, default=12800)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--synthetic", action="store_true", help="synthetic images (no Fashion-MNIST files needed)")
    args = p.parse_args()
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for every in (0, args.every):
                row = run_arm(Path(tmp) / "sessions", every, args.limit, args.epochs, args.synthetic)
                row["round"] = r + 1
                rows.append(row)
                print(
                    "round %d every=%-3d steady mean %.3f ms (n=%d)  train_s %.2f  monitor samples %d"
                    % (row["round"], every, row["steady_mean_ms"], row["steady_n"], row["train_s"], row["samples"]),
                    flush=True,
                )
    base = [r for r in rows if r["every"] == 0]
    mon = [r for r in rows if r["every"] == args.every]
    out = {}
    for key in ("steady_mean_ms", "train_s"):
        b = statistics.median(r[key] for r in base)
        m = statistics.median(r[key] for r in mon)
        pairs = [mr[key] / br[key] for br, mr in zip(base, mon)]
        out[key] = {"baseline": b, "monitored": m, "ratio": m / b, "paired_ratios": pairs}
        print(
            "%-15s baseline %.3f  monitored(every=%d) %.3f  ratio %.3f  (paired per round: %s)"
            % (key, b, args.every, m, m / b, ", ".join("%.3f" % x for x in pairs))
        )
    ratio = out["steady_mean_ms"]["ratio"]
    print(
        "monitor cost ratio (steady step time) %.3f: %s the goal of %.2f"
        % (ratio, "within" if ratio <= GOAL else "OVER", GOAL)
    )
    print(json.dumps({"every": args.every, "rounds": args.rounds, "limit": args.limit, "epochs": args.epochs, **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
