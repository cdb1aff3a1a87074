"""The `train` job: learn on the asked-for device, stream every step, measure honestly, keep state.

Timing rules (course section 5): the first step of the process is the compile step; the
next `train.warmup_steps` are warm-up; in graph mode the first step of any new batch shape
(the tail batch) is a recompile; with `train.profile.steps=N` the N steps after warm-up run under
MindSpore's profiler (phase "profiled"). None of these enter the steady statistics. A step's time
runs from taking the batch to `loss.asnumpy()` returning, so it includes feeding and the
device sync; writing the step event is outside it but inside the epoch time.
"""

from __future__ import annotations

import gc
import math
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import numpy as np

from workbench.atomic import read_json, sha256_file, write_json
from workbench.jobkit import Cancelled, JobContext, JobFailed, run
from workbench.metrics import classification_report, confusion_matrix, step_stats, weighted_mean

from jobs import dataparallel, datafeed, device_activity, models, msdevice, precision
from jobs.profiling import ProfiledWindow

STATE_FORMAT = "ms-workbench train state v1"
SYNC_RULE = "loss.asnumpy() every step"
STEP_TIME_RULE = "step_ms = wall time from taking the batch to loss.asnumpy() returning"
VAL_BATCH = 1000
PROGRESS_EVERY_S = 0.5
# Config keys that must equal the interrupted run's for a resume to continue the same run.
RESUME_KEYS = ("model.name", "model.hidden", "train.batch_size", "train.optimizer", "train.lr",
               "train.momentum", "train.precision", "train.seed", "train.max_steps",
               "train.train_limit", "train.val_limit", "train.parallel.workers")


def dotted(cfg: Dict[str, Any], key: str) -> Any:
    """cfg['a']['b'] for 'a.b'."""
    node: Any = cfg
    for part in key.split("."):
        node = node[part]
    return node


def peak_host_rss_mb() -> float:
    """Peak resident set size of this process in MB (Linux reports ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def save_ckpt_atomic(cell, path: Path) -> Path:
    """save_checkpoint to a temp name in the same folder, then rename (readers never see half a file)."""
    import mindspore as ms

    # save_checkpoint appends .ckpt to names that lack it, so the temp name ends in .ckpt too.
    tmp = path.with_name(".%s.%d.tmp.ckpt" % (path.name, os.getpid()))
    try:
        ms.save_checkpoint(cell, str(tmp))
        os.replace(str(tmp), str(path))
    finally:
        if tmp.exists():
            os.unlink(str(tmp))
    return path


def copy_atomic(src: Path, dst: Path) -> Path:
    """Copy a file to `dst` via a temp name and rename."""
    tmp = dst.with_name(".%s.%d.tmp" % (dst.name, os.getpid()))
    shutil.copyfile(str(src), str(tmp))
    os.replace(str(tmp), str(dst))
    return dst


def metrics_report(labels: np.ndarray, pred: np.ndarray) -> Dict[str, Any]:
    """accuracy, macro_f1, per_class (with class names), confusion (rows = true), zero_division, samples."""
    from workbench.data import CLASS_NAMES

    conf = confusion_matrix(labels, pred, len(CLASS_NAMES))
    report = classification_report(conf)
    for k, row in enumerate(report["per_class"]):
        row["name"] = CLASS_NAMES[k]
    report["confusion"] = conf.tolist()
    report["samples"] = int(len(labels))
    return report


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's sight (gc.freeze).

    Importing MindSpore and compiling a network leaves about 170 000 tracked objects that the
    collections triggered in the training loop kept walking: in one 3-epoch MLP run the young-
    generation collections took 0.32 s in all without this and 0.17 s with it (a single
    measurement on a shared machine). New garbage is still collected.
    """
    gc.freeze()


class EventPipe:
    """Batches the in-loop events (step, progress) and writes them about every 0.1 s, in order.

    Encoding and writing a line costs about 0.1 ms next to a 2-3 ms step on a small board; a
    helper thread fought the step for the GIL, so the loop only appends a tuple and the lines
    go out together in one write. Each event keeps the time it happened (`t`).
    Call drain() before emitting anything else, so seq stays in order.
    """

    FLUSH_EVERY_S = 0.1

    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.items: List[Any] = []
        self.flushed_at = time.monotonic()

    def put(self, type_: str, **fields: Any) -> None:
        """Queue one event; write the batch when it is old enough."""
        fields["t"] = round(time.time(), 6)
        self.items.append((type_, fields))
        now = time.monotonic()
        if now - self.flushed_at >= self.FLUSH_EVERY_S:
            self.drain()
            self.flushed_at = now

    def drain(self) -> None:
        """Write every queued event now."""
        items, self.items = self.items, []
        self.ctx.events.emit_many(items)

    def close(self) -> None:
        """Write what is queued."""
        self.drain()


