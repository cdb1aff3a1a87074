"""The `numerics` job: replay one training step of a run in PyNative and name the first cell out of range.

numerics.from names the train job; numerics.step null replays the failing case the run kept (its last
finite state and the batch of the step that broke), a number replays that global step: the run's
saved state (or its seeded initial weights when the step comes before it) is trained forward in this
process over the run's own batches, each replayed loss compared with the one the run recorded.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from jobs.common import datafeed, models, msdevice, precision, stepcell
from jobs.common.failcase import CASE_DIR, STATE, load_case
from jobs.numerics import replay
from jobs.train.resume import STATE_META
from workbench.analysis import overflow
from workbench.events.files import read_all
from workbench.events.protocol import Evidence, is_main
from workbench.events.steps import step_rows
from workbench.jobkit.config import JobConfig, load_job_config
from workbench.jobkit.context import JobContext, JobFailed
from workbench.system.atomic import read_json, write_json


def recorded_losses(run_dir: Path) -> Dict[int, Any]:
    """Global step -> the loss the run recorded (main rank), from its events."""
    out: Dict[int, Any] = {}
    path = run_dir / "events.jsonl"
    if not path.is_file():
        return out
    for ev in read_all(str(path)):
        if not is_main(ev) or type(ev.get("global_step")) is not int:
            continue
        if ev.get("type") == "steps":
            for i, _step, loss, _ms, _size, _phase in step_rows(ev):
                out[ev["global_step"] + i] = loss
        elif ev.get("type") == "step":
            out[ev["global_step"]] = ev.get("loss")
    return out


def start_point(run_dir: Path, run_cfg: JobConfig, step: int) -> Dict[str, Any]:
    """Where the forward replay starts: the run's saved state when it is before `step`, else its initial weights."""
    meta_path = run_dir / "artifacts" / STATE_META
    if meta_path.is_file():
        saved = read_json(meta_path)
        if saved.get("global_step", step) < step:
            return {
                "from": "state",
                "ckpt": run_dir / "artifacts" / "state.ckpt",
                "epoch": saved["next_epoch"],
                "step_in_epoch": saved["step_in_epoch"],
                "global_step": saved["global_step"],
                "rng": datafeed.generator_from_state(saved["rng_state_epoch_start"]),
            }
    return {
        "from": "initial weights (train.seed %d)" % run_cfg.train.seed,
        "epoch": 1,
        "step_in_epoch": 0,
        "global_step": 0,
        "rng": np.random.default_rng(run_cfg.train.seed),
    }


def forward_to(ctx: JobContext, parts: Any, run_dir: Path, run_cfg: JobConfig, step: int) -> Dict[str, Any]:
    """Train from the start point to just before global `step`; the batch of `step` and how the replay went."""
    from mindspore import Tensor

    t = run_cfg.train
    data = datafeed.load_run_data(run_dir, run_cfg.plain())
    x = precision.prepare_inputs(data.train_x, t.precision, t.input_scale)
    n = len(data.train_y)
    per_epoch = datafeed.steps_per_epoch(n, t.batch_size, t.max_steps)
    if step > per_epoch * t.epochs:
        raise JobFailed(
            "numerics.step is %d but the run has %d steps (%d epochs of %d)"
            % (step, per_epoch * t.epochs, t.epochs, per_epoch),
            hint="give a global step of the run",
            type_="ConfigError",
        )
    start = start_point(run_dir, run_cfg, step)
    if start["from"] == "state":
        models.load_weights(parts.train_step, start["ckpt"], "the run's state")
    recorded = recorded_losses(run_dir)
    feed = datafeed.NumpyFeed(x, data.train_y, t.batch_size)
    epoch, first, g, rng = start["epoch"], start["step_in_epoch"], start["global_step"], start["rng"]
    diffs: List[float] = []
    compared = 0
    while True:
        order = datafeed.epoch_order(rng, n)
        for i, (xb, yb) in enumerate(feed.numpy_batches(order, first, per_epoch)):
            if g + 1 == step:
                return {
                    "x": xb,
                    "y": yb,
                    "at": {"epoch": epoch, "step": first + i + 1, "global_step": step},
                    "start": {k: start[k] for k in ("from", "epoch", "step_in_epoch", "global_step")},
                    "replayed_steps": step - 1 - start["global_step"],
                    "losses_compared": compared,
                    "max_loss_diff": max(diffs) if diffs else None,
                }
            loss = float(stepcell.loss_of(parts.train_step(Tensor(xb), Tensor(yb))).asnumpy())
            g += 1
            ref = recorded.get(g)
            if isinstance(ref, (int, float)) and math.isfinite(loss):
                compared += 1
                diffs.append(abs(loss - ref))
            if g % 50 == 0:
                ctx.progress(
                    g - start["global_step"], step - start["global_step"], "step", "replaying to step %d" % step
                )
                ctx.raise_if_cancelled()
        epoch, first = epoch + 1, 0


