"""Training throughput: the course's recipe as written, the `train` job, and a bare numpy-fed loop.

One run of this script measures all three on the same data (the 54 000-image training split,
seed 37) and config (MLP 784-128-10, Adam lr 0.001, batch 64, graph mode, CPU):

  course  NumpySlicesDataset(shuffle=True).batch(64) + TrainOneStepCell, loss fetched once per epoch
  job     `ms-workbench run train --detach` (numpy slices, loss.asnumpy() and a step event every
          step); its epoch time is the event's train_s (validation excluded, like the others)
  bare    the same numpy slicing and TrainOneStepCell in a plain loop with loss.asnumpy()
          every step, and nothing else (no events, no bookkeeping)

Each arm runs in its own fresh process (this parent never imports MindSpore); every round runs
each arm once, in a random order (seeded, printed), so drifting machine load hits them alike
(with --bracket the job and the bare loop are one unit of the order: bare epochs, job, bare epochs).
Epoch 1 includes the graph compile; the goals are judged on the steady epochs (2 and later).

Job vs bare loop: both time the same span of an epoch, from its first batch to its last step's
loss fetched, after the epoch's shuffle and outside the compile epoch (the job's train_s starts
after its epoch_order; the bare loop starts its clock after its permutation). Each round gives
one paired ratio (the job's median steady epoch / the bare loop's, same round); the verdict comes
from the 95 % interval of those ratios (t interval of their logarithms): "within 5 %" when the
whole interval is at most +5 %, "not within" when all of it is above, else "not settled" (more
rounds needed). `--until-settled` stops early only when the 99 % interval is settled (a look
before the last round needs a stricter bar); `--budget-min` starts no round that would end after
the budget. Prints a table, the ratios, the spread of every estimator on the same rounds and the
rounds this spread would need. Not part of the test suite.

Why many short rounds: one arm's steady epochs vary little within a process (sd of log ≈ 0.08 on a
quiet machine) and a lot between processes (≈ 0.12 per arm, the two arms of a round uncorrelated),
so extra epochs in a process buy almost nothing; the interval narrows as 1/sqrt(rounds). Two epochs
per arm (compile + one steady) and a short validation (--val-limit, outside the timed span) make
the most rounds per minute.

Where the spread comes from (measured 2026-12-02, 2 vCPUs under KVM, mostly with the other vCPU busy
with someone's tests): at least in part the machine's speed drifting over seconds, not a level each
process keeps. One bare-loop process timing 0.25 s chunks for 30-170 s ran each chunk at 100 % of a
CPU with no steal time and still drifted 1.0-2.0 ms a step in runs of a few seconds; two ~1 s windows
1 s apart differed by a log sd of 0.07-0.20, 8 s apart by 0.13-0.28. In the quiet 08:46 run epochs 2
and 3 of a process agreed to 0.04-0.06 but epochs 3 and 4 only to 0.12-0.13. Thread counts
(op_tuning.threads_num 1, dispatch_threads_num 1) and THP off changed nothing visible (6 processes
each, sd 0.18-0.24 under that load).

`--bracket` (opt-in, NOT in the recommended command): one bare process loads, compiles and times its
epochs, waits idle (0.00 CPU s measured) while the job runs as users run it, waits for the job's
supervisor to be gone plus SETTLE_S, runs BRACKET_WARMUP untimed steps and times as many epochs again;
its level is the geometric mean of before and after. Over 3 runs (85 rounds) it cut the log-ratio sd
only a little against the bare epochs before the job alone (0.156 vs 0.165 at load ~1; 0.163 vs 0.205
and 0.322 vs 0.411 under load), and its after-half ran +5.4 % [-0.4 %, +11.2 %] slower than its
before-half (same process; no trend inside the after-epoch; a job-free control with an 8 s sleep
instead of the job: -5.6 % [-17 %, +6 %], 9 processes). If that difference is real the bracket
favours the job by about half of it, which matters at 5 %; hence opt-in. Its output shows the rows
"bare before/after the job only" and the check "bare after the job / bare before it".

Every run prints each arm's time outside its steps measured inside its own process, which no drift
enters: the job's bookkeeping between a step's loss fetched and the next batch taken (2.2-2.8 % of a
steady epoch at load ~1) against the bare loop's loop overhead (~0.15 %).

Time-sliced rounds (`--slices S`, the recommended way to judge job vs bare): both arms run at the same time but
only one at any moment. The bench starts each arm and stops it at once (SIGSTOP to the job's worker group and its
supervisor's group, found in pids.json; to the bare loop's own group), then lets them run in turns of about S
seconds (SIGCONT, sleep, SIGSTOP; with --turn-jitter J each turn's length is drawn from S * [1 - J, 1 + J], so
that other load of a fixed period cannot stay in step with one arm: measured no better, see below, so off by
default). Drift over seconds then hits both arms nearly alike, and so does other people's load. An epoch's time is the running time its arm was given inside the epoch's
span: its turns (monotonic [before SIGCONT, after SIGSTOP]) clipped to the span. The job's span comes from its
`epoch` event (`t` - epoch_s to that + train_s, unix seconds put on time.monotonic() by the offset the bench reads
before and after each round; the product's events are unchanged), the bare loop's from time.monotonic() stamps it
prints. The bare loop paces: it compiles on BRACKET_WARMUP steps plus one short last batch, then runs steady
epochs until the bench tells it (SIGUSR1) that the other arm has ended; its "epoch" is its running time per step
over each of the other arm's epochs' spans times the steps of an epoch, so both are timed over the same seconds.
(--no-pace gives the bare loop its own epochs instead: in the A/A check below, epoch pairs overlapping in time by
less than 85 % had a log-ratio sd of 0.13-0.15, above 85 % 0.04.) The compile epoch stays out, as before; each
round gives one paired ratio; verdict, --until-settled and --budget-min as above. A round cut short (an error,
Ctrl+C, SIGTERM) leaves nothing stopped: every arm gets SIGCONT and is ended (the job through its supervisor).

What slicing costs: the stopped arm's caches are refilled when it goes on. The bench measures it on the bare loop
from its steps' monotonic spans: a step cut by a stop took 1.2-2.1 ms more running time than a whole one (medians
over runs), 0.5-0.8 % of an epoch at 0.25 s turns and 1.4 % at 0.1 s turns. It hits both arms, so it mostly
cancels in the ratio; the job's own cost per turn is not measured (its steps carry no spans) and may differ from
the bare loop's by some fraction of that. The job's event batching and progress lines are paced by wall time
(every 0.1 s and 0.5 s), which runs about twice as fast as its running time when sliced: a few more small writes
per running second (well under 0.1 % of an epoch). `--aa` is the check of the method: a second bare loop
(bare-b) in place of the job, sliced the same way; it must come out about 0 % with a narrow interval.

Measured 2026-12-02 with others' tests and benches on the machine (load 2-8 on 2 vCPUs), 3 epochs per arm:
  A/A, 0.25 s turns, no pacing:   +1.3 % [-2.8 %, +5.6 %], log-ratio sd 0.081, 17 rounds in 11.3 min (load 4.4-5.5)
  A/A, 0.10 s turns, no pacing:   +2.5 % [-1.4 %, +6.7 %], sd 0.079, 18 rounds in 11.4 min (load 4.3-4.7)
  A/A, 0.25 s turns, pacing:      -1.3 % [-3.4 %, +0.9 %], sd 0.031, 10 rounds in 11.5 min (load 5.3-6.2)
  A/A, 0.25 s turns, pacing:      -1.0 % [-4.1 %, +2.3 %], sd 0.069, 20 rounds in 8.6 min (load 2.3-3.9)
  A/A, 0.25 s +-50 %, pacing:     +0.7 % [-5.0 %, +6.7 %], sd 0.096, 13 rounds in 9.2 min (load 4.3-5.9)
  job vs bare, 0.25 s, pacing:    +8.9 % [+5.1 %, +12.9 %] (not within), sd 0.056, 12 rounds in 14.1 min (load 4.6-7.3)
against sd ≈ 0.16 one arm after the other (below); each arm's own between-process sd was 0.2-0.37 in those runs,
so slicing cancels most of the drift and of others' load. What it cannot cancel: a whole process now and then
slower than its twin over all its epochs (A/A rounds at -20 % and +24 % with both epochs alike, while the pacing
loop's own epochs kept their pace): the A/A sd is 0.03-0.10, so an interval of +-1.5 % takes about 60-170 rounds,
not 15 minutes; +-3 % (enough when the mean is 4 % or more away from +5 %) takes 15-40. The A/A checks came out
centred on 0 (-1.3 % to +2.5 %, 0 inside every interval). Whether the job's +8.9 % under load 5-7 holds on a quiet
machine (one arm after the other at load ~1 gave +4.3 % [+1.0 %, +7.7 %]) is not measured here. Under that load a
round took 30-80 s.

  python bench/train_throughput.py --slices 0.25 --arms job,bare --epochs 3 --rounds 200 --until-settled
      --min-rounds 10 --budget-min 15 --val-limit 600 --max-busy 1

The command for the quiet run one arm after the other (13-15 s a round, so ≈ 60 rounds in 15 minutes; on
2026-12-02 at load ~1, 40 rounds gave -0.9 % [-6.6 %, +5.2 %] with a log-ratio sd of 0.19, about 43 rounds short
of settling):

  python bench/train_throughput.py --arms job,bare --epochs 2 --rounds 200 --until-settled
      --min-rounds 20 --budget-min 15 --val-limit 600 --max-busy 0.5 --quiet-timeout 20

`--model cnn` runs the same arms with the small CNN (jobs/common/models.py) instead of the MLP, plus
`job-uncapped` (the job with train.cpu_isa_cap=none: oneDNN free to use AVX-512) and, with
`--compat-python` (a MindSpore 2.5 interpreter), `course-2.5` (the course recipe on that version).
`--limit N` trains on the first N images of the split (the uncapped CNN is slow on AVX-512 CPUs).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import ratio_interval, rounds_to_settle  # noqa: E402
from bench.stats import spread as spread_fmt  # noqa: E402
from workbench.events.steps import expand_steps  # noqa: E402
from workbench.run.runner import LOCK_DIR_ENV  # noqa: E402

SEED = 37
BATCH = 64
GOAL_VS_COURSE = 2.5  # job throughput >= 2.5x the course recipe's
GOAL_VS_BARE = 0.05  # job epoch time within 5 % of the bare loop's
SETTLE_S = 0.5  # after the job's supervisor is gone, before the bare loop's warm-up (see settle_after_job)
BRACKET_WARMUP = 200  # untimed steps of the waiting bare loop before its epochs after the job (its threads slept)


MODEL = os.environ.get("BENCH_MODEL", "mlp")
LIMIT = int(os.environ.get("BENCH_LIMIT", "0"))
VAL_LIMIT = 0  # the job arms' validation images (0 = all 6 000); validation is outside the timed span
PIN: List[int] = []  # CPUs every arm's processes are held to (--pin); empty = free, as users run the job


def _held() -> Any:
    """The child's start-up hook that holds it (and everything it starts) to the --pin CPUs; None when not pinned."""
    if not PIN:
        return None
    cpus = set(PIN)
    return lambda: os.sched_setaffinity(0, cpus)