class StepLog:
    """Per-step wall times, batch sizes and phases of this process, for the perf events."""

    def __init__(self, warmup_steps: int, graph_mode: bool):
        self.warmup_steps = int(warmup_steps)
        self.graph_mode = graph_mode
        self.step_ms: List[float] = []
        self.sizes: List[int] = []
        self.epochs: List[int] = []
        self.global_steps: List[int] = []
        self.recompile: Set[int] = set()
        self.profiled: Set[int] = set()
        self.shapes_seen: Set[int] = set()

    def phase_of_next(self, batch_size: int) -> str:
        """compile | recompile | warmup | steady for the step about to be recorded."""
        index = len(self.step_ms)
        if index == 0:
            return "compile"
        if self.graph_mode and batch_size not in self.shapes_seen:
            return "recompile"
        if index <= self.warmup_steps:
            return "warmup"
        return "steady"

    def add(self, step_ms: float, batch_size: int, epoch: int, global_step: int, phase: str) -> None:
        """Record one finished step."""
        if phase == "recompile":
            self.recompile.add(len(self.step_ms))
        elif phase == "profiled":
            self.profiled.add(len(self.step_ms))
        self.shapes_seen.add(int(batch_size))
        self.step_ms.append(float(step_ms))
        self.sizes.append(int(batch_size))
        self.epochs.append(int(epoch))
        self.global_steps.append(int(global_step))

    def adjacent_steady(self, n: int) -> List[float]:
        """step_ms of up to n steady steps right before and n right after the profiled ones."""
        if not self.profiled:
            return []
        first, last = min(self.profiled), max(self.profiled)
        steady = [i for i in range(1 + self.warmup_steps, len(self.step_ms))
                  if i not in self.profiled and i not in self.recompile]
        before = [i for i in steady if i < first][-n:]
        after = [i for i in steady if i > last][:n]
        return [self.step_ms[i] for i in before + after]

    def stats(self, epoch: Optional[int] = None) -> Dict[str, Any]:
        """Compile time and steady statistics of one epoch (or the whole process when None)."""
        if not self.step_ms:
            return step_stats([], [], self.warmup_steps)
        exclude = set(self.recompile) | self.profiled
        if epoch is not None:
            exclude |= {i for i, e in enumerate(self.epochs) if e != epoch}
        out = step_stats(self.step_ms, self.sizes, self.warmup_steps, exclude=exclude)
        out["profiled_steps"] = sum(1 for i in self.profiled if epoch is None or self.epochs[i] == epoch)
        # The raw index list would repeat every step of other epochs; name the recompiles instead.
        out.pop("excluded", None)
        out["recompile"] = [{"global_step": self.global_steps[i], "batch_size": self.sizes[i],
                             "s": self.step_ms[i] / 1000.0}
                            for i in sorted(self.recompile) if epoch is None or self.epochs[i] == epoch]
        return out


