"""A training run's time left: steady wall time per step over its measured spans, plus measured validation time."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

Mark = Tuple[float, int]  # (event time, global steps done)


def _mean(values: List[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def _steady(values: Dict[int, float]) -> List[float]:
    """The measured values of the epochs after the job's first one, or the first's alone while it is the only one.

    The first epoch pays the compile and warm-up; it counts only until a later epoch has been measured.
    """
    epochs = sorted(values)
    return [values[e] for e in (epochs[1:] if len(epochs) > 1 else epochs)]


class EpochMarks:
    """When each epoch's training began and ended, and when its validation ended (the main rank's events).

    An epoch's steady training is timed from its first step-progress (written after its first step, so the
    compile step of epoch 1 is outside) to the progress in force when its epoch event came (written as
    training ended and validation began); its validation from there to its epoch event; the pause before the
    next epoch from that event to the next epoch's first step-progress.
    """

    def __init__(self) -> None:
        self.starts: Dict[int, Mark] = {}  # epoch -> its first step-progress
        self.ends: Dict[int, Mark] = {}  # epoch -> the step-progress in force when its epoch event came
        self.validated: Dict[int, float] = {}  # epoch -> its epoch event's time
        self.latest: Optional[Tuple[float, int, int, Optional[int]]] = None  # (t, done, total, epoch)

    def progress(self, t: float, done: int, total: int, epoch: Optional[int]) -> None:
        """A main-rank step-progress event, during `epoch` (the latest step's)."""
        self.latest = (t, done, total, epoch)
        if epoch is not None and epoch not in self.validated:
            self.starts.setdefault(epoch, (t, done))

    def epoch(self, t: float, epoch: int) -> None:
        """A main-rank epoch event: the epoch's validation ended at `t`."""
        if self.latest is not None and epoch in self.starts:
            self.ends[epoch] = (self.latest[0], self.latest[1])
        self.validated[epoch] = t

    def spans(self) -> List[Tuple[float, int]]:
        """(seconds, steps) of each epoch's steady training so far, the running epoch's up to its latest progress."""
        out = []
        for epoch, (t0, d0) in self.starts.items():
            end = self.ends.get(epoch)
            if end is None and epoch not in self.validated and self.latest is not None and self.latest[3] == epoch:
                end = self.latest[:2]
            if end is not None and end[1] > d0 and end[0] >= t0:
                out.append((end[0] - t0, end[1] - d0))
        return out

    def step_s(self) -> Optional[float]:
        """Wall seconds per training step over every steady span of the run (its whole history: a smoothed rate)."""
        spans = self.spans()
        steps = sum(n for _, n in spans)
        return sum(s for s, _ in spans) / steps if steps else None

    def validation_s(self) -> Optional[float]:
        """Seconds one validation took (and its best checkpoint's save): the mean over the measured epochs."""
        measured = {e: self.validated[e] - self.ends[e][0] for e in self.ends if e in self.validated}
        return _mean(_steady(measured))

    def pause_s(self) -> Optional[float]:
        """Seconds between one epoch's validation and the next epoch's first step-progress (state saved, a step)."""
        measured = {e: self.starts[e + 1][0] - self.validated[e] for e in self.validated if e + 1 in self.starts}
        return _mean(_steady(measured))


def eta_s(marks: EpochMarks, now: float, planned_epochs: Optional[int], tail_steps: int = 0) -> Optional[float]:
    """Seconds left as of `now`: steps left (and `tail_steps` run after the last epoch) at the run's steady wall
    time per step, plus one measured validation per epoch not yet validated and one pause per epoch not yet
    begun. None until a steady span was measured."""
    rate = marks.step_s()
    if marks.latest is None or rate is None:
        return None
    t, done, total, epoch = marks.latest
    work = (max(0, total - done) + tail_steps) * rate
    anchor = max([t] + list(marks.validated.values()))
    if planned_epochs and epoch is not None:
        to_validate = max(0, planned_epochs - epoch + (0 if epoch in marks.validated else 1))
        to_begin = max(0, planned_epochs - epoch)
        work += to_validate * (marks.validation_s() or 0.0) + to_begin * (marks.pause_s() or 0.0)
    return max(0.0, anchor + work - now)