def load_split():
    """float32 [54000, 1, 28, 28] images and int32 labels of the seed-37 training split (first LIMIT if set)."""
    from workbench.data.dataset import scale
    from workbench.data.loader import load_fashion_mnist
    from workbench.data.split import stratified_split

    data = load_fashion_mnist()
    train_idx, _ = stratified_split(data.train_labels, 0.1, SEED)
    if LIMIT:
        train_idx = train_idx[:LIMIT]
    return scale(data.train_images[train_idx]), data.train_labels[train_idx].astype("int32")


def make_net():
    """The network of the job's own models (jobs/common/models.py), so an arm times what the job trains."""
    from jobs.common.models import build_net

    return build_net(MODEL, 128)


def arm_course(epochs: int) -> Dict[str, Any]:
    """The course text's training entry, as written (only the device target changed to CPU)."""
    import mindspore as ms
    import numpy as np
    from mindspore import dataset as ds
    from mindspore import nn

    train_x, train_y = load_split()
    ms.set_seed(SEED)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU", device_id=0)

    def make_dataset(x, y, training):
        source = ds.NumpySlicesDataset({"image": x.astype(np.float32), "label": y.astype(np.int32)}, shuffle=training)
        return source.batch(BATCH, drop_remainder=False)

    net = make_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Adam(net.trainable_params(), learning_rate=0.001)
    train_step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)

    iteration_ms: List[float] = []

    def run_epoch(train_data):
        train_step.set_train(True)
        mark = time.perf_counter()  # bench bookkeeping: one clock read per step, as in the other arms
        for image, label in train_data.create_tuple_iterator():
            loss = train_step(image, label)
            now = time.perf_counter()
            iteration_ms.append((now - mark) * 1000.0)
            mark = now
        return float(loss.asnumpy())

    train_data = make_dataset(train_x, train_y, True)
    times, last, steady_ms = [], [], []
    for epoch in range(epochs):
        start = time.perf_counter()
        del iteration_ms[:]
        last.append(run_epoch(train_data))
        times.append(time.perf_counter() - start)
        if epoch:
            steady_ms += iteration_ms
    return {"epoch_s": times, "last_loss": last, "step_ms_median": statistics.median(steady_ms)}


def arm_bare(epochs: int, bracket: bool = False, pace: bool = False) -> Dict[str, Any]:
    """The least a numpy-fed loop can do with the job's feeding and sync: slice, step, fetch.

    With `bracket`, after its epochs it prints a ready line and waits for a line on stdin (the parent runs
    the job meanwhile), then runs BRACKET_WARMUP untimed steps and `epochs - 1` more timed epochs.
    With `pace` (--slices), it compiles on BRACKET_WARMUP steps, then runs steady epochs until SIGUSR1 (after the
    step under way; the last epoch is partial): the bench times it over the other arm's epochs' spans.
    """
    stop: List[int] = []  # with `pace`: SIGUSR1 came (the handler is set first: its default would end the process)
    if pace:
        signal.signal(signal.SIGUSR1, lambda signum, frame: stop.append(signum))
    import mindspore as ms
    import numpy as np
    from mindspore import Tensor, nn

    train_x, train_y = load_split()
    ms.set_device("CPU", 0) if hasattr(ms, "set_device") else ms.set_context(device_target="CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(SEED)
    net = make_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    train_step = nn.TrainOneStepCell(
        nn.WithLossCell(net, loss_fn), nn.Adam(net.trainable_params(), learning_rate=0.001)
    )
    train_step.set_train(True)
    rng = np.random.default_rng(SEED)
    n = len(train_y)
    steady_ms: List[float] = []

    between: List[float] = []  # per timed steady epoch: its time outside the steps (the loop itself)

    halves: List[List[float]] = []  # per timed steady epoch: its first and second half, seconds
    # on the machine-wide clock (time.monotonic, CLOCK_MONOTONIC), for --slices: every epoch's [start, end] and the
    # steady epochs' steps' [start, end] (perf_counter is the same clock on Linux; monotonic says so wherever run)
    spans: List[List[float]] = []
    step_spans: List[List[float]] = []

    def epoch(steps_ms: Any, limit: int = 0) -> Any:
        # `limit` steps and a last batch as short as a whole epoch's: graph mode compiles that shape too
        order = rng.permutation(n)[: limit * BATCH + n % BATCH if limit else n]
        in_steps = 0.0
        start = time.perf_counter()  # after the shuffle, as the job's train_s
        span = [time.monotonic()]
        middle = start
        for begin in range(0, len(order), BATCH):
            if begin == (len(order) // BATCH // 2) * BATCH:
                middle = time.perf_counter()
            t0 = time.perf_counter()
            m0 = time.monotonic()
            idx = order[begin : begin + BATCH]
            loss = train_step(Tensor.from_numpy(train_x[idx]), Tensor.from_numpy(train_y[idx]))
            value = float(loss.asnumpy())
            if steps_ms is not None:
                took = time.perf_counter() - t0
                in_steps += took
                steps_ms.append(took * 1000.0)
                step_spans.append([m0, time.monotonic()])
            if stop:
                break
        took = time.perf_counter() - start
        span.append(time.monotonic())
        if not limit or pace:
            spans.append(span)
        if steps_ms is not None:
            between.append(took - in_steps)
            halves.append([middle - start, start + took - middle])
        return took, value

    times, last = [], []
    if pace:
        epochs = 1 << 30
    for index in range(epochs):
        took, value = epoch(steady_ms if index else None, BRACKET_WARMUP if pace and not index else 0)
        times.append(took)
        last.append(value)
        if stop:
            break
    result: Dict[str, Any] = {
        "epoch_s": times,
        "last_loss": last,
        "between_steps_s": between,
        "halves_s": halves,
        "spans": spans,
        "step_spans": step_spans,
    }
    if bracket:
        print(json.dumps({"ready": True}), flush=True)
        cpu0, wall0 = time.process_time(), time.monotonic()
        sys.stdin.readline()
        # the idle wait must leave the job alone: MindSpore's threads sleep then (checked: its CPU time is printed)
        result["wait_s"], result["wait_cpu_s"] = time.monotonic() - wall0, time.process_time() - cpu0
        epoch(None, BRACKET_WARMUP)
        result["after_s"] = [epoch(steady_ms)[0] for _ in range(epochs - 1)]
        result["bracket_s"] = math.sqrt(steady(times) * statistics.median(result["after_s"]))
    result["step_ms_median"] = statistics.median(steady_ms)
    return result


def arm_job(epochs: int, sessions: Path, isa_cap: str = "auto") -> Dict[str, Any]:
    """`ms-workbench run train --detach` with the same config; epoch times from its events.

    Detached, so only the job and its supervisor run; a follower (`run` without --detach,
    or the TUI) reads the events beside it and is not part of the job's cost.
    """
    job_dir = start_job(epochs, sessions, isa_cap)
    while not (job_dir / "exit.json").exists():
        time.sleep(0.1)  # short rounds: a 0.5 s poll was a few per cent of a round
    return job_result(job_dir)


def start_job(epochs: int, sessions: Path, isa_cap: str = "auto") -> Path:
    """Start the `train` job detached (the CLI returns once the supervisor wrote pids.json); its job folder."""
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
        "model.name=%s" % MODEL,
        "--set",
        "model.hidden=128",
        "--set",
        "train.cpu_isa_cap=%s" % isa_cap,
        "--set",
        "train.train_limit=%d" % LIMIT,
        "--set",
        "train.val_limit=%d" % VAL_LIMIT,
        "--set",
        "train.epochs=%d" % epochs,
        "--set",
        "train.batch_size=%d" % BATCH,
        "--set",
        "train.lr=0.001",
        "--set",
        "train.optimizer=adam",
        "--set",
        "train.mode=graph",
        "--set",
        "train.seed=%d" % SEED,
        "--set",
        "data.split_seed=%d" % SEED,
        "--set",
        "device.target=CPU",
    ]
    # the supervisor and the job inherit the CLI's CPU affinity, so --pin holds the whole job as it holds the bare loop
    proc = subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True, env=_env(), preexec_fn=_held())
    if proc.returncode != 0:
        raise SystemExit("train job did not start (%s):\n%s" % (proc.returncode, proc.stderr[-2000:]))
    return Path(proc.stdout.strip().splitlines()[-1])


