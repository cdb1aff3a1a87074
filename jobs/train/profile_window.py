"""The `train` job's profiled window: when it opens (after warm-up and the npu-smi sample), and its check.

With `train.profile.steps=N` the N steps after warm-up run under MindSpore's profiler (phase
"profiled"); when the epoch has room, N steady steps run first, so the window has unprofiled
neighbours on both sides to compare with. Only rank 0 profiles in a data-parallel run.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from jobs.train.profiler import ProfiledWindow
from jobs.train.timing import EventPipe, StepLog
from workbench.analysis.metrics import median
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext

CHECK_ID = "profile"
CHECK_TITLE = "profiled window"
EVIDENCE_KEYS = (
    "api",
    "steps",
    "steps_wanted",
    "global_steps",
    "stopped_early",
    "output_dir",
    "ops_per_step",
    "op_launches",
    "host_ms_per_step",
    "host_time_note",
    "device_ms_per_step",
    "device_time_note",
    "profiled_median_ms",
    "steady_median_ms",
    "slowdown",
    "adjacent_median_ms",
    "adjacent_steps",
    "slowdown_adjacent",
    "slowdown_rule",
    "open_s",
    "step_calls_s",
    "close_s",
    "trace_files",
    "consistency",
    "error",
)


class ProfilePlan:
    """The profiled window of one run: steps wanted, the step it opens at, the window, its summary."""

    def __init__(self, ctx: JobContext, steps_wanted: int, target: str):
        self.ctx = ctx
        self.wanted = steps_wanted  # 0: no profiling
        self.target = target
        self.open_at: Optional[int] = None  # index of the step that opens the window
        self.window: Optional[ProfiledWindow] = None
        self.summary: Optional[Dict[str, Any]] = None

    @property
    def settled(self) -> bool:
        """True when nothing is left to decide before a step: no profiling, or a window was opened."""
        return not self.wanted or self.window is not None

    @property
    def is_open(self) -> bool:
        """True while the profiler records steps."""
        return self.window is not None and self.window.is_open

    def maybe_open(
        self, pipe: EventPipe, log: StepLog, global_step: int, steps_left_in_epoch: int, sample_reported: bool
    ) -> None:
        """After warm-up, before a step: open the window once the npu-smi sample is in (npu-smi never runs inside it)."""
        if not self.wanted:
            return
        if self.open_at is None:
            self.open_at = len(log.step_ms) + (self.wanted if steps_left_in_epoch > 2 * self.wanted else 0)
        if self.window is None and sample_reported and steps_left_in_epoch > 0 and len(log.step_ms) >= self.open_at:
            pipe.drain()
            self.window = ProfiledWindow(self.ctx, self.wanted, self.target)
            self.window.begin()
            if self.window.is_open:
                self.ctx.log(
                    "profiling %d steps from global step %d with %s" % (self.wanted, global_step + 1, self.window.api)
                )
            else:
                self.ctx.log("profiling not started: %s" % self.window.error, level="warning")

    def close_at_epoch_end(self) -> None:
        """A window still open when the epoch ends closes there (the next epoch starts a new order)."""
        window = self.window
        if window is not None and window.is_open:
            window.close("the epoch ended after %d of %d steps" % (len(window.step_ms), window.steps_wanted))

    def close_on_stop(self) -> None:
        """Give stdout back even when the run stopped on an error."""
        if self.window is not None:
            self.window.close("the run stopped")

    def finish(self, log: StepLog) -> None:
        """Summarise the window: artifacts with hashes, the `profile` check, self.summary."""
        if not self.wanted:
            return
        if self.window is None:
            self.summary = {
                "steps": 0,
                "steps_wanted": self.wanted,
                "top_ops": [],
                "slowdown": None,
                "note": "no profiled window: the run ended before warm-up was over",
            }
            self.ctx.check(
                CHECK_ID,
                CHECK_TITLE,
                Evidence.NOT_RUN,
                self.summary["note"],
                evidence={"steps": len(log.step_ms), "warmup_steps": log.warmup_steps},
            )
            return
        self.window.close("the epoch ended before %d steps" % self.wanted)
        adjacent = log.adjacent_steady(self.wanted)
        self.window.emit_artifacts()
        summary = self.window.summary(log.stats().get("median_ms"), median(adjacent), len(adjacent))
        self.summary = summary
        status, detail = verdict(summary)
        self.ctx.check(
            CHECK_ID,
            CHECK_TITLE,
            status,
            detail,
            evidence={k: summary.get(k) for k in EVIDENCE_KEYS},
            hint=None if status == Evidence.PASS else "see artifacts/profile/profiler-stdout.log and stderr.log",
        )


def verdict(summary: Dict[str, Any]) -> tuple:
    """(evidence level, detail) of a window's summary: a pass needs real operator records."""
    top = summary.get("top_ops") or []
    if summary.get("error") and not top:
        return (Evidence.BLOCKED if summary.get("api") is None else Evidence.FAIL), summary["note"]
    if not top:
        return Evidence.FAIL, "the profiler wrote no operator records: %s" % summary["note"]
    detail = "%d steps profiled (%s); %.1f operator launches per step; top: %s" % (
        summary["steps"],
        summary["api"],
        summary["ops_per_step"],
        ", ".join("%s %.2f ms" % (op["type"], op["total_ms"]) for op in top[:3]),
    )
    if summary.get("slowdown") is not None:
        detail += "; profiled steps %.2f× the steady median" % summary["slowdown"]
    if summary.get("slowdown_adjacent") is not None:
        detail += " (%.2f× the %d steps around the window)" % (summary["slowdown_adjacent"], summary["adjacent_steps"])
    return Evidence.PASS, detail
