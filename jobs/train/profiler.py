"""Profile N steady training steps with MindSpore's profiler, in the job process, into artifacts/profile/.

Feature-detected: `mindspore.profiler.profile` with a schedule (active=N) and
`tensorboard_trace_handler` where it exists (2.5 and newer), else `mindspore.Profiler` with
start()/stop()/analyse() (2.4). The profiler prints its progress to stdout: while the window is
open, file descriptor 1 points at artifacts/profile/profiler-stdout.log, so the chatter lands
there (child processes it starts inherit it) and never near the event stream.

The caller times its own steps: `step_begin()` before taking the batch, `step_end(step_ms)`
after the loss is fetched; the profiler's own per-step call (which may parse and write the
trace at the last step) runs after that, outside the step time.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from workbench.analysis.metrics import median
from workbench.analysis.profile import ProfileParseError, summarize, trace_files
from workbench.jobkit.context import JobContext

API_PROFILE = "mindspore.profiler.profile"
API_LEGACY = "mindspore.Profiler"
STDOUT_LOG = "profiler-stdout.log"


def detect_api() -> Optional[str]:
    """Which profiler API this MindSpore has: the schedule-based one first, else the 2.4 class."""
    import mindspore as ms

    try:
        import mindspore.profiler as prof_mod
    except ImportError:
        prof_mod = None
    if prof_mod is not None and all(
        hasattr(prof_mod, n) for n in ("profile", "schedule", "tensorboard_trace_handler", "ProfilerActivity")
    ):
        return API_PROFILE
    if hasattr(ms, "Profiler"):
        return API_LEGACY
    return None


class StdoutToFile:
    """Point file descriptor 1 (and sys.stdout) at a file until restore()."""

    def __init__(self, path: Path):
        self.path = path
        self.saved_fd: Optional[int] = None

    def redirect(self) -> None:
        """Flush what is pending, then send fd 1 to the file (appending)."""
        sys.stdout.flush()
        self.saved_fd = os.dup(1)
        fd = os.open(str(self.path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.close(fd)

    def restore(self) -> None:
        """Give fd 1 back (idempotent)."""
        if self.saved_fd is None:
            return
        sys.stdout.flush()
        os.dup2(self.saved_fd, 1)
        os.close(self.saved_fd)
        self.saved_fd = None


class ProfiledWindow:
    """One profiled window of `steps` training steps; summary() reads what the profiler wrote."""

    def __init__(self, ctx: JobContext, steps: int, target: str, api: Optional[str] = None):
        self.ctx = ctx
        self.steps_wanted = int(steps)
        self.target = target
        self.out_dir = ctx.artifacts / "profile"
        self.api = api
        self.prof: Any = None
        self.state = "idle"  # idle -> open -> closed
        self.windows_ns: List[List[int]] = []
        self.step_ms: List[float] = []
        self.global_steps: List[int] = []
        self.open_s: Optional[float] = None
        self.close_s: Optional[float] = None
        self.step_calls_s = 0.0  # time in the profiler's per-step calls (the last one writes and parses)
        self.stopped_early: Optional[str] = None
        self.error: Optional[str] = None
        self.stdout = StdoutToFile(self.out_dir / STDOUT_LOG)
        self._t0_ns = 0

    @property
    def is_open(self) -> bool:
        """Is the profiler recording?"""
        return self.state == "open"

    def begin(self) -> None:
        """Create and start the profiler (stdout redirected from here until close())."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.api = self.api or detect_api()
        if self.api is None:
            self.error = "this MindSpore has neither mindspore.profiler.profile nor mindspore.Profiler"
            self.state = "closed"
            return
        t0 = time.perf_counter()
        self.stdout.redirect()
        try:
            if self.api == API_PROFILE:
                from mindspore.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

                activities = [ProfilerActivity.CPU]
                if self.target == "Ascend":
                    activities.append(ProfilerActivity.NPU)
                elif self.target == "GPU":
                    activities.append(ProfilerActivity.GPU)
                kwargs: Dict[str, Any] = {}
                if "start_profile" in inspect.signature(profile).parameters:
                    kwargs["start_profile"] = False  # else the constructor starts it and start() warns
                # Warm-up already happened in the job; the window is exactly the N steps asked for.
                self.prof = profile(
                    activities=activities,
                    schedule=schedule(wait=0, warmup=0, active=self.steps_wanted, repeat=1),
                    on_trace_ready=tensorboard_trace_handler(str(self.out_dir)),
                    **kwargs,
                )
            else:
                import mindspore as ms

                self.prof = ms.Profiler(output_path=str(self.out_dir), start_profile=False)
            self.prof.start()
        except Exception as exc:  # a profiler that cannot start must not stop the training
            self.stdout.restore()
            self.error = "%s could not start: %s: %s" % (self.api, type(exc).__name__, exc)
            self.state = "closed"
            return
        self.state = "open"
        self.open_s = time.perf_counter() - t0

    def step_begin(self) -> None:
        """Mark the start of a profiled step (wall clock, the profiler's clock)."""
        self._t0_ns = time.time_ns()

    def step_end(self, step_ms: float, global_step: int) -> bool:
        """Record a finished profiled step; True when the window is complete (then close it)."""
        self.windows_ns.append([self._t0_ns, time.time_ns()])
        self.step_ms.append(float(step_ms))
        self.global_steps.append(int(global_step))
        if self.api == API_PROFILE and self.prof is not None:
            t0 = time.perf_counter()
            self.prof.step()  # at the last active step this writes and parses the trace
            self.step_calls_s += time.perf_counter() - t0
        return len(self.step_ms) >= self.steps_wanted

    def close(self, why: Optional[str] = None) -> None:
        """Stop (and analyse, for the 2.4 API) the profiler; restore stdout. Safe to call twice."""
        if self.state != "open":
            self.stdout.restore()
            return
        if why and len(self.step_ms) < self.steps_wanted:
            self.stopped_early = why
        t0 = time.perf_counter()
        try:
            self.prof.stop()
            if self.api == API_LEGACY:
                self.prof.analyse()
        except Exception as exc:
            self.error = "%s stop/analyse failed: %s: %s" % (self.api, type(exc).__name__, exc)
        finally:
            self.stdout.restore()
            self.state = "closed"
            self.close_s = time.perf_counter() - t0

    def emit_artifacts(self) -> List[Dict[str, Any]]:
        """Artifact events for the trace/table files and the profiler's stdout log."""
        out: List[Dict[str, Any]] = []
        if not self.out_dir.is_dir():
            return out
        for item in trace_files(self.out_dir):
            out.append(
                self.ctx.artifact(self.out_dir / item["path"], "profile-" + item["kind"], opens_with=item["opens_with"])
            )
        log = self.out_dir / STDOUT_LOG
        if log.is_file():
            out.append(
                self.ctx.artifact(log, "profile-log", opens_with="any text viewer: the profiler's own progress lines")
            )
        return out

    def summary(
        self, steady_median_ms: Optional[float], adjacent_median_ms: Optional[float] = None, adjacent_n: int = 0
    ) -> Dict[str, Any]:
        """The summary for the `profile` check and result: top operators, per-step figures, slowdown.

        `adjacent_median_ms` is the median of the steady steps just before and just after the
        window (`adjacent_n` of them): on a busy machine it is the fairer reference.
        """
        steps = len(self.step_ms)
        base: Dict[str, Any] = {
            "api": self.api,
            "steps_wanted": self.steps_wanted,
            "steps": steps,
            "global_steps": self.global_steps[:1] + self.global_steps[-1:],
            "output_dir": os.path.relpath(str(self.out_dir), str(self.ctx.dir)),
            "stopped_early": self.stopped_early,
            "error": self.error,
            "open_s": self.open_s,
            "close_s": self.close_s,
            "step_calls_s": self.step_calls_s,
            "overhead_rule": "open_s, step_calls_s and close_s are spent outside the timed steps (writing and "
            "parsing the trace happens there)",
            "profiled_median_ms": median(self.step_ms),
            "steady_median_ms": steady_median_ms,
            "slowdown": None,
            "adjacent_median_ms": adjacent_median_ms,
            "adjacent_steps": adjacent_n,
            "slowdown_adjacent": None,
            "top_ops": [],
            "note": "",
        }
        med = base["profiled_median_ms"]
        if med is not None and steady_median_ms:
            base["slowdown"] = med / steady_median_ms
        if med is not None and adjacent_median_ms:
            base["slowdown_adjacent"] = med / adjacent_median_ms
        base["slowdown_rule"] = (
            "median step_ms of the profiled steps / median of the run's steady steps "
            "(same timing rule; profiled steps are not in the steady statistics); "
            "slowdown_adjacent uses the steady steps just before and after the window"
        )
        if self.error or steps == 0:
            base["note"] = self.error or "no step was profiled"
            return base
        try:
            parsed = summarize(self.out_dir, steps, step_windows_ns=self.windows_ns, target=self.target)
        except ProfileParseError as exc:
            base["error"] = str(exc)
            base["note"] = "profiler output unreadable: %s" % exc
            return base
        base.update(parsed)
        base["steps"] = steps
        slow = "" if base["slowdown"] is None else "; %.2f× the steady median" % base["slowdown"]
        if base["slowdown_adjacent"] is not None:
            slow += " (%.2f× the %d steps around it)" % (base["slowdown_adjacent"], adjacent_n)
        base["note"] = "%s; %.1f operator launches per step%s" % (self.api, parsed["ops_per_step"], slow)
        return base