class Trainer:
    """One training run: device, data, network, loop, checkpoints, events."""

    def __init__(self, ctx: JobContext, par: Optional[Dict[str, Any]] = None):
        self.ctx = ctx
        self.par = par  # {rank, size, local_rank, node_rank} in a data-parallel run, else None
        self.shard_info: Optional[Dict[str, Any]] = None
        self.cfg = ctx.cfg
        self.t = ctx.cfg["train"]
        self.target = str(ctx.device["resolved"])
        self.device_id = int(ctx.device["id"])
        self.best: Dict[str, Any] = {"epoch": None, "macro_f1": None, "accuracy": None}
        self.resumed_from: Optional[Dict[str, Any]] = None
        self.artifacts: Dict[str, str] = {}
        self.losses_seen = 0
        self.window: Optional[ProfiledWindow] = None
        self.profile_at: Optional[int] = None  # index of the step that opens the profiled window
        self.profile: Optional[Dict[str, Any]] = None
        self.sampler: Optional[device_activity.BackgroundSample] = None
        if par is not None and self.target != "CPU":
            self.device_id = int(par["local_rank"])  # msrun's DEVICE_ID: one device per local rank

    @property
    def is_rank0(self) -> bool:
        """True in a single-process run and on rank 0: the process that validates, saves and summarises."""
        return self.par is None or self.par["rank"] == 0

    # ----- setup -------------------------------------------------------------------------

    def start(self) -> None:
        """Import MindSpore, emit `started`, select the device first, check what MindSpore reports."""
        import mindspore as ms

        self.ms = ms
        t, m = self.t, self.cfg["model"]
        self.ctx.started(
            mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)},
            mode=t["mode"], precision=t["precision"], model={"name": m["name"], "hidden": m["hidden"]},
            feed=t["feed"], batch_size=t["batch_size"], epochs=t["epochs"], seed=t["seed"],
            resume_from=t["resume_from"], parallel=self.par)
        how = msdevice.set_device(self.target, self.device_id, t["mode"])
        if self.par is not None:
            joined = dataparallel.init_collective(ms, self.par)
            self.ctx.log("rank %d of %d joined the cluster: %s" % (joined["rank"], joined["size"], joined["api"]))
        requested = {"target": self.target, "device_id": self.device_id, "mode": t["mode"]}
        effective = msdevice.effective_config_check(self.ctx, requested)
        self.effective = dict(effective["observed"], set_with=how)
        if effective["mismatches"]:
            raise JobFailed("MindSpore does not run where asked: %s" % "; ".join(effective["mismatches"]),
                            hint=msdevice.ms_role_warning() or "check the environment that starts jobs",
                            type_="DeviceError")

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
        self.ctx.check("data-split", "data split", "observed-pass",
                       "%s; %s data, train %d of %d, val %d of %d" % (
                           data.how, desc["source"], desc["n_train"], desc["n_train_split"],
                           desc["n_val"], desc["n_val_split"]),
                       evidence=desc,
                       hint="synthetic data: numbers say nothing about Fashion-MNIST" if desc["source"] == "synthetic" else None)
        if self.par is not None:
            self.shard_info = dataparallel.shard(self.ctx, data, self.par)
        dtype = precision.input_dtype(self.t["precision"])
        if dtype != np.float32:
            data.train_x = data.train_x.astype(dtype)
            data.val_x = data.val_x.astype(dtype)

    def build(self) -> None:
        """Seeded network, precision, loss, optimizer and the one-step training cell."""
        ms = self.ms
        from mindspore import nn

        t, m = self.t, self.cfg["model"]
        ms.set_seed(int(t["seed"]))
        self.net = models.build_net(m["name"], int(m["hidden"]))
        self.run_net, self.precision_info = precision.apply_precision(self.net, t["precision"])
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        params = self.run_net.trainable_params()
        if t["optimizer"] == "adam":
            eps = precision.adam_eps(t["precision"])
            opt = nn.Adam(params, learning_rate=float(t["lr"]), eps=eps)
            self.opt_info = {"name": "adam", "lr": t["lr"], "eps": eps}
        else:
            opt = nn.SGD(params, learning_rate=float(t["lr"]), momentum=float(t["momentum"]))
            self.opt_info = {"name": "sgd", "lr": t["lr"], "momentum": t["momentum"]}
        self.train_step = nn.TrainOneStepCell(precision.with_loss(self.run_net, loss_fn, t["precision"]), opt)
        self.train_step.set_train(True)
        self.ctx.log("network %s (%d parameters), %s, optimizer %s" % (
            m["name"], models.count_params(self.net), self.precision_info["how"], self.opt_info))

    # ----- resume ------------------------------------------------------------------------

    def fingerprint(self) -> Dict[str, Any]:
        """What must match for a resume to continue this run."""
        out = {key: dotted(self.cfg, key) for key in RESUME_KEYS}
        desc = self.data.description
        out["data.train_idx_sha256"] = desc["train_idx_sha256"]
        out["data.val_idx_sha256"] = desc["val_idx_sha256"]
        out["data.source"] = desc["source"]
        return out

    def load_resume(self) -> Dict[str, Any]:
        """Read the state of `train.resume_from`, check it fits, load it into the training cell."""
        ref = self.t["resume_from"]
        src = models.resolve_job_ref(self.ctx.dir, "train.resume_from", ref)
        art = src / "artifacts" if (src / "artifacts").is_dir() else src
        state_json, state_ckpt = art / "state.json", art / "state.ckpt"
        if not state_json.is_file() or not state_ckpt.is_file():
            raise JobFailed("train.resume_from is %r: %s has no state.json + state.ckpt" % (ref, art),
                            hint="the training job writes them after each epoch and on cancel", type_="ResumeError")
        state = read_json(state_json)
        if state.get("format") != STATE_FORMAT:
            raise JobFailed("%s: format is %r, expected %r" % (state_json, state.get("format"), STATE_FORMAT),
                            type_="ResumeError")
        digest = sha256_file(state_ckpt)
        if digest != state.get("ckpt_sha256"):
            raise JobFailed("%s: SHA-256 %s differs from %s recorded in %s" % (
                state_ckpt, digest, state.get("ckpt_sha256"), state_json),
                hint="the state files are from different saves; resume from another job", type_="ResumeError")
        diffs = ["%s: saved %r, now %r" % (k, v, self.fingerprint().get(k))
                 for k, v in sorted(state["fingerprint"].items()) if self.fingerprint().get(k) != v]
        if diffs:
            raise JobFailed("train.resume_from is %r but the config differs from that run: %s" % (ref, "; ".join(diffs)),
                            hint="resume with the same model, data and optimizer settings", type_="ResumeError")
        if state["next_epoch"] > int(self.t["epochs"]):
            raise JobFailed("train.resume_from is %r: it already finished %d epochs and train.epochs is %d" % (
                ref, state["next_epoch"] - 1, self.t["epochs"]), hint="raise train.epochs", type_="ResumeError")
        loaded = models.load_weights(self.train_step, state_ckpt, "resume state")
        self.resumed_from = {"job": src.name, "dir": str(src), "epoch": state["next_epoch"],
                             "step_in_epoch": state["step_in_epoch"], "global_step": state["global_step"]}
        if state.get("best", {}).get("epoch") is not None:
            self.best = dict(state["best"])
            copies = (("best.ckpt", "checkpoint"), ("best.json", "checkpoint-meta")) if self.is_rank0 else ()
            for name, kind in copies:
                if (art / name).is_file():
                    dst = copy_atomic(art / name, self.ctx.artifacts / name)
                    self.ctx.artifact(dst, kind, role="best", epoch=self.best["epoch"], copied_from=str(art / name))
        self.ctx.check("resume", "resume state", "observed-pass",
                       "continuing %s at epoch %d step %d (global step %d); %d tensors loaded, "
                       "state SHA-256 verified" % (src.name, state["next_epoch"], state["step_in_epoch"],
                                                   state["global_step"], loaded["parameters"]),
                       evidence={"state": str(state_json), "ckpt_sha256": digest, "fingerprint": state["fingerprint"]})
        return state

    def save_state(self, next_epoch: int, step_in_epoch: int, global_step: int, rng_state: Dict[str, Any],
                   partial_losses: List[float], partial_sizes: List[int]) -> None:
        """state.ckpt (network + optimizer) then state.json; artifacts emitted once both are whole."""
        ckpt = save_ckpt_atomic(self.train_step, self.ctx.artifacts / "state.ckpt")
        record = {
            "format": STATE_FORMAT, "job": self.ctx.meta.get("jid"), "next_epoch": int(next_epoch),
            "step_in_epoch": int(step_in_epoch), "global_step": int(global_step),
            "epochs": int(self.t["epochs"]), "rng_state_epoch_start": rng_state,
            "partial_epoch": {"losses": partial_losses, "batch_sizes": partial_sizes},
            "best": self.best, "ms_seed": int(self.ms.get_seed()) if hasattr(self.ms, "get_seed") else self.t["seed"],
            "seed": int(self.t["seed"]), "fingerprint": self.fingerprint(), "ckpt_sha256": sha256_file(ckpt),
            "saved_at": time.time(),
        }
        js = write_json(self.ctx.artifacts / "state.json", record)
        self.ctx.artifact(ckpt, "state", next_epoch=next_epoch, step_in_epoch=step_in_epoch)
        self.ctx.artifact(js, "state-meta", next_epoch=next_epoch, step_in_epoch=step_in_epoch)
        self.artifacts["state"] = "artifacts/state.ckpt"

    # ----- loop --------------------------------------------------------------------------

    def validate(self) -> Dict[str, Any]:
        """Accuracy, macro-F1, per-class metrics and confusion on the validation arrays."""
        pred = models.predict(self.run_net, self.data.val_x, VAL_BATCH)
        return metrics_report(self.data.val_y, pred)

    def perf_event(self, log: StepLog, scope: str, epoch: Optional[int] = None) -> Dict[str, Any]:
        """Emit a `perf` event for one epoch or the whole run."""
        stats = log.stats(epoch)
        steady = {k: stats[k] for k in ("n", "median_ms", "p95_ms", "images_per_s", "median_rule", "p95_rule")}
        mem = msdevice.peak_device_memory_mb(self.target)
        fields = dict(scope=scope, first_step_s=stats["first_step_s"], warmup_steps=stats["warmup_steps"],
                      steady=steady, recompile=stats["recompile"], peak_host_rss_mb=peak_host_rss_mb(),
                      peak_device_mb=mem["peak_device_mb"], device_memory_note=mem["device_memory_note"],
                      sync=SYNC_RULE, timing_rule=STEP_TIME_RULE, batch_size=int(self.t["batch_size"]),
                      feed=self.t["feed"], mode=self.t["mode"], precision=self.t["precision"], steps=len(log.step_ms),
                      profiled_steps=stats["profiled_steps"],
                      profile_slowdown=(self.profile or {}).get("slowdown") if scope == "run" else None)
        if epoch is not None:
            fields["epoch"] = epoch
        self.ctx.events.emit("perf", **fields)
        return fields

    def train(self) -> Dict[str, Any]:
        """The epoch loop; returns the final perf fields."""
        t, ctx = self.t, self.ctx
        n = len(self.data.train_y)
        bs = int(t["batch_size"])
        steps = datafeed.steps_per_epoch(n, bs, int(t["max_steps"]))
        epochs = int(t["epochs"])
        feed = datafeed.make_feed(t["feed"], self.data.train_x, self.data.train_y, bs)
        log = StepLog(int(t["warmup_steps"]), t["mode"] == "graph")
        rng = np.random.default_rng(int(t["seed"]))
        first_epoch, first_step, global_step = 1, 0, 0
        partial_losses: List[float] = []
        partial_sizes: List[int] = []
        if t["resume_from"]:
            state = self.load_resume()
            rng = datafeed.generator_from_state(state["rng_state_epoch_start"])
            first_epoch, first_step, global_step = state["next_epoch"], state["step_in_epoch"], state["global_step"]
            partial_losses = [float(v) for v in state["partial_epoch"]["losses"]]
            partial_sizes = [int(v) for v in state["partial_epoch"]["batch_sizes"]]
        total_steps = epochs * steps
        pipe = EventPipe(ctx)
        try:
            return self._epochs(pipe, log, feed, rng, n, steps, epochs, total_steps, first_epoch, first_step,
                                global_step, partial_losses, partial_sizes)
        finally:
            if self.window is not None:
                self.window.close("the run stopped")  # gives stdout back even on an error
            pipe.close()

    # ----- device evidence and the profiled window, both after warm-up -------------------

    def profile_steps(self) -> int:
        """Steps to profile (train.profile.steps); only rank 0 profiles in a data-parallel run."""
        return int((self.t.get("profile") or {}).get("steps") or 0) if self.is_rank0 else 0

    def after_warmup(self, pipe: EventPipe, log: StepLog, global_step: int, steps_left_in_epoch: int) -> None:
        """Before a step: once warm-up is over, start the npu-smi sample, then open the profiled window.

        The window waits for the sample to be in, so npu-smi never runs during profiled steps. When
        the epoch has room, N steady steps run first, so the window has unprofiled neighbours on
        both sides to compare with.
        """
        if len(log.step_ms) <= log.warmup_steps:
            return
        if self.sampler is None:
            env = self.cfg.get("env") or {}
            self.sampler = device_activity.BackgroundSample(
                self.ctx, dict(self.ctx.device, id=self.device_id), npu_smi=str(env.get("npu_smi") or "npu-smi"),
                timeout_s=float(env.get("npu_smi_timeout_s") or 20.0),
                when={"after_global_step": global_step, "rule": "once, after the compile and warm-up steps, "
                      "while training steps run"}).start()
        if self.sampler.done() and not self.sampler.reported:
            pipe.drain()
            self.sampler.report()
        wanted = self.profile_steps()
        if wanted and self.profile_at is None:
            self.profile_at = len(log.step_ms) + (wanted if steps_left_in_epoch > 2 * wanted else 0)
        if (wanted and self.window is None and self.sampler.reported and steps_left_in_epoch > 0
                and len(log.step_ms) >= self.profile_at):
            pipe.drain()
            self.window = ProfiledWindow(self.ctx, wanted, self.target)
            self.window.begin()
            self.ctx.log("profiling %d steps from global step %d with %s" % (
                wanted, global_step + 1, self.window.api) if self.window.is_open else
                "profiling not started: %s" % self.window.error, level="info" if self.window.is_open else "warning")

    def finish_device_sample(self, log: StepLog) -> None:
        """Report the sample (waiting for npu-smi's own time limit at most), or why there was none."""
        if self.sampler is not None:
            env = self.cfg.get("env") or {}
            wait_s = float(env.get("npu_smi_timeout_s") or 20.0) + 5.0
            self.sampler.report(wait_s=wait_s)
            if not self.sampler.reported:
                self.ctx.check(device_activity.CHECK_ID, device_activity.CHECK_TITLE, "blocked",
                               "the npu-smi sample had not returned %.0f s after training ended" % wait_s,
                               evidence={"target": self.target}, hint="look for a stuck npu-smi (state D)")
            return
        self.ctx.check(device_activity.CHECK_ID, device_activity.CHECK_TITLE, "not-run",
                       "no step ran after warm-up (%d steps, warm-up %d): nothing was sampled" % (
                           len(log.step_ms), log.warmup_steps),
                       evidence={"target": self.target, "steps": len(log.step_ms), "warmup_steps": log.warmup_steps},
                       hint="run more steps than train.warmup_steps")

    def finish_profile(self, log: StepLog) -> None:
        """Summarise the profiled window: artifacts with hashes, the `profile` check, self.profile."""
        wanted = self.profile_steps()
        if not wanted:
            return
        if self.window is None:
            self.profile = {"steps": 0, "steps_wanted": wanted, "top_ops": [], "slowdown": None,
                            "note": "no profiled window: the run ended before warm-up was over"}
            self.ctx.check("profile", "profiled window", "not-run", self.profile["note"],
                           evidence={"steps": len(log.step_ms), "warmup_steps": log.warmup_steps})
            return
        self.window.close("the epoch ended before %d steps" % wanted)
        steady = log.stats()
        adjacent = log.adjacent_steady(wanted)
        self.window.emit_artifacts()
        summary = self.window.summary(steady.get("median_ms"), float(np.median(adjacent)) if adjacent else None,
                                      len(adjacent))
        self.profile = summary
        top = summary.get("top_ops") or []
        if summary.get("error") and not top:
            status = "blocked" if summary.get("api") is None else "observed-fail"
            detail = summary["note"]
        elif not top:
            status, detail = "observed-fail", "the profiler wrote no operator records: %s" % summary["note"]
        else:
            status = "observed-pass"
            detail = "%d steps profiled (%s); %.1f operator launches per step; top: %s" % (
                summary["steps"], summary["api"], summary["ops_per_step"],
                ", ".join("%s %.2f ms" % (op["type"], op["total_ms"]) for op in top[:3]))
            if summary.get("slowdown") is not None:
                detail += "; profiled steps %.2f× the steady median" % summary["slowdown"]
            if summary.get("slowdown_adjacent") is not None:
                detail += " (%.2f× the %d steps around the window)" % (
                    summary["slowdown_adjacent"], summary["adjacent_steps"])
        evidence = {k: summary.get(k) for k in (
            "api", "steps", "steps_wanted", "global_steps", "stopped_early", "output_dir", "ops_per_step",
            "op_launches", "host_ms_per_step", "host_time_note", "device_ms_per_step", "device_time_note",
            "profiled_median_ms", "steady_median_ms", "slowdown", "adjacent_median_ms", "adjacent_steps",
            "slowdown_adjacent", "slowdown_rule", "open_s", "step_calls_s", "close_s", "trace_files",
            "consistency", "error")}
        self.ctx.check("profile", "profiled window", status, detail, evidence=evidence,
                       hint=None if status == "observed-pass" else "see artifacts/profile/profiler-stdout.log and stderr.log")

    def _epochs(self, pipe: EventPipe, log: StepLog, feed, rng, n: int, steps: int, epochs: int,
                total_steps: int, first_epoch: int, first_step: int, global_step: int,
                partial_losses: List[float], partial_sizes: List[int]) -> Dict[str, Any]:
        """Epochs first_epoch..epochs; in-loop events go through `pipe`."""
        t, ctx = self.t, self.ctx
        last_progress = 0.0
        for epoch in range(first_epoch, epochs + 1):
            rng_start = datafeed.generator_state(rng)
            order = datafeed.epoch_order(rng, n)
            losses, sizes = partial_losses, partial_sizes
            partial_losses, partial_sizes = [], []
            t_epoch = time.perf_counter()
            self.train_step.set_train(True)
            batches = feed.batches(order, first_step, steps) if first_step < steps else iter(())
            for step in range(first_step, steps):
                if self.window is None or self.sampler is None or not self.sampler.reported:
                    self.after_warmup(pipe, log, global_step, steps - step)
                profiling = self.window is not None and self.window.is_open
                if profiling:
                    self.window.step_begin()
                t0 = time.perf_counter()
                xb, yb, size = next(batches)
                loss = self.train_step(xb, yb)
                loss_value = float(loss.asnumpy())
                step_ms = (time.perf_counter() - t0) * 1000.0
                phase = log.phase_of_next(size)
                if profiling and phase != "recompile":
                    phase = "profiled"
                global_step += 1
                log.add(step_ms, size, epoch, global_step, phase)
                if phase in ("compile", "recompile"):
                    freeze_heap()
                if profiling and self.window.step_end(step_ms, global_step):
                    self.window.close()  # the profiler's own work, after the step's time was taken
                pipe.put("step", epoch=epoch, step=step + 1, global_step=global_step, loss=loss_value,
                         step_ms=step_ms, batch_size=size, phase=phase)
                if not math.isfinite(loss_value):
                    pipe.drain()
                    detail = "loss is %s at epoch %d step %d (global step %d)" % (loss_value, epoch, step + 1, global_step)
                    ctx.check("finite-loss", "finite loss", "observed-fail", detail,
                              evidence={"epoch": epoch, "step": step + 1, "global_step": global_step,
                                        "loss": loss_value, "lr": t["lr"], "precision": t["precision"]},
                              hint="lower train.lr or use fp32; the state of the last finished epoch is kept")
                    raise JobFailed("non-finite " + detail, hint="lower train.lr or use fp32", type_="NonFiniteLoss")
                losses.append(loss_value)
                sizes.append(size)
                self.losses_seen += 1
                now = time.monotonic()
                if now - last_progress >= PROGRESS_EVERY_S:
                    last_progress = now
                    pipe.put("progress", done=global_step, total=total_steps, unit="step",
                             phase="train epoch %d/%d" % (epoch, epochs))
                if ctx.cancel_requested:
                    pipe.drain()
                    if self.is_rank0:
                        self.save_state(epoch, step + 1, global_step, rng_start, losses, sizes)
                    raise Cancelled("cancelled by SIGTERM after epoch %d step %d (global step %d); "
                                    "state saved for train.resume_from" % (epoch, step + 1, global_step))
            first_step = 0
            pipe.drain()
            if self.window is not None and self.window.is_open:
                self.window.close("the epoch ended after %d of %d steps" % (
                    len(self.window.step_ms), self.window.steps_wanted))
            train_s = time.perf_counter() - t_epoch
            if not self.is_rank0:  # rank 0 validates and saves; the others go on to the next epoch
                self.perf_event(log, "epoch", epoch)
            else:
                ctx.progress(global_step, total_steps, "step", "validate epoch %d/%d" % (epoch, epochs))
                t_val = time.perf_counter()
                val = self.validate()
                val_s = time.perf_counter() - t_val
                is_best = self.best["macro_f1"] is None or val["macro_f1"] > self.best["macro_f1"]
                if is_best:
                    self.best = {"epoch": epoch, "macro_f1": val["macro_f1"], "accuracy": val["accuracy"]}
                    self.save_best(epoch, global_step, val)
                train_loss = weighted_mean(losses, sizes) if losses else None
                ctx.events.emit("epoch", fsync=True, epoch=epoch, train_loss=train_loss, samples=int(sum(sizes)),
                                steps=len(losses), val=val, is_best=is_best, epoch_s=time.perf_counter() - t_epoch,
                                train_s=train_s, val_s=val_s, best_epoch=self.best["epoch"],
                                loss_rule="sample-weighted mean of the step losses (a batch counts by its size)"
                                + ("; rank 0's shard only" if self.par is not None else ""))
                self.perf_event(log, "epoch", epoch)
                self.save_state(epoch + 1, 0, global_step, datafeed.generator_state(rng), [], [])
            if ctx.cancel_requested:
                raise Cancelled("cancelled by SIGTERM after epoch %d; state saved for train.resume_from" % epoch)
        ctx.progress(global_step, total_steps, "step", "done")
        self.finish_device_sample(log)
        self.finish_profile(log)
        ctx.check("finite-loss", "finite loss", "observed-pass",
                  "all %d step losses of this job were finite (fetched with loss.asnumpy())" % self.losses_seen,
                  evidence={"steps": self.losses_seen})
        return self.perf_event(log, "run")

    def save_best(self, epoch: int, global_step: int, val: Dict[str, Any]) -> None:
        """best.ckpt (network parameters) then best.json with the config and metrics."""
        ckpt = save_ckpt_atomic(self.net, self.ctx.artifacts / "best.ckpt")
        record = {
            "job": self.ctx.meta.get("jid"), "session": self.ctx.meta.get("session"), "epoch": epoch,
            "global_step": global_step, "selected_by": "validation macro_f1 (highest; first epoch wins a tie)",
            "val": val, "model": dict(self.cfg["model"], parameters=models.count_params(self.net)),
            "precision": self.precision_info, "optimizer": self.opt_info, "data": self.data.description,
            "checkpoint": {"file": "best.ckpt", "sha256": sha256_file(ckpt), "bytes": ckpt.stat().st_size},
            "effective_device": self.effective, "mindspore": self.ms.__version__, "config": self.cfg,
        }
        js = write_json(self.ctx.artifacts / "best.json", record)
        self.ctx.artifact(ckpt, "checkpoint", role="best", epoch=epoch, macro_f1=val["macro_f1"])
        self.ctx.artifact(js, "checkpoint-meta", role="best", epoch=epoch)
        self.artifacts["best"] = "artifacts/best.ckpt"
        self.artifacts["best_meta"] = "artifacts/best.json"


