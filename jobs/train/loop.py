"""The `train` job's epoch loop over a RunState: steps, validation, the best checkpoint, state saves, perf events.

A step's time runs from taking the batch to `loss.asnumpy()` returning, so it includes feeding
and the device sync; writing the step event is outside it but inside the epoch time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from jobs.common import datafeed, models, msdevice, stepcell
from jobs.common.checkpoint_files import save_best
from jobs.train import dataparallel, lastfinite
from jobs.train import monitor as monitoring
from jobs.train.profile_window import ProfilePlan
from jobs.train.repeats import run_repeats
from jobs.train.resume import load_resume, save_state
from jobs.train.sampling import DeviceSampling
from jobs.train.state import RunState
from jobs.train.timing import (
    PROGRESS_EVERY_S,
    STEP_TIME_RULE,
    SYNC_RULE,
    EventPipe,
    StepLog,
    freeze_heap,
    peak_host_rss_mb,
)
from workbench.analysis.metrics import metrics_report, weighted_mean
from workbench.events.protocol import Evidence
from workbench.jobkit.context import Cancelled, JobFailed

VAL_BATCH = 1000
LOSS_RULE = "sample-weighted mean of the step losses (a batch counts by its size)"
FINITE_HINT = "lower train.lr or use fp32"


@dataclass(frozen=True)
class EpochPlan:
    """The fixed shape of the run: samples, steps per epoch, epochs."""

    n: int
    steps: int
    epochs: int

    @property
    def total_steps(self) -> int:
        """Steps of the whole run."""
        return self.epochs * self.steps


class LossScaleLog:
    """Queues a `loss_scale` event at the first step, at each overflow skip and at each change of the scale."""

    def __init__(self, cell: Any) -> None:
        self.scale: Optional[float] = stepcell.current_scale(cell)  # before the first step
        self.skipped = 0
        self.steps = 0

    def see(self, pipe: EventPipe, out: Any, cell: Any, epoch: int, step: int, global_step: int) -> None:
        """Read the step's overflow flag and the scale it ran with and holds now (after the step's own time)."""
        self.steps += 1
        overflow = bool(out[1].asnumpy())
        # the cell's third output is its scale parameter itself, already updated: the scale a step ran with is
        # the one held before it
        used = self.scale
        now = stepcell.current_scale(cell)
        self.skipped += int(overflow)
        if overflow or self.steps == 1 or now != used:
            pipe.put(
                "loss_scale",
                epoch=epoch,
                step=step,
                global_step=global_step,
                scale=used,
                overflow=overflow,
                next_scale=now,
                skipped=self.skipped,
            )
        self.scale = now


class TrainLoop:
    """Runs the epochs of a set-up Trainer (`run`): every mutable fact lives in `self.state`."""

    def __init__(self, run: Any):
        self.run = run
        self.ctx = run.ctx
        self.train_cfg = run.cfg.train
        t = self.train_cfg
        n = len(run.data.train_y)
        per_rank = n if run.par is None else run.shard_info["per_rank"]  # the ranks share each global batch
        self.plan = EpochPlan(n, datafeed.steps_per_epoch(per_rank, t.batch_size, t.max_steps), t.epochs)
        self.state = RunState(rng=np.random.default_rng(t.seed))
        self.log = StepLog(t.warmup_steps, t.mode == "graph")
        self.sampling = DeviceSampling(self.ctx, dict(self.ctx.device, id=run.device_id))
        self.profile = ProfilePlan(self.ctx, t.profile.steps if run.is_rank0 else 0, run.target)
        self.started_at = time.time()  # the fallback start when job.json has no `created`
        self.repeats: Optional[Dict[str, Any]] = None
        self.last_finite = lastfinite.LastFinite(run)
        every = t.monitor.every
        self.scale_log: Optional[LossScaleLog] = None  # made in train(), after a resume loaded the scale
        # every rank samples the same steps (the gradients read are the ones averaged over the ranks); rank 0 tells
        self.monitor = monitoring.Monitor(run, every, reports=run.is_rank0) if every else None

    def train(self) -> Dict[str, Any]:
        """Resume if asked, run the epochs; returns the final perf fields."""
        t = self.train_cfg
        if t.resume_from:
            load_resume(self.run, self.state)
        if t.loss_scale != "none":
            self.scale_log = LossScaleLog(self.run.train_step)
        feed = datafeed.make_feed(t.feed, self.run.data.train_x, self.run.data.train_y, t.batch_size)
        if self.monitor is not None:
            from mindspore import Tensor

            self.monitor.precompile(
                Tensor(self.run.data.train_x[: t.batch_size]), Tensor(self.run.data.train_y[: t.batch_size])
            )
        if self.run.is_rank0 and self.state.epoch <= self.plan.epochs:
            self.compile_validation()
        pipe = EventPipe(self.ctx)
        try:
            for epoch in range(self.state.epoch, self.plan.epochs + 1):
                self.state.epoch = epoch
                self.run_epoch(pipe, feed)
            return self.finish()
        finally:
            self.profile.close_on_stop()
            pipe.close()

    def run_epoch(self, pipe: EventPipe, feed: Any) -> None:
        """One epoch: its steps (from state.step_in_epoch), then validation and saves on rank 0."""
        st, plan, ctx = self.state, self.plan, self.ctx
        st.rng_epoch_start = datafeed.generator_state(st.rng)
        order = datafeed.epoch_order(st.rng, plan.n)  # the same on every rank: one generator, one seed
        if self.run.par is not None:
            order = dataparallel.rank_order(
                order, self.train_cfg.batch_size, self.run.par["rank"], self.run.par["size"]
            )
        t_epoch = time.perf_counter()
        self.run.train_step.set_train(True)
        first = st.step_in_epoch
        self.last_finite.snapshot(st.epoch, first, st.global_step, order)
        batches = feed.batches(order, first, plan.steps) if first < plan.steps else iter(())
        last_progress = 0.0
        for step in range(first, plan.steps):
            self.run_step(pipe, batches, step)
            now = time.monotonic()
            if now - last_progress >= PROGRESS_EVERY_S:
                last_progress = now
                pipe.put(
                    "progress",
                    done=st.global_step,
                    total=plan.total_steps,
                    unit="step",
                    phase="train epoch %d/%d" % (st.epoch, plan.epochs),
                )
            if ctx.cancel_requested:
                self.flush_monitor(pipe)
                pipe.drain()
                if self.run.is_rank0:
                    save_state(self.run, st, st.epoch, step + 1, st.rng_epoch_start, st.losses, st.sizes)
                raise Cancelled(
                    "cancelled by SIGTERM after epoch %d step %d (global step %d); "
                    "state saved for train.resume_from" % (st.epoch, step + 1, st.global_step)
                )
        st.step_in_epoch = 0
        self.flush_monitor(pipe)
        pipe.drain()
        self.profile.close_at_epoch_end()
        train_s = time.perf_counter() - t_epoch
        if self.run.is_rank0:  # rank 0 validates and saves; the others go on to the next epoch
            self.end_epoch(t_epoch, train_s)
        else:
            self.perf_event("epoch", st.epoch)
        st.losses, st.sizes = [], []
        if ctx.cancel_requested:
            raise Cancelled("cancelled by SIGTERM after epoch %d; state saved for train.resume_from" % st.epoch)

    def run_step(self, pipe: EventPipe, batches: Any, step: int) -> None:
        """One timed training step and its event; a non-finite loss stops the job."""
        st, log, profile = self.state, self.log, self.profile
        self.sampling.feed(pipe)
        if log.past_warmup and not (profile.settled and self.sampling.reported):
            self.sampling.poll(pipe, st.global_step)
            profile.maybe_open(pipe, log, st.global_step, self.plan.steps - step, self.sampling.reported)
        window = profile.window if profile.is_open else None  # the profiler records this step
        profiling = window is not None
        if window is not None:
            window.step_begin()
        mon = self.monitor
        sampled = mon is not None and mon.due(st.global_step + 1)
        t0 = time.perf_counter()
        xb, yb, size = next(batches)
        out = mon.step(xb, yb) if sampled and mon is not None else self.run.train_step(xb, yb)
        loss_value = float(stepcell.loss_of(out).asnumpy())
        rows = mon.fetch() if sampled and mon is not None else None
        step_ms = (time.perf_counter() - t0) * 1000.0
        self.last_finite.note(loss_value)
        phase = log.phase_of_next(size)
        if profiling and phase != "recompile":
            phase = "profiled"
        st.global_step += 1
        log.add(step_ms, size, st.epoch, st.global_step, phase)
        if phase in ("compile", "recompile"):
            freeze_heap()
        if window is not None and window.step_end(step_ms, st.global_step):
            window.close()  # the profiler's own work, after the step's time was taken
        pipe.step(st.epoch, step + 1, st.global_step, loss_value, step_ms, size, phase)
        if rows is not None and mon is not None:
            mon.record(pipe, rows, st.epoch, st.global_step)
        if self.scale_log is not None:
            self.scale_log.see(pipe, out, self.run.train_step, st.epoch, step + 1, st.global_step)
        if not math.isfinite(loss_value):
            self.flush_monitor(pipe)
            pipe.drain()
            self.fail_non_finite(loss_value, step)
        if rows is not None and monitoring.nonfinite_grads(rows):
            self.flush_monitor(pipe)
            pipe.drain()
            self.fail_non_finite(loss_value, step, "a gradient")
        st.losses.append(loss_value)
        st.sizes.append(size)
        st.losses_seen += 1

    def flush_monitor(self, pipe: EventPipe) -> None:
        """Queue the monitor's pending samples (before a drain, so they keep their place in the events)."""
        if self.monitor is not None:
            self.monitor.flush(pipe)

    def fail_non_finite(self, loss_value: float, step: int, what: str = "") -> None:
        """The `finite-loss` check fails, the failing step is located and replayed, and the job stops."""
        st, t = self.state, self.train_cfg
        where = "at epoch %d step %d (global step %d)" % (st.epoch, step + 1, st.global_step)
        if what:
            detail = "%s held a non-finite value %s (the loss was %s)" % (what, where, loss_value)
        else:
            detail = "loss is %s %s" % (loss_value, where)
        origin = self.locate_origin(step)
        self.ctx.check(
            "finite-loss",
            "finite loss",
            Evidence.FAIL,
            detail,
            evidence={
                "epoch": st.epoch,
                "step": step + 1,
                "global_step": st.global_step,
                "loss": loss_value,
                "lr": t.lr,
                "precision": t.precision,
            },
            hint=FINITE_HINT + "; the state of the last finished epoch is kept",
        )
        raise JobFailed(
            ("" if what else "non-finite ") + detail + ("; first non-finite value: " + origin if origin else ""),
            hint=FINITE_HINT,
            type_="NonFiniteLoss",
        )

    def locate_origin(self, step: int) -> Optional[str]:
        """Find the step that broke from the epoch-start copy, keep its case, replay it in a fresh process."""
        ctx, keeper = self.ctx, self.last_finite
        if not keeper.enabled or keeper.start is None:
            ctx.check(
                "overflow-origin",
                "first non-finite value",
                Evidence.NOT_RUN,
                "not localised in a data-parallel run" if not keeper.enabled else "no epoch-start state was kept",
                hint="train single-process to localise it",
            )
            return None
        ctx.progress(self.state.global_step, self.plan.total_steps, "step", "locating the first non-finite value")
        located = keeper.locate(step)
        if not located["found"]:
            ctx.check(
                "overflow-origin",
                "first non-finite value",
                Evidence.BLOCKED,
                "re-running the epoch's %d steps from its start in this process gave no non-finite value "
                "(losses identical to the run's: %s)" % (located["replayed"], located["losses_identical"]),
                evidence=located,
            )
            return None
        finding = lastfinite.replay_in_fresh_process(ctx, located["case"])
        return lastfinite.emit_check(ctx, finding, dict(self.ctx.device), located)

    def end_epoch(self, t_epoch: float, train_s: float) -> None:
        """Rank 0 after an epoch: validate, keep the best checkpoint, emit `epoch` and `perf`, save the state."""
        st, plan, ctx = self.state, self.plan, self.ctx
        ctx.progress(st.global_step, plan.total_steps, "step", "validate epoch %d/%d" % (st.epoch, plan.epochs))
        t_val = time.perf_counter()
        val = self.validate()
        val_s = time.perf_counter() - t_val
        is_best = st.best["macro_f1"] is None or val["macro_f1"] > st.best["macro_f1"]
        if is_best:
            st.best = {"epoch": st.epoch, "macro_f1": val["macro_f1"], "accuracy": val["accuracy"]}
            save_best(self.run, st.epoch, st.global_step, val, st.artifacts)
        train_loss = weighted_mean(st.losses, st.sizes) if st.losses else None
        ctx.events.emit(
            "epoch",
            fsync=True,
            epoch=st.epoch,
            train_loss=train_loss,
            samples=int(sum(st.sizes)),
            steps=len(st.losses),
            val=val,
            is_best=is_best,
            epoch_s=time.perf_counter() - t_epoch,
            train_s=train_s,
            val_s=val_s,
            best_epoch=st.best["epoch"],
            loss_rule=LOSS_RULE + ("; rank 0's part of each global batch only" if self.run.par is not None else ""),
        )
        self.perf_event("epoch", st.epoch)
        save_state(self.run, st, st.epoch + 1, 0, datafeed.generator_state(st.rng), [], [])
        if st.first_result_s is None:
            self.first_result(val)

    def first_result(self, val: Dict[str, Any]) -> None:
        """Check first-result: seconds from the job's start (job.json `created`) to its first validated epoch."""
        st, created = self.state, self.ctx.meta.get("created")
        st.first_result_s = time.time() - (created if created is not None else self.started_at)
        self.ctx.check(
            "first-result",
            "time to first usable result",
            Evidence.PASS,
            "epoch %d validated %.1f s after the job started (val macro-F1 %.4f)%s"
            % (st.epoch, st.first_result_s, val["macro_f1"], "; resumed run" if st.resumed_from else ""),
            evidence={
                "seconds": st.first_result_s,
                "epoch": st.epoch,
                "global_step": st.global_step,
                "macro_f1": val["macro_f1"],
                "resumed": st.resumed_from is not None,
                "rule": "job.json created -> the first epoch event with validation metrics (this job's epochs only)",
            },
        )

    def finish(self) -> Dict[str, Any]:
        """After the last epoch: the device sample, the profiled window, the finite-loss pass, the run's perf."""
        ctx, st = self.ctx, self.state
        ctx.progress(st.global_step, self.plan.total_steps, "step", "done")
        self.sampling.finish(self.log)
        self.profile.finish(self.log)
        if self.monitor is not None and self.run.is_rank0:
            self.monitor.check(ctx)
        ctx.check(
            "finite-loss",
            "finite loss",
            Evidence.PASS,
            "all %d step losses of this job were finite (fetched with loss.asnumpy())" % st.losses_seen,
            evidence={"steps": st.losses_seen},
        )
        perf = self.perf_event("run")
        if self.run.is_rank0:
            self.repeats = run_repeats(self.run, self.train_cfg.seed)
        return perf

    def compile_validation(self) -> None:
        """Run the validation batch shapes once before the first epoch, so every epoch's val_s is validation alone.

        In graph mode the first call of each input shape compiles; left in epoch 1 it made that epoch's
        validation several times longer than the others, and the ETA reads val_s as what one validation costs.
        """
        val_x = self.run.data.val_x
        shapes = sorted({min(VAL_BATCH, len(val_x)), len(val_x) % VAL_BATCH} - {0})
        t0 = time.perf_counter()
        for n in shapes:
            models.predict(self.run.run_net, val_x[:n], VAL_BATCH)
        self.ctx.log(
            "validation network run once per batch shape %s before epoch 1 (%.2f s, compile included)"
            % (shapes, time.perf_counter() - t0)
        )

    def validate(self) -> Dict[str, Any]:
        """Accuracy, macro-F1, per-class metrics and confusion on the validation arrays."""
        pred = models.predict(self.run.run_net, self.run.data.val_x, VAL_BATCH)
        return metrics_report(self.run.data.val_y, pred)

    def perf_event(self, scope: str, epoch: Optional[int] = None) -> Dict[str, Any]:
        """Emit a `perf` event for one epoch or the whole run."""
        t, log = self.train_cfg, self.log
        stats = log.stats(epoch)
        steady = {k: stats[k] for k in ("n", "median_ms", "p95_ms", "images_per_s", "median_rule", "p95_rule")}
        mem = msdevice.peak_device_memory_mb(self.run.target)
        fields = dict(
            scope=scope,
            first_step_s=stats["first_step_s"],
            warmup_steps=stats["warmup_steps"],
            steady=steady,
            recompile=stats["recompile"],
            peak_host_rss_mb=peak_host_rss_mb(),
            peak_device_mb=mem["peak_device_mb"],
            device_memory_note=mem["device_memory_note"],
            sync=SYNC_RULE,
            timing_rule=STEP_TIME_RULE,
            batch_size=t.batch_size,
            feed=t.feed,
            mode=t.mode,
            precision=t.precision,
            steps=len(log.step_ms),
            profiled_steps=stats["profiled_steps"],
            profile_slowdown=(self.profile.summary or {}).get("slowdown") if scope == "run" else None,
        )
        if epoch is not None:
            fields["epoch"] = epoch
        self.ctx.events.emit("perf", **fields)
        return fields