def main(ctx: JobContext) -> str:
    """Replay the asked-for step of numerics.from and emit the `overflow-origin` check."""
    ref: Optional[str] = ctx.cfg.at("numerics.from")
    step: Optional[int] = ctx.cfg.at("numerics.step")
    if not ref:
        raise JobFailed("numerics.from is not set", hint="--set numerics.from=train-001", type_="ConfigError")
    run_dir = models.resolve_job_ref(ctx.dir, "numerics.from", ref)
    if not (run_dir / "config.json").is_file():
        raise JobFailed("numerics.from is %r: %s has no config.json" % (ref, run_dir), type_="ConfigError")
    run_cfg = load_job_config(run_dir)
    import mindspore as ms

    ctx.started(
        mindspore={"version": ms.__version__},
        mode="pynative",
        precision=run_cfg.train.precision,
        run=str(run_dir),
        replay_step=step,
    )
    device = msdevice.require_device(ctx, ctx.cfg.device.target, ctx.cfg.device.id, "pynative")
    parts = stepcell.build_step(ms, run_cfg)
    located: Dict[str, Any] = {}
    if step is None:
        case_dir = run_dir / "artifacts" / CASE_DIR
        meta, x, y = load_case(case_dir)
        models.load_weights(parts.train_step, case_dir / STATE, "numerics case state")
        at = meta.get("at") or {}
        located = {"trigger": meta.get("trigger"), "case": str(case_dir)}
    else:
        fwd = forward_to(ctx, parts, run_dir, run_cfg, step)
        x, y, at = fwd.pop("x"), fwd.pop("y"), fwd["at"]
        located = fwd
        if fwd["max_loss_diff"] is not None:
            ctx.log(
                "replayed %d steps from %s; %d losses compared with the run's, max |diff| %.3g"
                % (fwd["replayed_steps"], fwd["start"]["from"], fwd["losses_compared"], fwd["max_loss_diff"])
            )
    probes = replay.inspect_step(parts, x, y)
    effective = dict(msdevice.effective_device(), mode="pynative", mindspore=ms.__version__)
    finding = replay.finding(probes, at, effective)
    out = write_json(ctx.artifacts / "finding.json", finding)
    ctx.artifact(out, "numerics-finding")
    run_device = (read_json(run_dir / "job.json").get("device") or {}) if (run_dir / "job.json").is_file() else {}
    evidence = overflow.origin_evidence(finding, run_device)
    evidence["replay"] = located
    evidence["run"] = str(run_dir)
    if finding["bad"] is None:
        status, detail, hint = (
            Evidence.PASS,
            finding["sentence"] + "; replayed on %s in PyNative" % effective.get("target"),
            None,
        )
        if run_device.get("target") and run_device.get("target") != effective.get("target"):
            detail += " (the run was on %s: evidence about the model's numbers, not about %s)" % (
                run_device.get("target"),
                run_device.get("target"),
            )
    else:
        status, detail, hint = overflow.origin_verdict(finding, run_device)
    ctx.check("overflow-origin", "first non-finite value", status, detail, evidence=evidence, hint=hint)
    ctx.result({"finding": {k: finding[k] for k in ("at", "bad", "sentence", "replay_device")}, "device": device})
    return "ok"