def main(ctx: JobContext) -> str:
    """Run the training job (one rank of it under msrun when train.parallel.workers > 1)."""
    par = dataparallel.rank_env(ctx.cfg)
    dataparallel.tag_events(ctx, par)
    trainer = Trainer(ctx, par)
    trainer.start()
    trainer.load_data()
    ctx.raise_if_cancelled()
    trainer.build()
    perf = trainer.train()
    if par is not None:
        if not dataparallel.weights_check(ctx, trainer.net, par):
            raise JobFailed("the ranks ended with different weights (check weights-identical)",
                            hint="see the check's hashes and msrun_logs/", type_="WeightsDiffer")
        if not trainer.is_rank0:
            return "ok"
    ctx.result({
        "best_epoch": trainer.best["epoch"],
        "best": {"macro_f1": trainer.best["macro_f1"], "accuracy": trainer.best["accuracy"]},
        "perf": {k: perf[k] for k in ("first_step_s", "warmup_steps", "steady", "recompile", "peak_host_rss_mb",
                                      "peak_device_mb", "device_memory_note", "sync", "profiled_steps",
                                      "profile_slowdown")},
        "artifacts": trainer.artifacts,
        "effective_device": trainer.effective,
        "resumed_from": trainer.resumed_from,
        "data": {k: trainer.data.description[k] for k in ("source", "n_train", "n_val", "how")},
        "precision": trainer.precision_info,
        "optimizer": trainer.opt_info,
        "profile": trainer.profile,
        "parallel": None if par is None else dict(par, shard=trainer.shard_info),
    })
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