def job_result(job_dir: Path, unix_minus_monotonic: Any = None) -> Dict[str, Any]:
    """The ended job's epoch times and bookkeeping from its events; with the clock offset, also its epochs' spans.

    An `epoch` event's `t` (unix seconds, stamped at the emit after validation) minus its epoch_s is the epoch's
    start; plus train_s, the end of its training. `unix_minus_monotonic` (time.time() - time.monotonic(), read by
    the bench) puts them on the machine-wide monotonic clock: the two clocks advance at one rate (NTP slews both),
    so it holds unless the wall clock is stepped; the bench reads it before and after a round and prints both.
    """
    events = [json.loads(line) for line in (job_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    if events[-1].get("type") != "finished" or events[-1].get("status") != "ok":
        raise SystemExit("train job %s did not finish ok: %s" % (job_dir, events[-1]))
    epochs_ev = [e for e in events if e["type"] == "epoch"]
    perf = [e for e in events if e["type"] == "perf" and e.get("scope") == "run"][-1]
    steps = [s for e in events if e["type"] in ("step", "steps") for s in expand_steps(e)]
    # per steady epoch: train_s minus its steps' step_ms = the job's own work between steps (same process, same time)
    between = [
        e["train_s"] - sum(s["step_ms"] for s in steps if s["epoch"] == e["epoch"]) / 1000.0
        for e in epochs_ev
        if e["epoch"] > 1
    ]
    spans = []
    if unix_minus_monotonic is not None:
        for e in epochs_ev:
            start = e["t"] - e["epoch_s"] - unix_minus_monotonic
            spans.append([start, start + e["train_s"]])
    return {
        "epoch_s": [e["train_s"] for e in epochs_ev],
        "spans": spans,
        "epoch_with_val_s": [e["epoch_s"] for e in epochs_ev],
        "val_macro_f1": [e["val"]["macro_f1"] for e in epochs_ev],
        "first_step_s": perf["first_step_s"],
        "steady": perf["steady"],
        "job_dir": str(job_dir),
        "step_ms_median": statistics.median(s["step_ms"] for s in steps if s["epoch"] > 1),
        "between_steps_s": between,
        "cpu_isa_cap": [e for e in events if e["type"] == "started"][0].get("cpu_isa_cap"),
    }


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("GLOG_v", "3")
    return env


def cpu_busy(window_s: float = 0.5) -> float:
    """Fraction of all CPU time that was busy during the next `window_s` (from /proc/stat)."""

    def sample():
        with open("/proc/stat") as fh:
            fields = [float(v) for v in fh.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
        return sum(fields), idle

    total0, idle0 = sample()
    time.sleep(window_s)
    total1, idle1 = sample()
    return 1.0 - (idle1 - idle0) / max(total1 - total0, 1e-9)


def wait_for_quiet(max_busy: float, timeout_s: float) -> float:
    """Wait until other processes leave the CPU mostly idle (shared machines); return the busy fraction seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        busy = cpu_busy()
        if busy <= max_busy or time.monotonic() > deadline:
            return busy


def run_child(arm: str, epochs: int, python: str = sys.executable, cwd: str = "") -> Dict[str, Any]:
    """Run one arm in a fresh interpreter; it prints its result as the last stdout line."""
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), "--arm", arm, "--epochs", str(epochs)],
        # this run's own folder: whatever MindSpore leaves in its working directory is not shared with another bench
        cwd=cwd or tempfile.gettempdir(),
        capture_output=True,
        text=True,
        env=_env(),
        # a session of its own, as the job's supervisor starts the job: with the kernel's autogroup scheduling a
        # child left in this bench's session shared its CPU with whatever else ran there (4x slower, measured)
        start_new_session=True,
        preexec_fn=_held(),
    )
    if proc.returncode != 0:
        raise SystemExit("arm %s failed:\n%s" % (arm, proc.stderr[-3000:]))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result.pop("step_spans", None)  # for --slices only
    return result


def run_bracket(epochs: int, run_job: Any, cwd: str, before_job: Any = None) -> Any:
    """The bare loop's epochs right before and right after the job's run, in one waiting bare process.

    The bare process loads, compiles and times its epochs, then waits (idle) while `run_job()` runs the job as
    users run it; told to go on, it times as many epochs again. Returns (job result, bare result).
    """
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--arm", "bare", "--epochs", str(epochs), "--bracket"],
        cwd=cwd or tempfile.gettempdir(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env=_env(),
        start_new_session=True,  # as run_child: its own session
        preexec_fn=_held(),
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline()
        while line and not line.startswith('{"ready"'):
            line = proc.stdout.readline()
        if not line:
            proc.wait()
            err.seek(0)
            raise SystemExit("arm bare (bracket) failed before the job:\n%s" % err.read()[-3000:])
        if before_job is not None:
            before_job()
        job = run_job()
        ended = time.monotonic()
        settle_after_job(job)
        proc.stdin.write("go\n")
        proc.stdin.close()
        out = proc.stdout.read()
        if proc.wait() != 0:
            err.seek(0)
            raise SystemExit("arm bare (bracket) failed after the job:\n%s" % err.read()[-3000:])
        bare = json.loads(out.strip().splitlines()[-1])
        bare.pop("step_spans", None)  # for --slices only
        bare["after_job_s"] = time.monotonic() - ended  # from the job's exit.json to the bare loop's end
        return job, bare
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()


def merged(runs: Sequence[Sequence[float]]) -> List[List[float]]:
    """The [start, end] intervals sorted, overlapping or touching ones joined, empty ones left out."""
    out: List[List[float]] = []
    for a, b in sorted((float(a), float(b)) for a, b in runs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def running_within(runs: Sequence[Sequence[float]], start: float, end: float) -> float:
    """Seconds of [start, end] that fall inside the running intervals `runs`: a sliced arm's time for that span."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in merged(runs))


def switch_cost(runs: Sequence[Sequence[float]], step_spans: Sequence[Sequence[float]]) -> Optional[Tuple[float, ...]]:
    """(median ms of a step cut by a stop, median ms of a step run in one piece, steps cut, steps whole), each step
    timed by its running time only; None without both kinds. The difference is what one stop-and-go adds."""
    runs = merged(runs)
    starts = [a for a, _ in runs]
    cut: List[float] = []
    whole: List[float] = []
    for s, e in step_spans:
        i = bisect.bisect_right(starts, s) - 1
        took = 1000.0 * running_within(runs[max(i, 0) :], s, e)
        (whole if i >= 0 and e <= runs[i][1] else cut).append(took)
    if not cut or not whole:
        return None
    return statistics.median(cut), statistics.median(whole), float(len(cut)), float(len(whole))


def steps_per_epoch(limit: int = 0) -> int:
    """Steps of one epoch over the training split (or its first `limit` images), the last batch partial."""
    return -(-(limit or 54000) // BATCH)


def paced_step_s(paced: Dict[str, Any], start: float, end: float) -> Tuple[float, float]:
    """(running seconds per step, coverage) of a pacing arm over [start, end]: its running time inside its steady
    epochs within the span over the steps it did there (a step cut by the span's edge counts by its running time
    inside), and the share of the span its steady epochs covered. NaN per step when it did no step there."""
    runs = paced["runs"]
    steady = paced["spans"][1:]
    inside = [[max(a, start), min(b, end)] for a, b in steady if min(b, end) > max(a, start)]
    took = sum(running_within(runs, a, b) for a, b in inside)
    steps = 0.0
    for a, b in paced["step_spans"]:
        if b <= start or a >= end:
            continue
        whole = running_within(runs, a, b)
        steps += running_within(runs, max(a, start), min(b, end)) / whole if whole > 0 else 0.0
    covered = sum(b - a for a, b in inside) / (end - start) if end > start else 0.0
    return (took / steps if steps else float("nan")), covered


def signal_groups(groups: Sequence[int], sig: int) -> None:
    """Signal each process group, ignoring one that is gone."""
    for group in groups:
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            pass


def slice_arms(arms: List[Dict[str, Any]], slice_s: float, jitter: float = 0.0, rng: Any = None) -> None:
    """Let the started (stopped) arms run one at a time, `slice_s` seconds each in turn, until all have ended.

    With `jitter` J each turn lasts slice_s * (1 + J * u), u uniform in [-1, 1] from `rng`: turns of one length
    would stay in step with other load that comes back at a fixed period, which then hits one arm for a while.

    Each arm's "runs" gets the monotonic [before SIGCONT, after SIGSTOP] interval of every turn it had; once only
    one arm is left it runs on alone until it ends (one last interval). A pacing arm (runs until told) is told to
    stop (SIGUSR1) once only pacing arms are left.
    """
    turn = 0
    while True:
        live = [a for a in arms if not a["done"]()]
        if not live:
            return
        for arm in live:
            if all(a.get("pacer") for a in live) and not arm.get("told"):
                arm["told"] = True  # the timed arms have ended: the pacing bare loop ends after its step under way
                os.kill(arm["proc"].pid, signal.SIGUSR1)
        arm = live[turn % len(live)]
        turn += 1
        began = time.monotonic()
        signal_groups(arm["groups"], signal.SIGCONT)
        if len(live) == 1:
            while not arm["done"]():
                time.sleep(0.05)
            arm["runs"].append([began, time.monotonic()])
            continue
        # one sleep: a bench waking often would take CPU and cache from the running arm
        time.sleep(slice_s * (1.0 + jitter * (2.0 * rng.random() - 1.0)) if jitter else slice_s)
        signal_groups(arm["groups"], signal.SIGSTOP)
        arm["runs"].append([began, time.monotonic()])


def job_groups(pids: Dict[str, Any]) -> List[int]:
    """A job's process groups from its pids.json: the worker's (pgid = its pid) and its supervisor's (it leads its
    own session); the watchdog only waits."""
    return [int(pids["pgid"]), os.getpgid(int(pids["supervisor"]))]


def stopped_job(name: str, job_dir: Path, began: float) -> Dict[str, Any]:
    """A job just started (at monotonic `began`), stopped at once: an arm of slice_arms."""
    pids = json.loads((job_dir / "pids.json").read_text())
    groups = job_groups(pids)
    signal_groups(groups, signal.SIGSTOP)
    return {
        "name": name,
        "groups": groups,
        "runs": [[began, time.monotonic()]],
        "job_dir": job_dir,
        "supervisor": int(pids["supervisor"]),
        "done": lambda: (job_dir / "exit.json").exists(),
    }


def _start_sliced(name: str, epochs: int, tmp: Path, pace: bool = False) -> Dict[str, Any]:
    """Start one arm and stop it at once: the job (its supervisor's and its worker's groups) or a bare loop (with
    `pace`, one that runs steady epochs until told to stop)."""
    began = time.monotonic()
    if name == "job":
        return stopped_job(name, start_job(epochs, tmp), began)
    out, err = tempfile.TemporaryFile(mode="w+"), tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--arm", "bare", "--epochs", str(epochs)]
        + (["--pace"] if pace else []),
        cwd=str(tmp),
        stdout=out,  # a file, not a pipe: a stopped reader would block a child writing more than a pipe holds
        stderr=err,
        text=True,
        env=_env(),
        start_new_session=True,  # its own group, to stop and go on as one, and its own session (see run_child)
        preexec_fn=_held(),
    )
    signal_groups([proc.pid], signal.SIGSTOP)
    return {
        "name": name,
        "groups": [proc.pid],
        "runs": [[began, time.monotonic()]],
        "proc": proc,
        "out": out,
        "err": err,
        "pacer": pace,
        "done": lambda: proc.poll() is not None,
    }


def _end_sliced(arm: Dict[str, Any]) -> None:
    """After a round cut short (an error, Ctrl+C): let the arm go on, then end it (the job through its supervisor)."""
    signal_groups(arm["groups"], signal.SIGCONT)
    if "proc" in arm:
        if arm["proc"].poll() is None:
            arm["proc"].kill()
        arm["proc"].wait()
    elif not arm["done"]():
        try:
            os.kill(arm["supervisor"], signal.SIGTERM)  # it stops the job's group, SIGKILL after the grace period
        except ProcessLookupError:
            pass


def _end_stray_jobs(sessions: Path) -> None:
    """After a round cut short: every job under the bench's sessions folder without exit.json (one whose start was
    cut short too) goes on and is asked to stop, through its supervisor; waits (up to 15 s) for their exit.json, so
    the bench's temporary folder is not removed under a supervisor still writing into it."""
    asked = []
    for pids_file in sessions.glob("*/jobs/*/pids.json"):
        if (pids_file.parent / "exit.json").exists():
            continue
        try:
            pids = json.loads(pids_file.read_text())
            groups = job_groups(pids)
        except (OSError, ValueError, KeyError):
            continue
        signal_groups(groups, signal.SIGCONT)
        try:
            os.kill(int(pids["supervisor"]), signal.SIGTERM)
            asked.append(pids_file.parent / "exit.json")
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 15.0
    while asked and not all(p.exists() for p in asked) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.2 if asked else 0.0)  # the supervisor exits right after writing exit.json


def sliced_round(
    names: List[str], epochs: int, tmp: Path, slice_s: float, pacer: str = "", jitter: float = 0.0, rng: Any = None
) -> Dict[str, Dict[str, Any]]:
    """One round of --slices: start the arms in this order (each stopped at once), run them in turns until all
    have ended, and time each epoch by the running time the arm was given inside the epoch's span.

    Cut short (an error, Ctrl+C, SIGTERM), it leaves nothing stopped: every arm goes on and is ended.
    """
    arms: List[Dict[str, Any]] = []
    offsets = [time.time() - time.monotonic()]
    ended = False
    try:
        for name in names:
            arms.append(_start_sliced(name, epochs, tmp, name == pacer))
        slice_arms(arms, slice_s, jitter, rng)
        ended = True
    finally:
        for arm in arms:
            if ended:
                signal_groups(arm["groups"], signal.SIGCONT)  # nothing is left stopped
            else:
                _end_sliced(arm)
        if not ended:
            _end_stray_jobs(tmp)
    offsets.append(time.time() - time.monotonic())
    results: Dict[str, Dict[str, Any]] = {}
    for arm in arms:
        if "proc" in arm:
            arm["out"].seek(0)
            arm["err"].seek(0)
            if arm["proc"].returncode != 0:
                raise SystemExit("arm %s failed:\n%s" % (arm["name"], arm["err"].read()[-3000:]))
            result = json.loads(arm["out"].read().strip().splitlines()[-1])
            arm["out"].close()
            arm["err"].close()
        else:
            result = job_result(arm["job_dir"], statistics.fmean(offsets))
        runs = merged(arm["runs"])
        result["wall_epoch_s"] = result["epoch_s"]
        result["epoch_s"] = [running_within(runs, a, b) for a, b in result["spans"]]
        result["turns"] = len(arm["runs"])
        result["turn_s_median"] = statistics.median(b - a for a, b in arm["runs"][1:-1] or arm["runs"])
        result["clock_offset_change_s"] = offsets[1] - offsets[0]
        result["runs"] = runs
        cost = switch_cost(runs, result.get("step_spans", []))
        if cost is not None:
            result["switch_cost"] = cost
        results[arm["name"]] = result
    for name, result in results.items():
        # the share of this arm's steady training time (wall) that the other arms' steady epochs also spanned
        other = [s for n, r in results.items() if n != name for s in r["spans"][1:]]
        mine = result["spans"][1:]
        result["overlap"] = sum(running_within(other, a, b) for a, b in mine) / max(sum(b - a for a, b in mine), 1e-9)
    if pacer:
        timed = [r for n, r in results.items() if n != pacer][0]
        paced = results[pacer]
        # the pacing bare loop's time per step over each of the timed arm's epochs, as a whole epoch of as many steps
        paced["own_epoch_s"] = paced["epoch_s"]
        per_step, covered = zip(*(paced_step_s(paced, a, b) for a, b in timed["spans"]))
        # its epoch 1: its own compile epoch (BRACKET_WARMUP steps; left out of every ratio, as the timed arm's)
        paced["epoch_s"] = [paced["own_epoch_s"][0]] + [v * steps_per_epoch(LIMIT) for v in per_step[1:]]
        paced["overlap"] = statistics.fmean(covered[1:]) if len(covered) > 1 else 0.0
        paced["coverage"] = list(covered)
        paced["spans"] = timed["spans"]  # it stands for the timed arm's epochs now
    for result in results.values():
        result.pop("step_spans", None)
        result.pop("runs", None)
    return results


def settle_after_job(job: Dict[str, Any], settle_s: float = SETTLE_S) -> None:
    """Before the bare loop's epochs after the job: wait until the job's supervisor is gone (it writes exit.json
    before it exits), then `settle_s` more, so the job's exit is not inside the bare loop's time."""
    try:
        pid = int(json.loads((Path(job["job_dir"]) / "pids.json").read_text())["supervisor"])
    except (OSError, ValueError, KeyError):
        pid = 0
    deadline = time.monotonic() + 5.0
    while pid and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            break
        time.sleep(0.02)
    time.sleep(settle_s)


def job_between_bare(epochs: int, tmp: Path, max_busy: float, quiet_timeout: float) -> Any:
    """One --bracket unit: the job run between the bare loop's epochs, waiting for a quiet CPU before the job too."""
    seen: Dict[str, float] = {}

    def quiet_before_job() -> None:
        seen["busy"] = wait_for_quiet(max_busy, quiet_timeout)
        seen["began"] = time.monotonic()

    job, bare = run_bracket(epochs, lambda: arm_job(epochs, tmp), str(tmp), quiet_before_job)
    job.update(cpu_busy_before=seen["busy"], arm_wall_s=time.monotonic() - seen["began"])
    return job, bare


def summarize(raw: Dict[str, List[Dict[str, Any]]], n_images: int = 54000) -> Dict[str, Dict[str, Any]]:
    """Per arm: epoch-1 time, steady epoch median with quartiles over all rounds, step median, images/s."""
    rows = {}
    for arm, runs in raw.items():
        pooled = sorted(v for r in runs for v in r["epoch_s"][1:] + r.get("after_s", []))
        quart = statistics.quantiles(pooled, n=4) if len(pooled) > 1 else [pooled[0]] * 3
        st = statistics.median(pooled)
        rows[arm] = {
            "first_epoch_s": statistics.median(r["epoch_s"][0] for r in runs),
            "steady_epoch_s": st,
            "steady_q1_s": quart[0],
            "steady_q3_s": quart[2],
            "n_steady": len(pooled),
            "fastest_steady_epoch_s": pooled[0],
            "images_per_s": n_images / st,
            "median_of_run_medians_s": statistics.median(level(r) for r in runs),
            "step_ms_median": statistics.median(r["step_ms_median"] for r in runs),
        }
    return rows


def verdict(interval: Any, goal: float = GOAL_VS_BARE) -> str:
    """'within 5 %' / 'not within' / 'not settled' for the job's epoch time over the bare loop's."""
    if interval is None:
        return "not settled"
    _, low, high = interval
    if high <= 1.0 + goal:
        return "within %.0f %%" % (100 * goal)
    if low > 1.0 + goal:
        return "not within"
    return "not settled"


def level(run: Dict[str, Any]) -> float:
    """A process's steady epoch time: the median steady epoch; a bracketing bare loop's, the geometric mean of its
    median before the job and its median after it."""
    return run["bracket_s"] if "bracket_s" in run else steady(run["epoch_s"])


def after_job(run: Dict[str, Any]) -> float:
    """A bracketing bare loop's median epoch after the job (other runs: their median steady epoch)."""
    return statistics.median(run["after_s"]) if "after_s" in run else steady(run["epoch_s"])


def paired_ratios(
    raw: Dict[str, List[Dict[str, Any]]], arm: str = "job", base: str = "bare", of: Any = None
) -> List[float]:
    """Per round: the arm's estimate over the base's in the same round (default: `level`)."""
    of = of or level
    return [of(a) / of(b) for a, b in zip(raw.get(arm, []), raw.get(base, []))]


# What one process's time can be summed up by. Only the epoch ones time the same span in both arms (an epoch from
# its first batch to its last loss fetched, the job's per-step bookkeeping and event writing included); the per-step
# median leaves out what the job does between steps, so it is shown for comparison and never judged on. The bare
# loop's "before"/"after" rows exist only with --bracket (without it they equal the first row).
ESTIMATORS = {
    "median steady epoch": (level, True),
    "median steady epoch, bare before the job only": (lambda r: steady(r["epoch_s"]), True),
    "median steady epoch, bare after the job only": (after_job, True),
    "mean steady epoch": (lambda r: statistics.fmean(r["epoch_s"][1:] + r.get("after_s", [])), True),
    # a bracketing bare loop's epochs before the job only: the fastest of more epochs than the job's would be biased
    "fastest steady epoch": (lambda r: min(r["epoch_s"][1:]), True),
    "median step (not the same span)": (lambda r: r["step_ms_median"], False),
}


def estimator_table(raw: Dict[str, List[Dict[str, Any]]], arm: str = "job", base: str = "bare") -> List[str]:
    """Markdown rows: per estimator, the between-process spread of each arm and of the paired log-ratios, and
    the interval it would give on these same rounds (the verdict uses the first one only)."""
    rows = [
        "| estimator (same rounds) | sd of log, %s processes | sd of log, %s processes | sd of log-ratio | "
        "ratio, 95 %% interval |" % (arm, base),
        "|---|---|---|---|---|",
    ]
    bracketed = any("after_s" in r for r in raw[base])
    for name, (of, _) in ESTIMATORS.items():
        if "bare" in name and not bracketed:
            continue
        logs_a = [math.log(of(r)) for r in raw[arm]]
        logs_b = [math.log(of(r)) for r in raw[base]]
        ratios = paired_ratios(raw, arm, base, of)
        interval = ratio_interval(ratios)
        rows.append(
            "| %s | %.3f | %.3f | %.3f | %s |"
            % (
                name,
                _sd(logs_a),
                _sd(logs_b),
                _sd([math.log(r) for r in ratios]),
                "%+.1f %% [%+.1f %%, %+.1f %%]" % tuple(100 * (v - 1) for v in interval) if interval else "-",
            )
        )
    return rows


def spread_sources(runs: List[Dict[str, Any]]) -> Any:
    """(within, between): the sd of log steady epochs inside a process (pooled) and of the processes' medians.

    Within is None with one steady epoch a process. Between includes what within adds to a median.
    """
    logs = [[math.log(v) for v in r["epoch_s"][1:]] for r in runs]
    within = [statistics.variance(p) for p in logs if len(p) > 1]
    return (
        math.sqrt(statistics.fmean(within)) if within else None,
        _sd([math.log(level(r)) for r in runs]),
    )


def outside_steps(raw: Dict[str, List[Dict[str, Any]]]) -> List[str]:
    """Per arm: the share of a steady epoch spent outside its steps (between one step's loss fetched and the next
    batch taken), measured inside each process: the machine's drift does not enter it, so it shows the job's own
    bookkeeping apart from the noise of the paired ratio."""
    out = []
    for arm in ("job", "bare", "bare-b"):
        shares = [
            b / e
            for r in raw.get(arm, [])
            for b, e in zip(
                r.get("between_steps_s", []), r.get("wall_epoch_s", r["epoch_s"])[1:] + r.get("after_s", [])
            )
        ]
        if shares:
            out.append(
                "%s: time outside the steps, same process: %s %% of a steady epoch (median [min-max] over %d epochs)"
                % (arm, spread_fmt((100 * v for v in shares), "%.2f").split(" (n=")[0], len(shares))
            )
    return out


def bracket_check(bare_runs: List[Dict[str, Any]]) -> List[str]:
    """With --bracket: the bare loop's epochs after the job over its epochs before it, same process; an interval
    away from 1 would mean the two halves of the bracket differ for a reason of their own (not drift)."""
    pairs = [after_job(r) / steady(r["epoch_s"]) for r in bare_runs if "after_s" in r]
    interval = ratio_interval(pairs)
    if interval is None:
        return []
    return [
        "bare after the job / bare before it (same process, %d rounds): %+.1f %%, 95 %% interval [%+.1f %%, %+.1f %%]%s"
        % (
            len(pairs),
            *(100 * (v - 1) for v in interval),
            "" if interval[1] <= 1.0 <= interval[2] else " -- the halves differ: read the before/after rows",
        )
    ]


def _sd(values: List[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else float("nan")


def fits_budget(elapsed_s: float, slowest_round_s: float, budget_min: float) -> bool:
    """Whether one more round, as slow as the slowest so far, ends within the budget (0 = no budget)."""
    return not budget_min or elapsed_s + slowest_round_s <= 60.0 * budget_min


def steady(values: List[float]) -> float:
    """Median of the epochs after the first (the compile epoch): one slow epoch from other load counts less."""
    rest = values[1:]
    return statistics.median(rest) if rest else float("nan")


def main() -> int:
    global MODEL, LIMIT, VAL_LIMIT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=4, help="epochs per arm (>= 2; epoch 1 compiles)")
    parser.add_argument("--rounds", type=int, default=5, help="most interleaved rounds (each: every arm once)")
    parser.add_argument("--arm", choices=("course", "bare"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--bracket",
        action="store_true",
        help="time the bare loop right before and right after the job, in one bare process that waits (idle) while "
        "the job runs; a round's bare level is the geometric mean of the two (opt-in: its after-half ran ~5 %% "
        "slower than its before-half, see the docstring)",
    )
    parser.add_argument(
        "--slices",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="time-sliced rounds: the job and the bare loop run at the same time, one at a time, in turns of this "
        "many seconds (SIGSTOP/SIGCONT); each epoch is timed by the running time its arm was given (0 = off: the "
        "arms run one after the other)",
    )
    parser.add_argument(
        "--aa",
        action="store_true",
        help="with --slices: the A/A check of the method: a second bare loop (bare-b) in place of the job; its "
        "interval against the bare loop must be about 0 %%, as narrow as the job's would be",
    )
    parser.add_argument("--pace", action="store_true", help=argparse.SUPPRESS)  # the bare loop under --slices
    parser.add_argument(
        "--turn-jitter",
        type=float,
        default=0.0,
        metavar="J",
        help="with --slices: each turn lasts S * (1 + J*u), u uniform in [-1, 1] (0 = every turn S seconds; turns "
        "of one length can stay in step with other load of a fixed period)",
    )
    parser.add_argument(
        "--no-pace",
        action="store_true",
        help="with --slices: the bare loop runs its own --epochs epochs (its epochs then overlap the other arm's only "
        "in part) instead of pacing: running until the other arm ends, timed over the other arm's epochs' spans",
    )
    parser.add_argument("--summarize", metavar="JSON", help="print the table of an earlier --json file and exit")
    parser.add_argument("--json", help="also write the raw measurements to this file")
    parser.add_argument(
        "--max-busy",
        type=float,
        default=0.25,
        help="before each arm wait until the CPU is at most this busy (0..1; 1 = never wait)",
    )
    parser.add_argument("--quiet-timeout", type=float, default=120.0, help="longest wait for a quiet CPU, seconds")
    parser.add_argument("--model", choices=("mlp", "cnn"), default=MODEL, help="the network of every arm")
    parser.add_argument("--limit", type=int, default=LIMIT, help="train on the first N images (0 = all 54 000)")
    parser.add_argument(
        "--val-limit",
        type=int,
        default=0,
        help="validate the job arms on the first N images (0 = all; untimed, but the uncapped CNN's takes ~25 s)",
    )
    parser.add_argument("--compat-python", help="a MindSpore 2.5 interpreter: adds the course recipe on it")
    parser.add_argument("--arms", help="comma-separated subset of the arms to run (default: all)")
    parser.add_argument(
        "--until-settled",
        action="store_true",
        help="after --min-rounds, stop as soon as the job-vs-bare verdict is settled at 99 %% (a stricter bar for "
        "a look before the last round; the verdict printed is then the 95 %% interval of all rounds run)",
    )
    parser.add_argument(
        "--budget-min",
        type=float,
        default=0.0,
        help="time budget in minutes: no round is started that would end after it, judged by the slowest round so "
        "far (0 = no budget; --rounds still caps)",
    )
    parser.add_argument("--min-rounds", type=int, default=5, help="rounds before --until-settled may stop")
    parser.add_argument("--seed", type=int, default=None, help="the arms' order per round (random when not given)")
    parser.add_argument(
        "--pin",
        default="",
        help="comma-separated CPUs every arm is held to (taskset-like, both arms alike; default: free, as users run "
        "the job); the verdict line says so",
    )
    args = parser.parse_args()
    PIN[:] = [int(c) for c in args.pin.split(",") if c.strip()]
    MODEL, LIMIT, VAL_LIMIT = (
        args.model,
        args.limit,
        args.val_limit,
    )  # the job arm reads these here; the child arms from the environment
    os.environ["BENCH_MODEL"], os.environ["BENCH_LIMIT"] = args.model, str(args.limit)
    if args.summarize:
        rows = summarize(json.loads(Path(args.summarize).read_text())["raw"])
        print(json.dumps(rows, indent=2))
        return 0
    if args.arm:
        result = arm_course(args.epochs) if args.arm == "course" else arm_bare(args.epochs, args.bracket, args.pace)
        print(json.dumps(result))
        return 0

    import random

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    if args.aa and not args.slices:
        parser.error("--aa needs --slices")
    if args.slices:
        return run_sliced(args, rng, seed)
    print(
        "python %s; up to %d rounds x %d epochs per arm, arms in a random order per round (seed %d); "
        "CPU cores: %s; load average before: %s"
        % (
            sys.version.split()[0],
            args.rounds,
            args.epochs,
            seed,
            os.cpu_count(),
            "%.2f %.2f %.2f" % os.getloadavg(),
        )
    )
    arms = ["course", "job", "bare"] + (["job-uncapped"] if args.model == "cnn" else [])
    arms += ["course-2.5"] if args.compat_python and os.path.exists(args.compat_python) else []
    arms = [a for a in arms if not args.arms or a in args.arms.split(",")]
    raw: Dict[str, List[Dict[str, Any]]] = {arm: [] for arm in arms}
    bracket = args.bracket and {"job", "bare"} <= set(arms)
    began, slowest, stopped = time.monotonic(), 0.0, "at --rounds %d" % args.rounds
    with tempfile.TemporaryDirectory(prefix="train-throughput-") as tmp:
        # this bench's own device locks: another bench's job goes on
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")
        for rnd in range(args.rounds):
            if rnd and not fits_budget(time.monotonic() - began, slowest, args.budget_min):
                stopped = "by the %.1f-minute budget after %d rounds" % (args.budget_min, rnd)
                break
            round_began = time.monotonic()
            # with --bracket the job and the bare loop run as one unit: bare epochs, the job, bare epochs again
            units = [a for a in arms if not (bracket and a in ("job", "bare"))] + (["job+bare"] if bracket else [])
            for arm in rng.sample(units, len(units)):
                busy = wait_for_quiet(args.max_busy, args.quiet_timeout)
                arm_began = time.monotonic()
                if arm == "job+bare":
                    job, bare = job_between_bare(args.epochs, Path(tmp), args.max_busy, args.quiet_timeout)
                    bare.update(cpu_busy_before=busy, arm_wall_s=time.monotonic() - arm_began)
                    done = [("job", job), ("bare", bare)]
                elif arm.startswith("job"):
                    done = [(arm, arm_job(args.epochs, Path(tmp), "none" if arm == "job-uncapped" else "auto"))]
                elif arm == "course-2.5":
                    done = [(arm, run_child("course", args.epochs, args.compat_python, tmp))]
                else:
                    done = [(arm, run_child(arm, args.epochs, cwd=tmp))]
                for name, result in done:
                    result.setdefault("cpu_busy_before", busy)
                    result.setdefault("arm_wall_s", time.monotonic() - arm_began)  # start-up, compile, validation
                    raw[name].append(result)
                    result["load"] = os.getloadavg()[0]
                    print(
                        "round %d %-6s epochs s: %s%s   (CPU busy before: %.0f %%, load %.1f)"
                        % (
                            rnd + 1,
                            name,
                            " ".join("%.2f" % s for s in result["epoch_s"]),
                            " | after the job: %s (waited %.1f s using %.2f CPU s)"
                            % (" ".join("%.2f" % s for s in result["after_s"]), result["wait_s"], result["wait_cpu_s"])
                            if "after_s" in result
                            else "",
                            100 * result["cpu_busy_before"],
                            result["load"],
                        ),
                        flush=True,
                    )
            slowest = max(slowest, time.monotonic() - round_began)
            ratios = paired_ratios(raw)
            if ratios:
                print(
                    "round %d job/bare %.3f; so far %s; %.1f min in"
                    % (rnd + 1, ratios[-1], _interval_text(ratios), (time.monotonic() - began) / 60.0),
                    flush=True,
                )
            if (
                args.until_settled
                and rnd + 1 >= args.min_rounds
                and verdict(ratio_interval(ratios, 0.99)) != "not settled"
            ):
                stopped = "early: settled at 99 %% after %d rounds" % (rnd + 1)
                break
    rows = summarize(raw, args.limit or 54000)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "raw": raw}, indent=2))
    print("model %s, %d images" % (args.model, args.limit or 54000))
    print(
        "| arm | epoch 1 s (compile incl.) | steady epoch s, median [IQR] | fastest steady epoch s | "
        "steady step median ms | images/s | throughput vs course | epoch time vs bare |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for arm in arms:
        r = rows[arm]
        print(
            "| %s | %.2f | %.2f [%.2f–%.2f] | %.2f | %.2f | %.0f | %s | %s |"
            % (
                arm,
                r["first_epoch_s"],
                r["steady_epoch_s"],
                r["steady_q1_s"],
                r["steady_q3_s"],
                r["fastest_steady_epoch_s"],
                r["step_ms_median"],
                r["images_per_s"],
                # pooled medians, for the table only; "-" when that arm was not run
                "%.2fx" % (rows["course"]["steady_epoch_s"] / r["steady_epoch_s"]) if "course" in rows else "-",
                "%+.1f %%" % (100.0 * (r["steady_epoch_s"] / rows["bare"]["steady_epoch_s"] - 1.0))
                if "bare" in rows
                else "-",
            )
        )
    print()
    print("steady epoch = median over every steady epoch of every round (%d per arm)" % rows[arms[0]]["n_steady"])
    if {"course", "job"} <= set(rows):
        # paired by round (course epoch time over the job's in the same round = the job's throughput over the
        # course's); the goal is judged on the interval's low end, "not settled" under two rounds
        paired = paired_ratios(raw, "course", "job")
        interval = ratio_interval(paired)
        if interval is None:
            shown, judged = "%.2fx (one round: no interval)" % paired[0], "not settled"
        else:
            shown = "%.2fx, 95 %% interval [%.2fx, %.2fx]" % interval
            judged = (
                "met"
                if interval[1] >= GOAL_VS_COURSE
                else ("NOT met" if interval[2] < GOAL_VS_COURSE else "not settled")
            )
        print(
            "job vs course recipe, paired by round: %s throughput (per round %s) (goal >= %.1fx): %s"
            % (shown, " ".join("%.2fx" % r for r in paired), GOAL_VS_COURSE, judged)
        )
    if {"job", "bare"} <= set(rows):
        # the verdict comes from the paired interval only; the pooled medians of the table are not a test
        ratios = paired_ratios(raw)
        print(
            "job vs bare loop, paired by round (median steady epoch, epochs 2-%d of %d images%s, %s, %d rounds, "
            "stopped %s, %.1f min): %s"
            % (
                args.epochs,
                args.limit or 54000,
                "; bare: geometric mean of its epochs right before and right after the job, in one process"
                if bracket
                else "",
                "both arms held to CPU %s" % args.pin if PIN else "CPUs free as users run it",
                len(ratios),
                stopped,
                (time.monotonic() - began) / 60.0,
                _interval_text(ratios),
            )
        )
        if len(ratios) > 1:
            print()
            print("\n".join(estimator_table(raw)))
            print()
            for arm in ("job", "bare"):
                within, between = spread_sources(raw[arm])
                print(
                    "%s: sd of log steady epoch within a process %s, between processes %.3f; arm's process %s s"
                    % (
                        arm,
                        "%.3f" % within if within is not None else "- (one steady epoch a process)",
                        between,
                        spread_fmt(r.get("arm_wall_s") for r in raw[arm]),
                    )
                )
            for line in outside_steps(raw) + bracket_check(raw["bare"]):
                print(line)
            need = rounds_to_settle(ratios, 1.0 + GOAL_VS_BARE)
            print(
                "at this spread (sd of the log-ratio %.3f) and mean, the 95 %% interval would clear +5 %% after about "
                "%s rounds; the half-width shrinks as 1/sqrt(rounds)"
                % (_sd([math.log(r) for r in ratios]), need if need else "no number of")
            )
    if {"job", "job-uncapped"} <= set(rows):
        # the ISA cap's effect, paired by round like job/bare: uncapped epoch time over capped, and what it changes
        # in the results (same seeds, so any difference in macro-F1 comes from the kernels oneDNN picked)
        capped = paired_ratios(raw, "job-uncapped", "job")
        interval = ratio_interval(capped)
        print(
            "job-uncapped vs job (the ISA cap), paired by round: epoch time x%s (per round %s)"
            % (
                "%.2f, 95 %% interval [x%.2f, x%.2f]" % interval
                if interval
                else "%.2f (one round: no interval)" % capped[0],
                " ".join("x%.2f" % r for r in capped),
            )
        )
        print(
            "final val macro-F1 per round: job %s; job-uncapped %s"
            % tuple(" ".join("%.4f" % r["val_macro_f1"][-1] for r in raw[arm]) for arm in ("job", "job-uncapped"))
        )
    if "job" not in raw:
        return 0
    last = raw["job"][-1]
    print(
        "job steady step (last round): median %.2f ms, p95 %.2f ms, n=%d; compile %.2f s; val macro-F1 per epoch %s"
        % (
            (last["steady"] or {}).get("median_ms") or float("nan"),
            (last["steady"] or {}).get("p95_ms") or float("nan"),
            (last["steady"] or {}).get("n") or 0,
            last["first_step_s"] or float("nan"),
            " ".join("%.4f" % f for f in last["val_macro_f1"]),
        )
    )
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    return 0


def run_sliced(args: Any, rng: Any, seed: int) -> int:
    """--slices: per round the job (or, with --aa, a second bare loop) and the bare loop in turns; the report."""
    arm, base = ("bare-b", "bare") if args.aa else ("job", "bare")
    turns = "turns of %.2f s%s, %s" % (
        args.slices,
        " +-%.0f %%" % (100 * args.turn_jitter) if args.turn_jitter else "",
        "the bare loop its own %d epochs" % args.epochs
        if args.no_pace
        else "the bare loop pacing (timed per step over the %s's epochs)" % arm,
    )
    print(
        "python %s; up to %d rounds x %d epochs of the %s; %s and %s at the same time, one at a time in %s "
        "(start order random per round, seed %d); CPU cores: %s; load average before: %s"
        % (
            sys.version.split()[0],
            args.rounds,
            args.epochs,
            arm,
            arm,
            base,
            turns,
            seed,
            os.cpu_count(),
            "%.2f %.2f %.2f" % os.getloadavg(),
        ),
        flush=True,
    )
    raw: Dict[str, List[Dict[str, Any]]] = {arm: [], base: []}
    began, slowest, stopped = time.monotonic(), 0.0, "at --rounds %d" % args.rounds

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # as Ctrl+C: the round's finally lets its arms go on and ends them

    signal.signal(signal.SIGTERM, on_term)
    with tempfile.TemporaryDirectory(prefix="train-throughput-") as tmp:
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")  # this bench's own device locks
        for rnd in range(args.rounds):
            if rnd and not fits_budget(time.monotonic() - began, slowest, args.budget_min):
                stopped = "by the %.1f-minute budget after %d rounds" % (args.budget_min, rnd)
                break
            busy = wait_for_quiet(args.max_busy, args.quiet_timeout)
            round_began = time.monotonic()
            order = rng.sample([arm, base], 2)
            results = sliced_round(
                order, args.epochs, Path(tmp), args.slices, "" if args.no_pace else base, args.turn_jitter, rng
            )
            for name in order:
                result = results[name]
                result.update(cpu_busy_before=busy, arm_wall_s=time.monotonic() - round_began, load=os.getloadavg()[0])
                raw[name].append(result)
                print(
                    "round %d %-6s epochs s (running time): %s | wall: %s; %d turns of %.3f s; steady epochs "
                    "overlapping the other arm's: %.0f %%%s   (CPU busy before: %.0f %%, load %.1f)"
                    % (
                        rnd + 1,
                        name,
                        " ".join("%.2f" % v for v in result["epoch_s"]),
                        " ".join("%.2f" % v for v in result["wall_epoch_s"]),
                        result["turns"],
                        result["turn_s_median"],
                        100 * result["overlap"],
                        "; step cut by a stop %.2f ms vs whole %.2f ms (n=%d/%d)" % tuple(result["switch_cost"])
                        if "switch_cost" in result
                        else "",
                        100 * busy,
                        result["load"],
                    ),
                    flush=True,
                )
            slowest = max(slowest, time.monotonic() - round_began)
            ratios = paired_ratios(raw, arm, base)
            print(
                "round %d %s/%s %.3f; so far %s; %.1f min in"
                % (rnd + 1, arm, base, ratios[-1], _interval_text(ratios), (time.monotonic() - began) / 60.0),
                flush=True,
            )
            if (
                args.until_settled
                and rnd + 1 >= args.min_rounds
                and (
                    aa_settled(ratio_interval(ratios, 0.99))
                    if args.aa
                    else verdict(ratio_interval(ratios, 0.99)) != "not settled"
                )
            ):
                stopped = "early: settled at 99 %% after %d rounds" % (rnd + 1)
                break
    rows = summarize(raw, args.limit or 54000)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "raw": raw}, indent=2))
    print(
        "model %s, %d images; epoch times are running times (the turns the arm was given inside the epoch)"
        % (args.model, args.limit or 54000)
    )
    print("| arm | epoch 1 s (compile incl.) | steady epoch s, median [IQR] | steady step median ms (wall) |")
    print("|---|---|---|---|")
    for name in (arm, base):
        r = rows[name]
        print(
            "| %s | %.2f | %.2f [%.2f–%.2f] | %.2f |"
            % (name, r["first_epoch_s"], r["steady_epoch_s"], r["steady_q1_s"], r["steady_q3_s"], r["step_ms_median"])
        )
    ratios = paired_ratios(raw, arm, base)
    print()
    print(
        "%s vs %s, paired by round, sliced in %s (median steady epoch, epochs 2-%d, %d rounds, stopped "
        "%s, %.1f min): %s"
        % (
            arm,
            base,
            turns,
            args.epochs,
            len(ratios),
            stopped,
            (time.monotonic() - began) / 60.0,
            _interval_text(ratios) if not args.aa else _aa_text(ratios),
        )
    )
    if len(ratios) > 1:
        print()
        print("\n".join(estimator_table(raw, arm, base)))
        print()
        for name in (arm, base):
            within, between = spread_sources(raw[name])
            print(
                "%s: sd of log steady epoch within a process %s, between processes %.3f; steady epochs overlapping "
                "the other arm's %s %%"
                % (
                    name,
                    "%.3f" % within if within is not None else "- (one steady epoch a process)",
                    between,
                    spread_fmt((100 * r["overlap"] for r in raw[name]), "%.0f"),
                )
            )
        for line in outside_steps(raw) + switch_lines(raw):
            print(line)
        sd = _sd([math.log(r) for r in ratios])
        if args.aa:
            print(
                "at this spread (sd of the log-ratio %.3f) the 95 %% half-width would reach 1.5 %% after about %d rounds"
                % (sd, math.ceil((1.96 * sd / math.log(1.015)) ** 2))
            )
        else:
            need = rounds_to_settle(ratios, 1.0 + GOAL_VS_BARE)
            print(
                "at this spread (sd of the log-ratio %.3f) and mean, the 95 %% interval would clear +5 %% after about "
                "%s rounds; the half-width shrinks as 1/sqrt(rounds)" % (sd, need if need else "no number of")
            )
    changes = [abs(r["clock_offset_change_s"]) for r in raw[base]]
    print(
        "wall clock minus monotonic clock changed by at most %.1f ms within a round (the job's epochs are placed by it)"
        % (1000 * max(changes) if changes else float("nan"))
    )
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    return 0


