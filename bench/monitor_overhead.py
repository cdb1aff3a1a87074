"""Cost of the training-state monitor at train.monitor.every=N against the same training without it, with intervals.

Three arms, each with its own verdict against the goal (monitored / unmonitored at most 1.05); by
default the cell and job-sliced arms (`--arms cell,job-sliced`), about 3–4 minutes on a quiet 2-core
machine (the cell arm under a minute, a job-sliced round about 10 s; `--arms job` alone about 6 minutes):

job arm (opt-in, `--arms job`; on a 2-core VM the machine's speed differs between two jobs run one after the
  other more than the cost, so it seldom settles): what the user runs, `ms-workbench run train` (default config: MLP 784-128-10, Adam,
  batch 64, graph mode, CPU, Fashion-MNIST) on the first --job-limit training images for
  --job-epochs epochs, once with train.monitor.every=N and once with train.monitor.every=0 per pair,
  in a random order per pair (seeded). The span compared is the job's own steady training time:
  the sum of its `epoch` events' train_s over the epochs after the first (epoch 1 holds the graph
  compile; validation is outside train_s), the same span in both arms. Each pair gives one ratio
  (monitored / unmonitored), and a robust twin: the ratio of the two jobs' median steady epoch
  (train_s); each with the 95 % t interval of the pairs' log ratios.
  Every job of the bench takes its device lock in a private folder, so another bench's or
  engineer's job neither waits for it nor blocks it. The monitored jobs are checked to have sampled
  every N-th step and the unmonitored ones not at all.
job-sliced arm (run by default): the job arm with drift taken out. Each round starts a monitored
  and an unmonitored train job (a random one first, each with a device-lock folder of its own) and stops both at
  once; they then run in turns of --slice seconds (bench/train_throughput.slice_arms, SIGSTOP/SIGCONT to each
  job's worker and supervisor groups), so the machine's speed drifting over seconds hits both alike. A steady
  epoch's time is the running time its job was given inside the epoch's span (its `epoch` event: t - epoch_s to
  that + train_s); each round gives the ratio of the two jobs' steady running times, and the verdict comes from
  the 95 % t interval of the rounds' log ratios. What slicing costs (caches refilled after each turn) hits both.
cell arm (the strict measure): one child process builds the train job's own step
  (jobs/common/stepcell.py) and Monitor (jobs/train/monitor.py) on the same data and times bare
  steps, nothing else of the job around them (no feeding, events or bookkeeping, which the job
  arm's denominator carries), so the same extra cost is a larger ratio here. It times many short
  blocks of N steps in pairs: a baseline block (all plain steps) and a monitored block (the
  sampled step first, with its copies made and its rows fetched, folded and queued as the job does,
  then N-1 plain steps, so what the sample leaves on the next plain step lands in the monitored
  block too), the order inside each pair random (seeded). `--gradients cell` reads the gradients
  through the monitored step cell (its second graph) even where the job reads Adam's moment. Two
  robust estimates of the ratio, each with a 95 % bootstrap interval over the pairs (resampled with
  replacement): position medians (the sum over the block's step positions of each position's median
  time, monitored over baseline) and the paired ratio (the median of the pairs' block-time ratios).

Verdicts: "met" when the interval(s) lie at or under the goal, "not met" when they lie above it,
"not settled" otherwise (more pairs needed). The load average before and after each arm is
printed; on a shared machine the intervals widen, they are not corrected for it. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import ratio_interval, shuffled  # noqa: E402
from bench.train_throughput import merged, running_within, signal_groups, slice_arms, stopped_job  # noqa: E402
from workbench.events.steps import expand_steps  # noqa: E402
from workbench.run.runner import LOCK_DIR_ENV  # noqa: E402

GOAL = 1.05

CHILD = r"""
import json, os, random, sys, time
sys.path.insert(0, sys.argv[1])
every, pairs, limit, seed = (int(v) for v in sys.argv[2:6])
from_moment = None if sys.argv[6] == "auto" else False
import mindspore as ms
from mindspore import Tensor
from jobs.common import datafeed, stepcell
from jobs.train.monitor import Monitor
from workbench.jobkit.config import JobConfig
from workbench.config.layers import defaults

