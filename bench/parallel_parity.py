"""Data-parallel parity: does 2-rank training learn like one process with the same effective batch?

For each of k seeds (default 5) this runs two real `train` jobs through the CLI, one after the
other (arms interleaved seed by seed so drifting machine load hits both alike):

  single    one process, batch 64
  parallel  train.parallel.workers=2 through msrun, batch 32 per rank (64 per optimizer step)

Same data (the seed-37 54 000 / 6 000 split, or its first --train-limit samples), model, optimizer,
lr, epochs and seed; both take the same number of optimizer steps. It prints, per epoch, the
validation accuracy and macro-F1 of both arms (mean and sample standard deviation over the seeds)
and the paired difference parallel − single with its 95 % confidence interval (Student t, k − 1
degrees of freedom), and writes everything to a JSON file.

Goal (issue 22): at every epoch the mean difference is within one standard deviation of the
single-process seed-to-seed spread, for accuracy and for macro-F1.

It also compares the step losses: the single process's loss at global step g against the mean of
the two ranks' losses at g (each rank's loss is the mean over its half of the batch). When the
ranks together see exactly the single process's batch, these agree to float rounding.
Not part of the test suite; this parent process never imports MindSpore.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.events.protocol import read_all  # noqa: E402
from workbench.system.atomic import write_json  # noqa: E402

METRICS = ("accuracy", "macro_f1")
# Two-sided 95 % Student t quantiles by degrees of freedom (scipy is not needed for these).
T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    30: 2.042,
}
EARLY_STEPS = 20  # step-loss agreement is also reported over the first steps, before rounding grows


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with df degrees of freedom (next lower tabulated df)."""
    if df <= 0:
        return float("nan")
    return T975[max(k for k in T975 if k <= df)] if df <= 30 else 1.96


def free_port() -> int:
    """A TCP port nothing listens on now, for msrun's scheduler."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_job(sessions: Path, sets: List[str], python: str, timeout_s: float) -> Path:
    """Run `python -m workbench run train` with the given --set items; return the job folder."""
    argv = [python, "-m", "workbench", "run", "train", "--sessions", str(sessions)]
    for item in sets:
        argv += ["--set", item]
    # Device locks of the bench's own: on a shared machine another workbench's CPU job would refuse
    # ours. What this bench compares is accuracy, not time, so sharing the CPU does not bias it.
    env = dict(os.environ, PYTHONPATH=str(ROOT), MS_WORKBENCH_LOCK_DIR=str(sessions / ".locks"))
    proc = subprocess.run(
        argv, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s
    )
    found = re.search(r"job \S+ in session \S+: (\S+)", proc.stderr)
    if proc.returncode != 0 or not found:
        raise SystemExit(
            "train job failed (exit %d): %s\n%s"
            % (proc.returncode, " ".join(argv), (proc.stderr + proc.stdout)[-3000:])
        )
    return Path(found.group(1))


def read_run(job: Path) -> Dict[str, Any]:
    """Per-epoch validation metrics (rank 0), step losses by global step and rank, steps per epoch."""
    events = read_all(str(job / "events.jsonl"))
    epochs = {}
    for ev in events:
        if ev.get("type") == "epoch" and ev.get("rank") in (None, 0):
            epochs[int(ev["epoch"])] = {
                "accuracy": ev["val"]["accuracy"],
                "macro_f1": ev["val"]["macro_f1"],
                "train_loss": ev.get("train_loss"),
                "steps": ev.get("steps"),
            }
    losses: Dict[int, Dict[int, float]] = {}
    sizes: Dict[int, Dict[int, int]] = {}
    for ev in events:
        if ev.get("type") == "step":
            rank = int(ev.get("rank") or 0)
            losses.setdefault(int(ev["global_step"]), {})[rank] = float(ev["loss"])
            sizes.setdefault(int(ev["global_step"]), {})[rank] = int(ev["batch_size"])
    return {"job": str(job), "epochs": epochs, "losses": losses, "sizes": sizes}


def loss_agreement(single: Dict[str, Any], par: Dict[str, Any]) -> Dict[str, Any]:
    """|single loss − size-weighted mean of the ranks' losses| per global step: max early and overall."""
    diffs = []
    for step in sorted(single["losses"]):
        ranks = par["losses"].get(step)
        if not ranks:
            continue
        weights = par["sizes"][step]
        total = sum(weights.values())
        mean = sum(ranks[r] * weights[r] for r in ranks) / total
        diffs.append(abs(single["losses"][step][0] - mean))
    early = diffs[:EARLY_STEPS]
    return {
        "steps_compared": len(diffs),
        "max_abs_first_%d" % EARLY_STEPS: max(early) if early else None,
        "max_abs_all": max(diffs) if diffs else None,
        "median_abs_all": statistics.median(diffs) if diffs else None,
    }