def aa_settled(interval: Any, half_width: float = 0.015) -> bool:
    """Whether an A/A interval is as narrow as the job-vs-bare verdict needs (half-width at most 1.5 %)."""
    return interval is not None and math.log(interval[2] / interval[1]) / 2 <= half_width


def _aa_text(ratios: List[float]) -> str:
    """The A/A ratios as '+x.x % [low, high] (n rounds, half-width h %): centred on 0 or not'."""
    interval = ratio_interval(ratios)
    if interval is None:
        return "%d round(s): no interval yet" % len(ratios)
    mean, low, high = interval
    return "%+.2f %% epoch time, 95 %% interval [%+.2f %%, %+.2f %%], half-width %.2f %% (n=%d rounds): %s" % (
        100 * (mean - 1),
        100 * (low - 1),
        100 * (high - 1),
        50 * (high - low),
        len(ratios),
        "0 inside: no bias seen" if low <= 1.0 <= high else "0 OUTSIDE: the method favours one process",
    )


def switch_lines(raw: Dict[str, List[Dict[str, Any]]]) -> List[str]:
    """Per bare arm: what a stop-and-go adds to the step it cuts (running time only), and its share of an epoch."""
    out = []
    for name, runs in raw.items():
        costs = [r["switch_cost"] for r in runs if "switch_cost" in r]
        if not costs:
            continue
        extra = [c[0] - c[1] for c in costs]
        share = [
            (c[0] - c[1]) * c[2] / 1000.0 / max(sum(r.get("own_epoch_s", r["epoch_s"])[1:]), 1e-9)
            for c, r in zip(costs, (r for r in runs if "switch_cost" in r))
        ]
        out.append(
            "%s: a step cut by a stop took %s ms more than a whole one (running time only, same process); over its "
            "steady epochs that is %s %% of the epoch (it hits every sliced arm)"
            % (name, spread_fmt(extra, "%.2f").split(" (n=")[0], spread_fmt((100 * v for v in share), "%.2f"))
        )
    return out


def _interval_text(ratios: List[float]) -> str:
    """The paired job/bare ratios as '+x.x % [low, high] (n rounds, spread min..max): verdict'."""
    interval = ratio_interval(ratios)
    if interval is None:
        return "%d round(s): no interval yet: not settled" % len(ratios)
    mean, low, high = interval
    return "%+.1f %% epoch time, 95 %% interval [%+.1f %%, %+.1f %%] (n=%d rounds, per round %+.1f..%+.1f %%): %s" % (
        100 * (mean - 1),
        100 * (low - 1),
        100 * (high - 1),
        len(ratios),
        100 * (min(ratios) - 1),
        100 * (max(ratios) - 1),
        verdict(interval),
    )


if __name__ == "__main__":
    sys.exit(main())
