"""How the `train` job times its steps and sends its in-loop events: the step log and the event pipe.

Timing rules (course section 5): the first step of the process is the compile step; the next
`train.warmup_steps` are warm-up; in graph mode the first step of any new batch shape (the tail
batch) is a recompile; profiled steps are marked as such. None of these enter the steady
statistics.
"""

from __future__ import annotations

import gc
import resource
import time
from typing import Any, Dict, List, Optional, Set

from workbench.analysis.metrics import step_stats
from workbench.jobkit.context import JobContext

SYNC_RULE = "loss.asnumpy() every step"
STEP_TIME_RULE = "step_ms = wall time from taking the batch to loss.asnumpy() returning"
PROGRESS_EVERY_S = 0.5


def peak_host_rss_mb() -> float:
    """Peak resident set size of this process in MB (Linux reports ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's sight (gc.freeze).

    Importing MindSpore and compiling a network leaves about 170 000 tracked objects that the
    collections triggered in the training loop kept walking: in one 3-epoch MLP run the young-
    generation collections took 0.32 s in all without this and 0.17 s with it (a single
    measurement on a shared machine). New garbage is still collected.
    """
    gc.freeze()


class EventPipe:
    """Batches the in-loop events (steps, progress) and writes them about every 0.1 s, in order.

    Encoding and writing a line costs about 0.1 ms next to a 2-3 ms step on a small board; a
    helper thread fought the step for the GIL, so the loop only appends to a list and the lines
    go out together in one write. Consecutive steps of one epoch between two other events go out
    as one batched `steps` line (per-step values in lists, workbench.events.protocol): about 25 bytes a
    step instead of about 190 for a `step` line each. Each event keeps the time it happened (`t`;
    a `steps` line: its last step's). Call drain() before emitting anything else, so seq stays in order.
    """

    FLUSH_EVERY_S = 0.1

    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.items: List[Any] = []
        self.flushed_at = time.monotonic()
        # the `steps` line still open at the end of items, and the (epoch, step) that continues it: a step looks
        # here instead of inspecting the last item (this runs right after every step, where Python is slow)
        self.open_steps: Optional[Dict[str, Any]] = None
        self.next_step: Any = None

    def put(self, type_: str, **fields: Any) -> None:
        """Queue one event; write the batch when it is old enough."""
        fields["t"] = round(time.time(), 6)
        self.items.append((type_, fields))
        self.open_steps = None  # a step after this event starts a new line
        self._maybe_drain()

    def step(
        self, epoch: int, step: int, global_step: int, loss: float, step_ms: float, batch_size: int, phase: str
    ) -> None:
        """Queue one step: it joins the open `steps` line when it follows that line's last step."""
        fields = self.open_steps
        if fields is None or self.next_step != (epoch, step):
            fields = {
                "epoch": epoch,
                "first_step": step,
                "global_step": global_step,
                "loss": [],
                "step_ms": [],
                "batch_size": [],
                "phase": [],
            }
            self.items.append(("steps", fields))
            self.open_steps = fields
        self.next_step = (epoch, step + 1)
        fields["loss"].append(loss)  # non-finite values are encoded as "nan", "inf"
        fields["step_ms"].append(step_ms)
        fields["batch_size"].append(batch_size)
        fields["phase"].append(phase)
        fields["t"] = time.time()  # rounded when written
        self._maybe_drain()

    def _maybe_drain(self) -> None:
        now = time.monotonic()
        if now - self.flushed_at >= self.FLUSH_EVERY_S:
            self.drain()
            self.flushed_at = now

    def drain(self) -> None:
        """Write every queued event now."""
        items, self.items = self.items, []
        self.open_steps = None
        for type_, fields in items:
            if type_ == "steps":
                fields["t"] = round(fields["t"], 6)
                for key in ("batch_size", "phase"):  # one value stands for all when they agree
                    if len(set(fields[key])) == 1:
                        fields[key] = fields[key][0]
        self.ctx.events.emit_many(items)

    def close(self) -> None:
        """Write what is queued."""
        self.drain()


class StepLog:
    """Per-step wall times, batch sizes and phases of this process, for the perf events."""

    def __init__(self, warmup_steps: int, graph_mode: bool):
        self.warmup_steps = warmup_steps
        self.graph_mode = graph_mode
        self.step_ms: List[float] = []
        self.sizes: List[int] = []
        self.epochs: List[int] = []
        self.global_steps: List[int] = []
        self.recompile: Set[int] = set()
        self.profiled: Set[int] = set()
        self.shapes_seen: Set[int] = set()

    @property
    def past_warmup(self) -> bool:
        """True once the compile step and the warm-up steps are done."""
        return len(self.step_ms) > self.warmup_steps

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
        # The feed may hand numpy integers: the log keeps plain Python numbers for the events.
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
        steady = [
            i
            for i in range(1 + self.warmup_steps, len(self.step_ms))
            if i not in self.profiled and i not in self.recompile
        ]
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
        out["recompile"] = [
            {"global_step": self.global_steps[i], "batch_size": self.sizes[i], "s": self.step_ms[i] / 1000.0}
            for i in sorted(self.recompile)
            if epoch is None or self.epochs[i] == epoch
        ]
        return out
