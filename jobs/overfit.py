"""The `overfit` job: train on one fixed batch until its loss falls by `overfit.factor` (check overfit-batch).

The course's first framework check: a network, loss and optimizer that are wired right drive
the loss of a single batch towards zero. The batch is the first `overfit.batch` images of the
run's train split (the same split, network, precision and optimizer the `train` job builds).
Run as `python -m jobs.overfit --job-dir DIR`.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Dict, List

from jobs.common import stepcell
from jobs.train.job import Trainer
from jobs.train.timing import EventPipe
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, run

CHECK_ID = "overfit-batch"
CHECK_TITLE = "overfit one fixed batch"
CURVE_POINTS = 100  # the curve in the check's evidence keeps at most this many (step, loss) points


def thin_curve(losses: List[float], points: int = CURVE_POINTS) -> List[List[float]]:
    """[step, loss] pairs (step from 1): every step when few, else evenly spaced with the first and last kept."""
    n = len(losses)
    if n <= points:
        idx = list(range(n))
    else:
        idx = sorted({round(i * (n - 1) / (points - 1)) for i in range(points)})
    return [[i + 1, losses[i]] for i in idx]


def overfit(ctx: JobContext, trainer: Trainer) -> Dict[str, Any]:
    """Step on the fixed batch until the loss reaches first/factor or the steps run out; emit the check."""
    o, t = ctx.cfg.overfit, ctx.cfg.train
    data = trainer.data
    size = min(o.batch, len(data.train_y))
    xb, yb = trainer.ms.Tensor(data.train_x[:size]), trainer.ms.Tensor(data.train_y[:size])
    losses: List[float] = []
    reached_at = None
    pipe = EventPipe(ctx)
    t_start = time.perf_counter()
    for step in range(o.steps):
        t0 = time.perf_counter()
        loss = float(stepcell.loss_of(trainer.train_step(xb, yb)).asnumpy())
        step_ms = (time.perf_counter() - t0) * 1000.0
        losses.append(loss)
        pipe.put(
            "step",
            epoch=1,
            step=step + 1,
            global_step=step + 1,
            loss=loss,
            step_ms=step_ms,
            batch_size=size,
            phase="compile" if step == 0 else "overfit",
        )
        if not math.isfinite(loss):
            break
        if losses[0] > 0 and loss <= losses[0] / o.factor:
            reached_at = step + 1
            break
        if ctx.cancel_requested:
            pipe.drain()
            ctx.raise_if_cancelled()
    pipe.close()
    elapsed = time.perf_counter() - t_start
    first, last = losses[0], losses[-1]
    finite = all(math.isfinite(v) for v in losses)
    factor = first / last if finite and last > 0 else (math.inf if finite else None)
    evidence = {
        "batch_size": size,
        "factor_wanted": o.factor,
        "steps_max": o.steps,
        "steps_run": len(losses),
        "reached_at_step": reached_at,
        "first_loss": first,
        "last_loss": last,
        "min_loss": min(losses) if finite else None,
        "factor_reached": factor,
        "finite": finite,
        "seconds": elapsed,
        "curve": thin_curve(losses),
        "batch_rule": "the first %d images of the train split, one fixed batch, no shuffling" % size,
        "lr": t.lr,
        "optimizer": t.optimizer,
        "precision": t.precision,
        "mode": t.mode,
        "model": ctx.cfg.model.name,
    }
    if reached_at is not None:
        assert factor is not None  # the target is reached only by finite losses
        ctx.check(
            CHECK_ID,
            CHECK_TITLE,
            Evidence.PASS,
            "loss fell %.1f× (%.4f -> %.4g) in %d steps on one batch of %d (wanted %g× within %d)"
            % (factor, first, last, reached_at, size, o.factor, o.steps),
            evidence=evidence,
        )
    else:
        why = (
            "a loss turned non-finite at step %d" % len(losses)
            if factor is None
            else "the loss fell only %.2f× (%.4f -> %.4g) in %d steps" % (factor, first, last, len(losses))
        )
        ctx.check(
            CHECK_ID,
            CHECK_TITLE,
            Evidence.FAIL,
            "%s on one batch of %d; wanted %g× within %d steps" % (why, size, o.factor, o.steps),
            evidence=evidence,
            hint="check the loss, the labels and train.lr (0 never learns); "
            "raise overfit.steps when the loss still falls",
        )
    return evidence


def main(ctx: JobContext) -> str:
    """Set up as the train job does, then overfit one batch."""
    trainer = Trainer(ctx)
    trainer.start()
    trainer.load_data()
    ctx.raise_if_cancelled()
    trainer.build()
    ev = overfit(ctx, trainer)
    ctx.result(
        {
            k: ev[k]
            for k in (
                "batch_size",
                "factor_wanted",
                "factor_reached",
                "reached_at_step",
                "steps_run",
                "first_loss",
                "last_loss",
                "seconds",
            )
        },
        effective_device=trainer.effective,
    )
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