def summarise(values: List[float]) -> Dict[str, Any]:
    """Mean, sample standard deviation, min and max of a list."""
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return {"mean": statistics.fmean(values), "sd": sd, "min": min(values), "max": max(values), "n": len(values)}


def paired(single: List[float], par: List[float]) -> Dict[str, Any]:
    """Mean of the per-seed differences par − single, its sd and 95 % t interval."""
    diffs = [p - s for s, p in zip(single, par)]
    k = len(diffs)
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs) if k > 1 else float("nan")
    half = t975(k - 1) * sd / math.sqrt(k) if k > 1 else float("nan")
    return {"mean": mean, "sd": sd, "ci95": [mean - half, mean + half], "per_seed": diffs}


def table(runs: List[Dict[str, Any]], epochs: int) -> Dict[str, Any]:
    """Per epoch and metric: both arms' summaries, the paired difference and whether the goal holds."""
    out: Dict[str, Any] = {}
    for epoch in range(1, epochs + 1):
        row = {}
        for metric in METRICS:
            s = [r["single"]["epochs"][epoch][metric] for r in runs]
            p = [r["parallel"]["epochs"][epoch][metric] for r in runs]
            single, par, diff = summarise(s), summarise(p), paired(s, p)
            goal = abs(diff["mean"]) <= single["sd"] if len(runs) > 1 else None
            row[metric] = {"single": single, "parallel": par, "diff": diff, "goal_met": goal}
        out[str(epoch)] = row
    return out


def render(rows: Dict[str, Any]) -> str:
    """The table as Markdown (the same text goes into docs/PERFORMANCE.md)."""
    lines = [
        "| epoch | metric | single mean ± sd | 2-rank mean ± sd | diff (2-rank − single) | 95 % CI | "
        "|diff| ≤ single sd |",
        "|---|---|---|---|---|---|---|",
    ]
    for epoch, row in rows.items():
        for metric in METRICS:
            c = row[metric]
            lines.append(
                "| %s | %s | %.4f ± %.4f | %.4f ± %.4f | %+.4f | [%+.4f, %+.4f] | %s |"
                % (
                    epoch,
                    metric,
                    c["single"]["mean"],
                    c["single"]["sd"],
                    c["parallel"]["mean"],
                    c["parallel"]["sd"],
                    c["diff"]["mean"],
                    c["diff"]["ci95"][0],
                    c["diff"]["ci95"][1],
                    {True: "yes", False: "**no**", None: "n/a"}[c["goal_met"]],
                )
            )
    return "\n".join(lines)


def base_sets(args: argparse.Namespace, seed: int) -> List[str]:
    """--set items both arms share."""
    return [
        "device.target=CPU",
        "train.epochs=%d" % args.epochs,
        "train.seed=%d" % seed,
        "train.train_limit=%d" % args.train_limit,
        "train.val_limit=%d" % args.val_limit,
        "train.lr=%s" % args.lr,
        "train.optimizer=%s" % args.optimizer,
        "model.name=%s" % args.model,
        "limits.job_timeout_s=%d" % args.job_timeout_s,
        "limits.stall_s=300",
    ]


