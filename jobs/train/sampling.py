"""The `train` job's device-activity evidence: one npu-smi sample taken while training steps run.

The sample starts once, after the compile and warm-up steps, in the background (npu-smi can
take seconds), and is reported between steps when it is in. On CPU and GPU the check says
not-run (device_activity decides that).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from jobs.common import device_activity
from jobs.common.device_telemetry import DeviceTelemetry
from jobs.train.timing import EventPipe, StepLog
from workbench.ascend import npusmi
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext

WHEN_RULE = "once, after the compile and warm-up steps, while training steps run"
# After training ends the sample may still be waiting for npu-smi: wait its own limit plus this.
FINISH_GRACE_S = 5.0


class DeviceSampling:
    """Starts the npu-smi sample after warm-up, reports it when it is in, and says why when there was none."""

    def __init__(self, ctx: JobContext, device: Dict[str, Any]):
        self.ctx = ctx
        self.device = device  # the runner's decision, with this rank's device id
        self.sampler: Optional[device_activity.BackgroundSample] = None
        self.telemetry = start_telemetry(ctx, device)
        self.aicore: list = []  # the telemetry's AI Core readings so far (evidence for device-activity)

    def feed(self, pipe: EventPipe) -> None:
        """Every step: hand the telemetry's queued `device` events and log lines to the event pipe (cheap when none)."""
        if self.telemetry is None:
            return
        for type_, fields in self.telemetry.drain():
            if type_ == "device":
                self.aicore.append(fields.get("ai_core_pct"))
            pipe.put(type_, **fields)

    def telemetry_evidence(self) -> Optional[Dict[str, Any]]:
        """What the live samples say of the AI Cores: {samples, above_zero, max_pct, stopped}; None off Ascend."""
        if self.telemetry is None:
            return None
        known = [a for a in self.aicore if a is not None]
        return {
            "samples": len(self.aicore),
            "above_zero": sum(1 for a in known if a > 0),
            "max_pct": max(known) if known else None,
            "stopped": self.telemetry.stopped_why,
        }

    def _add_telemetry(self) -> None:
        """Put the AI Core readings into the device-activity observation before it is reported."""
        result = self.sampler.result if self.sampler is not None else None
        tele = self.telemetry_evidence()
        if result is None or tele is None or result.get("telemetry_added"):
            return
        result["telemetry_added"] = True
        result.setdefault("evidence", {})["telemetry"] = tele
        if result.get("status") == Evidence.PASS and tele["samples"]:
            # the pid on the device is one half; AI Cores busy while it is there is the other
            result["detail"] = "%s; AI Core above zero in %d of %d live samples (max %s%%)" % (
                result["detail"],
                tele["above_zero"],
                tele["samples"],
                tele["max_pct"],
            )

    @property
    def reported(self) -> bool:
        """True once the sample's check was emitted."""
        return self.sampler is not None and self.sampler.reported

    def poll(self, pipe: EventPipe, global_step: int) -> None:
        """Between steps after warm-up: start the sample once, report it when it is in."""
        if self.sampler is None:
            env = self.ctx.cfg.env
            self.sampler = device_activity.BackgroundSample(
                self.ctx,
                self.device,
                npu_smi=env.npu_smi,
                timeout_s=env.npu_smi_timeout_s,
                when={"after_global_step": global_step, "rule": WHEN_RULE},
            ).start()
        if self.sampler.done() and not self.sampler.reported:
            self.feed(pipe)
            pipe.drain()
            self._add_telemetry()
            self.sampler.report()

    def finish(self, log: StepLog) -> None:
        """Report the sample (waiting for npu-smi's own time limit at most), or why there was none."""
        target = self.device["target"]
        if self.telemetry is not None:  # the last samples, then the thread is left to end on its own
            self.telemetry.stop()
            for type_, fields in self.telemetry.drain():
                self.ctx.emit(type_, **fields)
        if self.sampler is not None:
            wait_s = self.ctx.cfg.env.npu_smi_timeout_s + FINISH_GRACE_S
            self.sampler.thread.join(wait_s)
            self._add_telemetry()
            self.sampler.report(wait_s=wait_s)
            if not self.sampler.reported:
                self.ctx.check(
                    device_activity.CHECK_ID,
                    device_activity.CHECK_TITLE,
                    Evidence.BLOCKED,
                    "the npu-smi sample had not returned %.0f s after training ended" % wait_s,
                    evidence={"target": target},
                    hint="look for a stuck npu-smi (state D)",
                )
            return
        self.ctx.check(
            device_activity.CHECK_ID,
            device_activity.CHECK_TITLE,
            Evidence.NOT_RUN,
            "no step ran after warm-up (%d steps, warm-up %d): nothing was sampled"
            % (len(log.step_ms), log.warmup_steps),
            evidence={"target": target, "steps": len(log.step_ms), "warmup_steps": log.warmup_steps},
            hint="run more steps than train.warmup_steps",
        )


def start_telemetry(ctx: JobContext, device: Dict[str, Any]) -> Optional[DeviceTelemetry]:
    """On Ascend: sample npu-smi for this process's own device (each rank its own); elsewhere nothing is sampled."""
    if device.get("target") != "Ascend":
        return None
    env = ctx.cfg.env
    located = device_activity.find_npu_smi(env.npu_smi)
    path = located["path"]
    if path is None:
        ctx.log("device telemetry: %s; nothing sampled" % npusmi.missing_text(located), level="warning")
        return None
    return DeviceTelemetry(
        path,
        device_activity.lock_path(ctx),
        int(device.get("id", 0) or 0),
        os.environ.get("ASCEND_RT_VISIBLE_DEVICES"),
        timeout_s=env.npu_smi_timeout_s,
    ).start()
