"""The `train` job: learn on the asked-for device, stream every step, measure honestly, keep state.

This module sets the run up (device, data, network) and writes the summary; the loop lives in
jobs/train/loop.py over a RunState (jobs/train/state.py), with the resume state
(train_resume), checkpoints (train_checkpoint), the npu-smi sample (train_sampling), the
profiled window (train_profile) and the timing rules (train_timing) in their own modules.
Run as `python -m jobs.train --job-dir DIR` (one rank of it under msrun when
train.parallel.workers > 1, started by jobs/train/msrun_rank.py).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from jobs.common import datafeed, models, msdevice, precision, stepcell
from jobs.train import cluster_info, cpu_isa, dataparallel
from jobs.train.loop import TrainLoop
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, JobFailed

SYNTHETIC_HINT = "synthetic data: numbers say nothing about Fashion-MNIST"
PERF_KEYS = (
    "first_step_s",
    "warmup_steps",
    "steady",
    "recompile",
    "peak_host_rss_mb",
    "peak_device_mb",
    "device_memory_note",
    "sync",
    "profiled_steps",
    "profile_slowdown",
)


class Trainer:
    """One training run's set-up: device, data, network; the loop (TrainLoop) reads what it holds."""

    def __init__(self, ctx: JobContext, par: Optional[Dict[str, Any]] = None):
        self.ctx = ctx
        self.par = par  # {rank, size, local_rank, node_rank} in a data-parallel run, else None
        self.shard_info: Optional[Dict[str, Any]] = None
        self.cfg = ctx.cfg
        self.target = ctx.cfg.device.target  # decided by the runner before the job started
        self.device_id = ctx.cfg.device.id
        if par is not None and self.target != "CPU":
            self.device_id = par["local_rank"]  # msrun's DEVICE_ID: one device per local rank

    @property
    def is_rank0(self) -> bool:
        """True in a single-process run and on rank 0: the process that validates, saves and summarises."""
        return self.par is None or self.par["rank"] == 0

    def start(self) -> None:
        """Cap oneDNN's ISA when decided, import MindSpore, emit `started`, select the device, check it."""
        t, m = self.cfg.train, self.cfg.model
        self.isa_cap = cpu_isa.decide(t.cpu_isa_cap, m.name, self.target)
        cpu_isa.apply(self.isa_cap)  # before the import: oneDNN reads it once
        import mindspore as ms

        self.ms = ms
        self.ctx.started(
            mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)},
            cpu_isa_cap=self.isa_cap,
            mode=t.mode,
            precision=t.precision,
            model={"name": m.name, "hidden": m.hidden},
            feed=t.feed,
            batch_size=t.batch_size,
            epochs=t.epochs,
            seed=t.seed,
            resume_from=t.resume_from,
            parallel=self.par,
        )
        self.effective = msdevice.require_device(
            self.ctx, self.target, self.device_id, t.mode, after_set=self.join_cluster if self.par is not None else None
        )

    def join_cluster(self) -> None:
        """A data-parallel rank joins msrun's cluster after its device is set."""
        assert self.par is not None  # require_device calls this only for a data-parallel rank
        joined = dataparallel.init_collective(self.ms, self.par)
        self.ctx.log("rank %d of %d joined the cluster: %s" % (joined["rank"], joined["size"], joined["api"]))

    def load_data(self) -> None:
        """Train/val arrays from the data job's split or a split made now (said in a check)."""
        try:
            data = datafeed.load_run_data(self.ctx.dir, self.cfg)
        except JobFailed:
            raise
        except Exception as exc:  # DataError and friends name the file and the expectation
            raise JobFailed(str(exc), hint="see data.dir / data.from / data.source", type_=type(exc).__name__)
        self.data = data
        desc = data.description
        self.ctx.check(
            "data-split",
            "data split",
            Evidence.PASS,
            "%s; %s data, train %d of %d, val %d of %d"
            % (data.how, desc["source"], desc["n_train"], desc["n_train_split"], desc["n_val"], desc["n_val_split"]),
            evidence=desc,
            hint=SYNTHETIC_HINT if desc["source"] == "synthetic" else None,
        )
        if self.cfg.train.batch_size > desc["n_train"]:  # the config check cannot see a split read from data.from
            raise JobFailed(
                "train.batch_size %d > %d images in the train split (%s)"
                % (self.cfg.train.batch_size, desc["n_train"], data.how),
                hint="set train.batch_size to at most %d" % desc["n_train"],
                type_="ConfigError",
            )
        if self.par is not None:
            self.shard_info = dataparallel.shard(self.ctx, len(data.train_y), self.par, self.cfg.train.batch_size)
        t = self.cfg.train
        data.train_x = precision.prepare_inputs(data.train_x, t.precision, t.input_scale)
        data.val_x = precision.prepare_inputs(data.val_x, t.precision, t.input_scale)

    def build(self) -> None:
        """Seeded network, precision, loss, optimizer and the one-step training cell (jobs/train/stepcell.py)."""
        m = self.cfg.model
        parts = stepcell.build_step(self.ms, self.cfg)
        self.net, self.run_net, self.precision_info = parts.net, parts.run_net, parts.precision_info
        self.loss_cell, self.opt, self.opt_info = parts.loss_cell, parts.opt, parts.opt_info
        self.train_step = parts.train_step
        self.ctx.log(
            "network %s (%d parameters), %s, optimizer %s"
            % (m.name, models.count_params(self.net), self.precision_info["how"], self.opt_info)
        )


def main(ctx: JobContext) -> str:
    """Run the training job (one rank of it under msrun when train.parallel.workers > 1)."""
    par = dataparallel.rank_env(ctx.cfg)
    dataparallel.tag_events(ctx, par)
    trainer = Trainer(ctx, par)
    trainer.start()
    places = cluster_info.exchange_places(ctx, par) if par is not None else None
    trainer.load_data()
    ctx.raise_if_cancelled()
    trainer.build()
    loop = TrainLoop(trainer)
    perf = loop.train()
    state = loop.state
    ranks = None
    if par is not None:
        ranks = cluster_info.gather_throughput(par, perf)
        if not dataparallel.weights_check(ctx, trainer.net, par):
            raise JobFailed(
                "the ranks ended with different weights (check weights-identical)",
                hint="see the check's hashes and msrun_logs/",
                type_="WeightsDiffer",
            )
        if not trainer.is_rank0:
            assert places is not None  # exchanged above, as par is set
            cluster_info.leave_node_summary(ctx, par, places, ranks)
            return "ok"
    ctx.result(
        {
            "best_epoch": state.best["epoch"],
            "best": {"macro_f1": state.best["macro_f1"], "accuracy": state.best["accuracy"]},
            "perf": dict({k: perf[k] for k in PERF_KEYS}, first_result_s=state.first_result_s, repeats=loop.repeats),
            "artifacts": state.artifacts,
            "effective_device": trainer.effective,
            "cpu_isa_cap": trainer.isa_cap,
            "resumed_from": state.resumed_from,
            "data": {k: trainer.data.description[k] for k in ("source", "n_train", "n_val", "how")},
            "precision": trainer.precision_info,
            "optimizer": trainer.opt_info,
            "profile": loop.profile.summary,
            "parallel": None
            if par is None
            else dict(
                par,
                shard=trainer.shard_info,
                ranks=ranks,
                places=places,
                effective_batch=par["size"] * ctx.cfg.train.batch_size,
            ),
        }
    )
    return "ok"
