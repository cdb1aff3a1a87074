"""The `train` job's device-activity evidence: one npu-smi sample taken while training steps run.

The sample starts once, after the compile and warm-up steps, in the background (npu-smi can
take seconds), and is reported between steps when it is in. On CPU and GPU the check says
not-run (device_activity decides that).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from workbench.jobkit import JobContext
from workbench.protocol import Evidence

from jobs import device_activity
from jobs.train_timing import EventPipe, StepLog

WHEN_RULE = "once, after the compile and warm-up steps, while training steps run"
# After training ends the sample may still be waiting for npu-smi: wait its own limit plus this.
FINISH_GRACE_S = 5.0


class DeviceSampling:
    """Starts the npu-smi sample after warm-up, reports it when it is in, and says why when there was none."""

    def __init__(self, ctx: JobContext, device: Dict[str, Any]):
        self.ctx = ctx
        self.device = device  # the runner's decision, with this rank's device id
        self.sampler: Optional[device_activity.BackgroundSample] = None

    @property
    def reported(self) -> bool:
        """True once the sample's check was emitted."""
        return self.sampler is not None and self.sampler.reported

    def poll(self, pipe: EventPipe, global_step: int) -> None:
        """Between steps after warm-up: start the sample once, report it when it is in."""
        if self.sampler is None:
            env = self.ctx.cfg.env
            self.sampler = device_activity.BackgroundSample(
                self.ctx, self.device, npu_smi=env.npu_smi, timeout_s=env.npu_smi_timeout_s,
                when={"after_global_step": global_step, "rule": WHEN_RULE}).start()
        if self.sampler.done() and not self.sampler.reported:
            pipe.drain()
            self.sampler.report()

    def finish(self, log: StepLog) -> None:
        """Report the sample (waiting for npu-smi's own time limit at most), or why there was none."""
        target = self.device["target"]
        if self.sampler is not None:
            wait_s = self.ctx.cfg.env.npu_smi_timeout_s + FINISH_GRACE_S
            self.sampler.report(wait_s=wait_s)
            if not self.sampler.reported:
                self.ctx.check(device_activity.CHECK_ID, device_activity.CHECK_TITLE, Evidence.BLOCKED,
                               "the npu-smi sample had not returned %.0f s after training ended" % wait_s,
                               evidence={"target": target}, hint="look for a stuck npu-smi (state D)")
            return
        self.ctx.check(device_activity.CHECK_ID, device_activity.CHECK_TITLE, Evidence.NOT_RUN,
                       "no step ran after warm-up (%d steps, warm-up %d): nothing was sampled" % (
                           len(log.step_ms), log.warmup_steps),
                       evidence={"target": target, "steps": len(log.step_ms), "warmup_steps": log.warmup_steps},
                       hint="run more steps than train.warmup_steps")