class Pipe:
    # the job's EventPipe queues the fields and encodes them later; encoding here keeps that cost in the arm
    def put(self, type_, **fields):
        json.dumps(fields)

cfg = defaults()
cfg["device"]["target"] = "CPU"
cfg["train"]["train_limit"] = limit
ms.set_device("CPU") if hasattr(ms, "set_device") else ms.set_context(device_target="CPU")
ms.set_context(mode=ms.GRAPH_MODE)
job_cfg = JobConfig(cfg)
data = datafeed.load_run_data("/nonexistent", cfg)  # no job folder: the config's own data
parts = stepcell.build_step(ms, job_cfg)
monitor = Monitor(parts, every, from_moment=from_moment)  # the job's own: the sampled step, the copies, the host reduction
pipe = Pipe()
bs = cfg["train"]["batch_size"]
n = len(data.train_y) // bs
xs = [Tensor(data.train_x[i * bs:(i + 1) * bs]) for i in range(n)]
ys = [Tensor(data.train_y[i * bs:(i + 1) * bs]) for i in range(n)]
k = 0
sampled = 0

def block(monitored):
    global k, sampled
    times = []
    for s in range(every):
        x, y = xs[k % n], ys[k % n]
        k += 1
        t = time.perf_counter()
        if monitored and s == 0:
            monitor.step(x, y).asnumpy()
            rows = monitor.fetch()
            sampled += 1
            monitor.record(pipe, rows, 1, sampled * every)
        else:
            parts.train_step(x, y).asnumpy()
        times.append(time.perf_counter() - t)
    return times

for _ in range(20):  # compile both graphs, warm up
    block(False)
    block(True)
rng = random.Random(seed)
load_before = os.getloadavg()
base, mon, first = [], [], []
for p in range(pairs):
    order = [False, True]
    rng.shuffle(order)
    first.append(int(order[0]))
    for arm in order:
        (mon if arm else base).append(block(arm))
print(json.dumps({"base": base, "mon": mon, "monitored_first": first,
                  "load_before": load_before, "load_after": os.getloadavg(), "batches": n}))
"""


def estimates(base: np.ndarray, mon: np.ndarray) -> Tuple[float, float]:
    """(position-median ratio, median paired block ratio) of pairs of blocks (rows) of step times (columns)."""
    by_position = float(np.median(mon, axis=0).sum() / np.median(base, axis=0).sum())
    paired = float(np.median(mon.sum(axis=1) / base.sum(axis=1)))
    return by_position, paired


def bootstrap(base: np.ndarray, mon: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The two estimates over `resamples` resamplings of the pairs (rows: resample, columns: estimate)."""
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, 2))
    for i in range(resamples):
        pick = rng.integers(0, len(base), len(base))
        out[i] = estimates(base[pick], mon[pick])
    return out


def verdict(intervals: List[Tuple[float, float]]) -> str:
    """'met' when every interval lies at or under GOAL, 'not met' when every one lies above it, else 'not settled'."""
    if all(hi <= GOAL for _, hi in intervals):
        return "met"
    if all(lo > GOAL for lo, _ in intervals):
        return "not met"
    return "not settled"