def main(argv: Optional[List[str]] = None) -> int:
    """Run the bench; print the table; write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="k: number of seeds (train.seed = 1..k)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64, help="single-process batch; each rank gets batch / workers")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--train-limit", type=int, default=0, help="0 = the whole 54 000-sample split")
    parser.add_argument("--val-limit", type=int, default=0)
    parser.add_argument("--lr", default="0.001")
    parser.add_argument("--optimizer", default="adam", choices=("adam", "sgd"))
    parser.add_argument("--model", default="mlp", choices=("mlp", "cnn"))
    parser.add_argument("--job-timeout-s", type=int, default=1800)
    parser.add_argument("--python", default=sys.executable, help="interpreter for the CLI (and the jobs)")
    parser.add_argument("--sessions", help="sessions root (default: a temporary folder, kept)")
    parser.add_argument(
        "--json", help="where to write the results (default: parallel_parity.json in the sessions root)"
    )
    args = parser.parse_args(argv)
    if args.batch % args.workers:
        parser.error("--batch %d is not a multiple of --workers %d" % (args.batch, args.workers))
    sessions = Path(args.sessions or tempfile.mkdtemp(prefix="parity-"))
    args.json = args.json or str(sessions / "parallel_parity.json")
    t0 = time.time()
    runs = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        common = base_sets(args, seed)
        single = read_run(
            run_job(sessions, common + ["train.batch_size=%d" % args.batch], args.python, args.job_timeout_s + 60)
        )
        par = read_run(
            run_job(
                sessions,
                common
                + [
                    "train.batch_size=%d" % (args.batch // args.workers),
                    "train.parallel.workers=%d" % args.workers,
                    "train.parallel.master_port=%d" % free_port(),
                ],
                args.python,
                args.job_timeout_s + 60,
            )
        )
        steps = {
            arm: [r["epochs"][e]["steps"] for e in sorted(r["epochs"])]
            for arm, r in (("single", single), ("parallel", par))
        }
        if steps["single"] != steps["parallel"]:
            raise SystemExit("seed %d: optimizer steps per epoch differ: %s" % (seed, steps))
        agreement = loss_agreement(single, par)
        runs.append(
            {
                "seed": seed,
                "single": single,
                "parallel": par,
                "steps_per_epoch": steps["single"],
                "loss_agreement": agreement,
            }
        )
        print(
            "seed %d: single %s | 2-rank %s | step-loss |diff| first %d max %.2e, all max %.2e (%.0f s so far)"
            % (
                seed,
                " ".join("%.4f" % single["epochs"][e]["accuracy"] for e in sorted(single["epochs"])),
                " ".join("%.4f" % par["epochs"][e]["accuracy"] for e in sorted(par["epochs"])),
                EARLY_STEPS,
                agreement["max_abs_first_%d" % EARLY_STEPS],
                agreement["max_abs_all"],
                time.time() - t0,
            ),
            flush=True,
        )
    rows = table(runs, args.epochs)
    text = render(rows)
    met = [c["goal_met"] for row in rows.values() for c in row.values()]
    verdict = None if None in met else all(met)
    print()
    print(text)
    print()
    print(
        "goal (|mean diff| <= single-process sd at every epoch, accuracy and macro-F1): %s"
        % ({True: "met", False: "NOT met", None: "needs k >= 2"}[verdict])
    )
    for run in runs:  # the step-loss tables are large: keep only the summaries in the JSON
        for arm in ("single", "parallel"):
            run[arm] = {"job": run[arm]["job"], "epochs": run[arm]["epochs"]}
    write_json(
        Path(args.json),
        {
            "bench": "parallel_parity",
            "argv": sys.argv,
            "settings": vars(args),
            "started": t0,
            "wall_s": time.time() - t0,
            "load_avg_end": os.getloadavg(),
            "goal_met": verdict,
            "goal_rule": "|mean(parallel - single)| <= sample sd of single over seeds, every epoch, accuracy and macro_f1",
            "table": rows,
            "markdown": text,
            "runs": runs,
            "sessions": str(sessions),
        },
    )
    print("wrote %s (%.0f s)" % (args.json, time.time() - t0))
    return 0 if verdict is not False else 1


if __name__ == "__main__":
    sys.exit(main())
