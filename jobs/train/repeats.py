"""The `train` job's timing repeats (`perf.repeats`): the steady window timed k times after training, check perf-repeats.

One run's steady median moved 2.8× between two identical runs on a shared machine, so a speed
claim needs its spread: each repeat times `perf.repeat_steps` full-size steps (compiled and warm
by then) and records the host load average when it starts. The repeats keep training the
in-memory network; every saved artefact (best.ckpt, state.ckpt) was written before them.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List

import numpy as np

from jobs.common import datafeed, stepcell
from workbench.analysis.metrics import median
from workbench.events.protocol import Evidence

CHECK_ID = "perf-repeats"
CHECK_TITLE = "timing repeats"
THROUGHPUT_RULE = "each repeat: Σ images / Σ wall time of its steps; images_per_s_median: the median over repeats"
RULE = (
    "each repeat: median step_ms of perf.repeat_steps full-size steps after training (compiled, warm), "
    "timed from taking the batch to loss.asnumpy(); spread over the repeats' medians"
)


def quartiles(values: List[float]) -> Dict[str, float]:
    """Q1 and Q3 of the values (numpy's linear interpolation)."""
    arr = np.asarray(values, dtype=float)
    return {"q1": float(np.percentile(arr, 25)), "q3": float(np.percentile(arr, 75))}


def time_window(run: Any, rng: np.random.Generator, steps: int) -> Dict[str, Any]:
    """One repeat: `steps` full-size training steps, their median step_ms and the host load before them."""
    t = run.cfg.train
    n = len(run.data.train_y)
    full = max(1, n // t.batch_size)  # full batches only: a tail batch would recompile in graph mode
    feed = datafeed.NumpyFeed(run.data.train_x, run.data.train_y, t.batch_size)
    load = os.getloadavg()
    times: List[float] = []
    while len(times) < steps:
        order = datafeed.epoch_order(rng, n)
        for xb, yb, _ in feed.batches(order, 0, min(full, steps - len(times))):
            t0 = time.perf_counter()
            loss = stepcell.loss_of(run.train_step(xb, yb))
            loss.asnumpy()
            times.append((time.perf_counter() - t0) * 1000.0)
    med = median(times)
    total_ms = sum(times)
    return {
        "median_ms": med,
        # the run's own definition (workbench.analysis.metrics.step_stats): images over the steps' summed wall time
        "images_per_s": t.batch_size * len(times) * 1000.0 / total_ms if total_ms > 0 else None,
        "steps": len(times),
        "loadavg_1_5_15": [round(v, 2) for v in load],
    }


def run_repeats(run: Any, seed: int) -> Dict[str, Any]:
    """Time the steady window perf.repeats times and emit check perf-repeats; returns its evidence."""
    ctx, p = run.ctx, run.cfg.perf
    if p.repeats <= 1:
        evidence = {"repeats": p.repeats}
        ctx.check(
            CHECK_ID,
            CHECK_TITLE,
            Evidence.NOT_RUN,
            "perf.repeats is 1: the steady window was timed once",
            evidence=evidence,
            hint="set perf.repeats=5 to measure the run-to-run spread",
        )
        return evidence
    if run.par is not None:
        evidence = {"repeats": p.repeats, "workers": run.cfg.train.parallel.workers}
        ctx.check(
            CHECK_ID,
            CHECK_TITLE,
            Evidence.NOT_RUN,
            "timing repeats run in single-process training only (every rank would have to step together)",
            evidence=evidence,
            hint="repeat with train.parallel.workers=1",
        )
        return evidence
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(p.repeats):
        ctx.progress(k, p.repeats, "repeat", "timing repeats")
        rows.append(time_window(run, rng, p.repeat_steps))
        ctx.raise_if_cancelled()
    medians = [r["median_ms"] for r in rows]
    mid = median(medians)
    assert mid is not None  # perf.repeats > 1 here: there are medians
    q = quartiles(medians)
    evidence = {
        "repeats": p.repeats,
        "steps_per_repeat": p.repeat_steps,
        "batch_size": run.cfg.train.batch_size,
        "median_ms": mid,
        "min_ms": min(medians),
        "max_ms": max(medians),
        "iqr_ms": q["q3"] - q["q1"],
        "q1_ms": q["q1"],
        "q3_ms": q["q3"],
        "spread_pct": 100.0 * (max(medians) - min(medians)) / mid,
        "images_per_s_median": median([r["images_per_s"] for r in rows if r["images_per_s"] is not None] or [0.0]),
        "images_per_s_rule": THROUGHPUT_RULE,
        "per_repeat": rows,
        "cpu_count": os.cpu_count(),
        "rule": RULE,
    }
    ctx.check(
        CHECK_ID,
        CHECK_TITLE,
        Evidence.PASS,
        "steady median %.3f ms over %d repeats (min %.3f, max %.3f, IQR %.3f ms, spread %.0f%%); "
        "host load %s"
        % (
            mid,
            p.repeats,
            evidence["min_ms"],
            evidence["max_ms"],
            evidence["iqr_ms"],
            evidence["spread_pct"],
            ", ".join("%.2f" % r["loadavg_1_5_15"][0] for r in rows),
        ),
        evidence=evidence,
        hint="a speed difference smaller than the spread is within run-to-run variation",
    )
    return evidence