def measure(every: int, pairs: int, limit: int, seed: int, gradients: str = "auto") -> Dict[str, Any]:
    """Run the child; its block times as arrays and the load averages."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(every), str(pairs), str(limit), str(seed), gradients],
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=3600,
        # a session of its own, as the job's supervisor starts the job (autogroup scheduling: bench/train_throughput.py)
        start_new_session=True,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    got["base"], got["mon"] = np.array(got["base"]), np.array(got["mon"])
    return got


def report(got: Dict[str, Any], every: int, resamples: int, seed: int) -> Dict[str, Any]:
    """Print the cell arm's estimates, their intervals, the per-position costs, the load and the verdict; return them."""
    base, mon = got["base"], got["mon"]
    point = estimates(base, mon)
    boot = bootstrap(base, mon, resamples, seed)
    intervals = [(float(np.percentile(boot[:, j], 2.5)), float(np.percentile(boot[:, j], 97.5))) for j in range(2)]
    pos_base, pos_mon = np.median(base, axis=0) * 1000, np.median(mon, axis=0) * 1000
    print("cell arm (strict: the bare step cell, nothing of the job around it)")
    print(
        "%d pairs of %d-step blocks (order random per pair; monitored first in %d); %d batches cycled"
        % (len(base), every, sum(got["monitored_first"]), got["batches"])
    )
    print(
        "plain step median %.3f ms; monitored step %.3f ms against %.3f ms at that place (+%.3f ms); "
        "the plain step after it %.3f ms against %.3f ms (+%.3f ms)"
        % (
            np.median(base) * 1000,
            pos_mon[0],
            pos_base[0],
            pos_mon[0] - pos_base[0],
            pos_mon[1],
            pos_base[1],
            pos_mon[1] - pos_base[1],
        )
    )
    for name, value, (lo, hi) in zip(("position medians", "paired block ratio"), point, intervals):
        print("  %-19s ratio %.4f  95%% bootstrap interval %.4f-%.4f" % (name, value, lo, hi))
    print(
        "load average (1, 5, 15 min) before %s, after %s on %d cores"
        % (
            "/".join("%.2f" % v for v in got["load_before"]),
            "/".join("%.2f" % v for v in got["load_after"]),
            os.cpu_count() or 0,
        )
    )
    said = verdict(intervals)
    print("cell arm: monitor cost at every=%d against the goal of at most %.2f: %s" % (every, GOAL, said))
    return {
        "arm": "cell",
        "every": every,
        "pairs": len(base),
        "ratios": {"position_medians": point[0], "paired_block_ratio": point[1]},
        "intervals": {"position_medians": intervals[0], "paired_block_ratio": intervals[1]},
        "plain_step_ms": float(np.median(base) * 1000),
        "monitored_step_extra_ms": float(pos_mon[0] - pos_base[0]),
        "next_step_extra_ms": float(pos_mon[1] - pos_base[1]),
        "load_before": got["load_before"],
        "load_after": got["load_after"],
        "verdict": said,
    }


