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

`--blocks K` measures in one process instead (a child that imports MindSpore; this parent never
does): the job's own cells (jobs/common/stepcell.py: the plain step and the monitored one, sharing
network and optimizer) on real batches, in blocks of `every` steps, alternating a baseline block
(all plain) and a monitored block (every-1 plain + 1 monitored with its rows fetched), K pairs.
On a shared, loaded machine whole runs drift by more than the cost measured; adjacent blocks see
the same load. Prints the median block times and their ratio, and the paired ratios' median.
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


CHILD = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
every, blocks, limit = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
import mindspore as ms
from mindspore import Tensor
from jobs.common import datafeed, stepcell
from jobs.train.monitor import Monitor
from workbench.jobkit.config import JobConfig
from workbench.config.layers import defaults
cfg = defaults()
cfg["device"]["target"] = "CPU"
cfg["train"]["train_limit"] = limit
ms.set_device("CPU") if hasattr(ms, "set_device") else ms.set_context(device_target="CPU")
ms.set_context(mode=ms.GRAPH_MODE)
job_cfg = JobConfig(cfg)
data = datafeed.load_run_data("/nonexistent", cfg)
parts = stepcell.build_step(ms, job_cfg)
monitor = Monitor(parts, every)  # the job's own: the monitored cell, the weight copies, the host reduction
bs = cfg["train"]["batch_size"]
n = len(data.train_y) // bs
xs = [Tensor(data.train_x[i * bs:(i + 1) * bs]) for i in range(n)]
ys = [Tensor(data.train_y[i * bs:(i + 1) * bs]) for i in range(n)]
for i in range(20):  # compile both graphs, warm up
    parts.train_step(xs[i % n], ys[i % n]).asnumpy()
    monitor.step(xs[i % n], ys[i % n]).asnumpy(); monitor.fetch()
k = 0
base, monitored, plain_steps, mon_steps = [], [], [], []
for b in range(blocks):
    for arm in (0, 1):
        t0 = time.perf_counter()
        for s in range(every):
            x, y = xs[k % n], ys[k % n]; k += 1
            t1 = time.perf_counter()
            if arm and s == every - 1:
                monitor.step(x, y).asnumpy(); monitor.fetch()
                mon_steps.append(time.perf_counter() - t1)
            else:
                parts.train_step(x, y).asnumpy()
                if s == every - 1:  # the same position in a baseline block: the plain step it replaces
                    plain_steps.append(time.perf_counter() - t1)
        (monitored if arm else base).append(time.perf_counter() - t0)
print(json.dumps({"base": base, "monitored": monitored, "plain_steps": plain_steps, "mon_steps": mon_steps}))
"""


def in_process(every: int, blocks: int, limit: int) -> int:
    """Alternate baseline and monitored blocks of `every` steps in one child process; print the ratio."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(every), str(blocks), str(limit)],
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    base, mon = got["base"], got["monitored"]
    b, m = statistics.median(base), statistics.median(mon)
    paired = statistics.median(mb / bb for bb, mb in zip(base, mon))
    q = statistics.quantiles([mb / bb for bb, mb in zip(base, mon)], n=4)
    print(
        "%d block pairs of %d steps: baseline median %.3f ms/step, monitored median %.3f ms/step"
        % (blocks, every, 1000 * b / every, 1000 * m / every)
    )
    print("ratio of medians %.3f; median of paired ratios %.3f (IQR %.3f-%.3f)" % (m / b, paired, q[0], q[2]))
    plain, one = statistics.median(got["plain_steps"]), statistics.median(got["mon_steps"])
    step_ms = 1000 * statistics.median(base) / every
    projected = 1 + (one - plain) * 1000 / (every * step_ms)
    print(
        "a monitored step: median %.3f ms against %.3f ms for the plain step at the same place: +%.3f ms, "
        "%.2fx; projected cost at every=%d: %.3f"
        % (1000 * one, 1000 * plain, 1000 * (one - plain), one / plain, every, projected)
    )
    estimates = [m / b, paired, projected]
    if max(estimates) <= GOAL:
        verdict = "within the goal of %.2f by all three estimates" % GOAL
    elif min(estimates) > GOAL:
        verdict = "OVER the goal of %.2f by all three estimates" % GOAL
    else:
        verdict = "not settled: the estimates (%.3f-%.3f) straddle the goal of %.2f" % (
            min(estimates),
            max(estimates),
            GOAL,
        )
    print("monitor cost ratio at every=%d: %s" % (every, verdict))
    return 0


def main() -> int:
    """Run the rounds, print each, the medians and the ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--limit", type=int, default=12800)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--synthetic", action="store_true", help="synthetic images (no Fashion-MNIST files needed)")
    p.add_argument("--blocks", type=int, default=0, help="K > 0: measure in one process, K block pairs")
    args = p.parse_args()
    if args.blocks:
        return in_process(args.every, args.blocks, args.limit)
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
    pairs = out["steady_mean_ms"]["paired_ratios"]
    if max(pairs) - min(pairs) > 2 * (GOAL - 1):
        print(
            "inconclusive: the rounds' paired ratios span %.3f-%.3f, wider than the margin judged; "
            "use --blocks (one process, adjacent blocks) on a loaded machine" % (min(pairs), max(pairs))
        )
        print(
            json.dumps({"every": args.every, "rounds": args.rounds, "limit": args.limit, "epochs": args.epochs, **out})
        )
        return 0
    print(
        "monitor cost ratio (steady step time) %.3f: %s the goal of %.2f"
        % (ratio, "within" if ratio <= GOAL else "OVER", GOAL)
    )
    print(json.dumps({"every": args.every, "rounds": args.rounds, "limit": args.limit, "epochs": args.epochs, **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