def start_job(sessions: Path, every: int, epochs: int, limit: int, locks: Optional[Path] = None) -> Path:
    """Start one detached `ms-workbench run train` with train.monitor.every=`every` (its device lock in `locks`, else
    where the bench's environment says); its job folder, once the supervisor wrote pids.json."""
    sets = {
        "device.target": "CPU",
        "train.train_limit": limit,
        "train.val_limit": 1000,
        "train.epochs": epochs,
        "train.monitor.every": every,
    }
    cmd = [sys.executable, "-m", "workbench", "run", "train", "--detach", "--sessions", str(sessions)]
    for key, value in sets.items():
        cmd += ["--set", "%s=%s" % (key, value)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    env.setdefault("GLOG_v", "3")
    if locks is not None:
        env[LOCK_DIR_ENV] = str(locks)
    proc = subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise SystemExit("train job did not start (%s):\n%s" % (proc.returncode, proc.stderr[-2000:]))
    return Path(proc.stdout.strip().splitlines()[-1])


def finished_events(job_dir: Path) -> List[Dict[str, Any]]:
    """The events of a job that ended; it must have finished ok."""
    events = [json.loads(line) for line in (job_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    if events[-1].get("type") != "finished" or events[-1].get("status") != "ok":
        raise SystemExit("train job %s did not finish ok: %s" % (job_dir, events[-1]))
    return events


def run_job(sessions: Path, every: int, epochs: int, limit: int) -> Dict[str, Any]:
    """One detached `ms-workbench run train` with train.monitor.every=`every`; its steady span from its own events."""
    job_dir = start_job(sessions, every, epochs, limit)
    deadline = time.monotonic() + 1800
    while not (job_dir / "exit.json").exists():
        if time.monotonic() > deadline:
            raise SystemExit("train job %s did not end within 30 minutes" % job_dir)
        time.sleep(0.2)
    return job_span(finished_events(job_dir), every, str(job_dir))


def job_span(events: List[Dict[str, Any]], every: int, where: str) -> Dict[str, Any]:
    """The steady span of a finished train job's events (epochs after the first), checked to be monitored as asked."""
    epochs = [e for e in events if e["type"] == "epoch"]
    steps = [s for e in events if e["type"] in ("step", "steps") for s in expand_steps(e)]
    sampled = [g for e in events if e["type"] == "monitor" for g in e["global_step"]]
    expected = [s["global_step"] for s in steps if every and s["global_step"] % every == 0]
    if sampled != expected:
        raise SystemExit("train job %s sampled steps %s..., expected %s..." % (where, sampled[:5], expected[:5]))
    if len(epochs) < 2:
        raise SystemExit("train job %s has %d epoch(s); the steady span needs at least 2" % (where, len(epochs)))
    steady = [s for s in steps if s["epoch"] > 1]
    on_sample = [s["step_ms"] for s in steady if every and s["global_step"] % every == 0]
    off_sample = [s["step_ms"] for s in steady if not (every and s["global_step"] % every == 0)]
    return {
        "steady_s": sum(e["train_s"] for e in epochs[1:]),
        "median_epoch_s": float(np.median([e["train_s"] for e in epochs[1:]])),
        "steady_steps": len(steady),
        "samples": len(sampled),
        "sampled_step_ms": float(np.median(on_sample)) if on_sample else None,
        "plain_step_ms": float(np.median(off_sample)),
        "job_dir": where,
    }


def print_load(load_before: Tuple[float, float, float]) -> None:
    """The load averages before the arm and now."""
    print(
        "  load average (1, 5, 15 min) before %s, after %s on %d cores"
        % (
            "/".join("%.2f" % v for v in load_before),
            "/".join("%.2f" % v for v in os.getloadavg()),
            os.cpu_count() or 0,
        )
    )


def job_arm(every: int, pairs: int, epochs: int, limit: int, seed: int) -> Dict[str, Any]:
    """Pairs of real train jobs (monitored, unmonitored) in a random order per pair; the paired ratios and verdict."""
    import random

    rng = random.Random(seed)
    runs: Dict[int, List[Dict[str, Any]]] = {every: [], 0: []}
    load_before = os.getloadavg()
    print("job arm (what the user runs: ms-workbench run train, train.monitor.every=%d against 0)" % every, flush=True)
    with tempfile.TemporaryDirectory(prefix="monitor-overhead-") as tmp:
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")  # this bench's own device locks
        for pair in range(pairs):
            for arm in shuffled([every, 0], rng):
                runs[arm].append(run_job(Path(tmp), arm, epochs, limit))
            on, off = runs[every][-1], runs[0][-1]
            print(
                "  pair %d: steady %d steps %.3f s monitored / %.3f s not = %.4f (load %.2f)"
                % (
                    pair + 1,
                    on["steady_steps"],
                    on["steady_s"],
                    off["steady_s"],
                    on["steady_s"] / off["steady_s"],
                    os.getloadavg()[0],
                ),
                flush=True,
            )
    ratios = [a["steady_s"] / b["steady_s"] for a, b in zip(runs[every], runs[0])]
    # a load spike inflates one epoch of one job: the median steady epoch is the robust twin of the sum
    medians = [a["median_epoch_s"] / b["median_epoch_s"] for a, b in zip(runs[every], runs[0])]
    interval, median_interval = ratio_interval(ratios), ratio_interval(medians)
    said = verdict([interval[1:], median_interval[1:]]) if interval and median_interval else "not settled"
    on_runs, off_runs = runs[every], runs[0]
    print(
        "  %d pairs of jobs, %d images x %d epochs (%d steady steps each, %d sampled per monitored job)"
        % (len(ratios), limit, epochs, off_runs[0]["steady_steps"], on_runs[0]["samples"])
    )
    print(
        "  job step median (from its step events): unmonitored %.3f ms; monitored job: sampled step %.3f ms, other steps %.3f ms"
        % (
            float(np.median([r["plain_step_ms"] for r in off_runs])),
            float(np.median([r["sampled_step_ms"] for r in on_runs])),
            float(np.median([r["plain_step_ms"] for r in on_runs])),
        )
    )
    for name, got, values in (("steady time", interval, ratios), ("median epoch", median_interval, medians)):
        if got:
            print(
                "  paired %-12s ratio %.4f  95%% t interval %.4f-%.4f  (pairs %.3f..%.3f)"
                % (name, got[0], got[1], got[2], min(values), max(values))
            )
    print_load(load_before)
    print("job arm: monitor cost at every=%d against the goal of at most %.2f: %s" % (every, GOAL, said), flush=True)
    return {
        "arm": "job",
        "every": every,
        "pairs": len(ratios),
        "ratios": {"steady_time": ratios, "median_epoch": medians},
        "ratio": {
            "steady_time": interval[0] if interval else None,
            "median_epoch": median_interval[0] if median_interval else None,
        },
        "intervals": {
            "steady_time": interval[1:] if interval else None,
            "median_epoch": median_interval[1:] if median_interval else None,
        },
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "verdict": said,
    }


def _stopped_job(tmp: Path, name: str, every: int, epochs: int, limit: int) -> Dict[str, Any]:
    """A train job started and stopped at once (its worker's and its supervisor's process groups), with a device-lock
    folder of its own (two run at once here, never on one device at one moment): an arm of slice_arms."""
    began = time.monotonic()
    arm = stopped_job(name, start_job(tmp, every, epochs, limit, locks=tmp / ("locks-" + name)), began)
    arm["every"] = every
    return arm


def _release(arms: List[Dict[str, Any]], ended: bool) -> None:
    """Nothing left stopped; after a round cut short, every job still running is asked to stop (its supervisor)
    and waited for (up to 15 s), so the temporary folder is not removed under it."""
    for arm in arms:
        signal_groups(arm["groups"], signal.SIGCONT)
    if ended:
        return
    for arm in arms:
        if not arm["done"]():
            try:
                os.kill(arm["supervisor"], signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 15.0
    while any(not a["done"]() for a in arms) and time.monotonic() < deadline:
        time.sleep(0.1)


def sliced_round(every: int, epochs: int, limit: int, slice_s: float, rng: Any) -> Dict[str, Dict[str, Any]]:
    """One round of the sliced job arm: a monitored and an unmonitored train job (started in a random order), both
    alive at once, run in turns of `slice_s` seconds (train_throughput.slice_arms); each steady epoch timed by the
    running time its job was given inside the epoch's span (its `epoch` event: t - epoch_s to that + train_s)."""
    arms: List[Dict[str, Any]] = []
    ended = False
    with tempfile.TemporaryDirectory(prefix="monitor-overhead-sliced-") as tmp:
        offsets = [time.time() - time.monotonic()]
        try:
            for name in shuffled(["monitored", "plain"], rng):
                arms.append(_stopped_job(Path(tmp), name, every if name == "monitored" else 0, epochs, limit))
            slice_arms(arms, slice_s)
            ended = True
        finally:
            _release(arms, ended)
        offsets.append(time.time() - time.monotonic())
        offset = sum(offsets) / 2.0
        out: Dict[str, Dict[str, Any]] = {}
        for arm in arms:
            events = finished_events(arm["job_dir"])
            got = job_span(events, arm["every"], str(arm["job_dir"]))
            runs = merged(arm["runs"])
            spans = [
                (e["t"] - e["epoch_s"] - offset, e["t"] - e["epoch_s"] - offset + e["train_s"])
                for e in events
                if e["type"] == "epoch"
            ][1:]
            got["running_s"] = [running_within(runs, a, b) for a, b in spans]
            got["turns"] = len(arm["runs"])
            out[arm["name"]] = got
    return out


def sliced_job_arm(every: int, rounds: int, epochs: int, limit: int, seed: int, slice_s: float) -> Dict[str, Any]:
    """The job arm with both jobs alive at once and run in turns: the machine's drift over seconds hits both alike."""
    import random

    rng = random.Random(seed)
    load_before = os.getloadavg()
    print(
        "sliced job arm (ms-workbench run train, train.monitor.every=%d against 0, both at once in %.2f s turns)"
        % (every, slice_s),
        flush=True,
    )
    ratios, got = [], []
    for r in range(rounds):
        pair = sliced_round(every, epochs, limit, slice_s, rng)
        on, off = pair["monitored"], pair["plain"]
        ratios.append(sum(on["running_s"]) / sum(off["running_s"]))
        got.append(pair)
        print(
            "  round %d: steady running time %.3f s monitored / %.3f s not = %.4f (%d and %d turns; load %.2f)"
            % (
                r + 1,
                sum(on["running_s"]),
                sum(off["running_s"]),
                ratios[-1],
                on["turns"],
                off["turns"],
                os.getloadavg()[0],
            ),
            flush=True,
        )
    interval = ratio_interval(ratios)
    said = verdict([interval[1:]]) if interval else "not settled"
    print(
        "  %d rounds, %d images x %d epochs (%d steady steps a job, %d sampled a monitored job); job step medians from "
        "their events: unmonitored %.3f ms, monitored sampled %.3f ms, other %.3f ms"
        % (
            len(ratios),
            limit,
            epochs,
            got[0]["plain"]["steady_steps"],
            got[0]["monitored"]["samples"],
            float(np.median([g["plain"]["plain_step_ms"] for g in got])),
            float(np.median([g["monitored"]["sampled_step_ms"] for g in got])),
            float(np.median([g["monitored"]["plain_step_ms"] for g in got])),
        )
    )
    if interval:
        print(
            "  paired steady running time ratio %.4f  95%% t interval %.4f-%.4f  (rounds %.3f..%.3f)"
            % (interval[0], interval[1], interval[2], min(ratios), max(ratios))
        )
    print_load(load_before)
    print("sliced job arm: monitor cost at every=%d against the goal of at most %.2f: %s" % (every, GOAL, said))
    return {
        "arm": "job-sliced",
        "every": every,
        "rounds": len(ratios),
        "slice_s": slice_s,
        "ratios": ratios,
        "ratio": interval[0] if interval else None,
        "interval": interval[1:] if interval else None,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "verdict": said,
    }


def main() -> int:
    """Run the arms asked for; print each arm's ratio, interval and verdict, then one JSON line of all."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--arms",
        default="cell,job-sliced",
        help="comma-separated: cell, job, job-sliced (default cell and job-sliced; job, one job after the other, never "
        "settled on a 2-core machine)",
    )
    p.add_argument("--every", type=int, default=10, help="train.monitor.every of the monitored arm")
    p.add_argument("--pairs", type=int, default=1000, help="cell arm: block pairs (one baseline, one monitored each)")
    p.add_argument("--limit", type=int, default=6400, help="cell arm: training images to cycle through")
    p.add_argument(
        "--gradients",
        choices=("auto", "cell"),
        default="auto",
        help="cell arm: how a sampled step's gradients are read: as the job does (auto: Adam's moment for the "
        "default config) or through the monitored step cell (its second compiled graph)",
    )
    p.add_argument("--resamples", type=int, default=1000, help="cell arm: bootstrap resamples")
    p.add_argument("--job-pairs", type=int, default=16, help="job arm: pairs of train jobs (about 20 s a pair, quiet)")
    p.add_argument("--job-epochs", type=int, default=6, help="job arm: epochs per job (epoch 1 is not counted)")
    p.add_argument("--job-limit", type=int, default=12800, help="job arm: training images per epoch")
    p.add_argument("--rounds", type=int, default=16, help="job-sliced arm: rounds (two jobs at once each)")
    p.add_argument("--slice", type=float, default=0.25, help="job-sliced arm: seconds of each turn")
    p.add_argument("--seed", type=int, default=1, help="the arms' order in each pair")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    if not arms or set(arms) - {"cell", "job", "job-sliced"}:
        raise SystemExit("--arms must name cell, job and/or job-sliced, got %r" % args.arms)
    if args.every < 2 or args.pairs < 10 or args.job_pairs < 2 or args.job_epochs < 2:
        raise SystemExit("--every must be at least 2, --pairs 10, --job-pairs 2 and --job-epochs 2")
    results: List[Dict[str, Any]] = []
    if "cell" in arms:
        got = measure(args.every, args.pairs, args.limit, args.seed, args.gradients)
        results.append(report(got, args.every, args.resamples, args.seed))
    if "job" in arms:
        results.append(job_arm(args.every, args.job_pairs, args.job_epochs, args.job_limit, args.seed))
    if "job-sliced" in arms:
        results.append(sliced_job_arm(args.every, args.rounds, args.job_epochs, args.job_limit, args.seed, args.slice))
    line = json.dumps(results)
    if args.json:
        Path(args.json).write_text(line + "\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
