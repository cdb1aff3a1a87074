"""The Training screen's model: the newest train job's curves, epochs, perf and checks, and the test evaluations."""

from __future__ import annotations

from typing import Any, Deque, Dict, List, Optional

from workbench.analysis.metrics import weakest_class
from workbench.analysis.trainstate import TrainState
from workbench.fold.eta import eta_s
from workbench.fold.record import JobRecord
from workbench.fold.series import HISTORY, RankSteps, WholeRunHistory  # noqa: F401  (the screen's history types)
from workbench.views.base import LatestJobView
from workbench.views.chart import WindowStats, YRange, steady_range, window_stats


def tail_steps(cfg: Dict[str, Any]) -> int:
    """Steps a run times after its last epoch (perf.repeats x perf.repeat_steps; single-process runs only)."""
    perf = cfg.get("perf") or {}
    repeats, steps = perf.get("repeats"), perf.get("repeat_steps")
    workers = ((cfg.get("train") or {}).get("parallel") or {}).get("workers", 1)
    if type(repeats) is not int or type(steps) is not int or repeats <= 1 or workers != 1:
        return 0
    return repeats * steps


def form_layers_every(cfg: Dict[str, Any], target: Any) -> int:
    """The run form's `layers every` on `target`: train.monitor.every if set, else ui.monitor_every on CPU, else 0."""
    asked = cfg["train"]["monitor"]["every"]
    if asked:
        return int(asked)
    return int(cfg["ui"]["monitor_every"]) if target == "CPU" else 0


def record_eta(record: JobRecord) -> Optional[float]:
    """A train job's seconds left as of its latest event, from its config's epochs and timing repeats."""
    cfg = record.config if isinstance(record.config, dict) else {}
    epochs = (cfg.get("train") or {}).get("epochs")
    if record.last_t is None:
        return None
    return eta_s(record.epoch_marks, record.last_t, epochs if type(epochs) is int else None, tail_steps(cfg))


class TrainingView(LatestJobView):
    """Reads the newest `train` job's record (and the session's `test` jobs) for the Training screen."""

    kinds = ("train", "test")
    follows = ("train",)  # test jobs only add evaluations

    @property
    def tests(self) -> List[Dict[str, Any]]:
        """Every test-set result of the session, with its jid."""
        return self.model.test_evaluations()

    @property
    def device_samples(self) -> Deque[Dict[str, Any]]:
        """The live `device` events (npu-smi samples of the job's chip), bounded, oldest first."""
        return self.record.device_samples

    @property
    def device_target(self) -> Optional[str]:
        """What the followed job runs on (None before a train job started)."""
        device = self.started.get("device") if isinstance(self.started, dict) else None
        return (device.get("target") or device.get("resolved")) if isinstance(device, dict) else None

    @property
    def cfg(self) -> Dict[str, Any]:
        """The followed run's effective config."""
        return self.record.config

    @property
    def loss(self) -> WholeRunHistory:
        """The main rank's loss over the whole run, bounded."""
        return self.record.steps.loss

    @property
    def step_ms(self) -> Deque[float]:
        """Recent steady step times (ms)."""
        return self.record.steps.step_ms

    def step_window(self) -> WindowStats:
        """The last STEP_WINDOW steady step times' figures: the step chart's caption and the perf pane's live row."""
        return window_stats(list(self.record.steps.step_ms))

    def loss_range(self) -> Optional[YRange]:
        """The loss chart's y-range, from its points after the compile and warm-up steps (None: no points)."""
        steps = self.record.steps
        unsteady = steps.steady_from if steps.steady_from is not None else steps.count
        return steady_range(steps.loss.points, unsteady, steps.loss.per_point)

    @property
    def compile_ms(self) -> List[float]:
        """Compile and recompile step times (ms)."""
        return self.record.steps.compile_ms

    @property
    def warmup_seen(self) -> int:
        """Warm-up steps seen."""
        return self.record.steps.warmup_seen

    @property
    def profiled_seen(self) -> int:
        """Steps slowed by the profiler."""
        return self.record.steps.profiled_seen

    @property
    def steps_seen(self) -> int:
        """Steps of every rank seen."""
        return self.record.steps_seen

    @property
    def main_steps_seen(self) -> int:
        """Steps of the main rank seen."""
        return self.record.steps.count

    @property
    def last_step(self) -> Dict[str, Any]:
        """The main rank's latest step."""
        return self.record.steps.last

    @property
    def epochs(self) -> List[Dict[str, Any]]:
        """The main rank's epochs."""
        return self.record.epochs

    @property
    def perf(self) -> Dict[str, Any]:
        """The main rank's latest perf event."""
        return self.record.main_perf

    @property
    def checks(self) -> Dict[str, Dict[str, Any]]:
        """The main rank's checks, then what went wrong on other ranks (titled 'rN …')."""
        rec = self.record
        if not rec.rank_checks:
            return rec.checks
        out = dict(rec.checks)
        for key, ev in rec.rank_checks.items():
            out[key] = dict(ev, title="r%s %s" % (ev.get("rank"), ev.get("title") or ev.get("id")))
        return out

    @property
    def artifacts(self) -> List[Dict[str, Any]]:
        """Artefact events in order."""
        return self.record.artifacts

    @property
    def rank_steps(self) -> Dict[int, RankSteps]:
        """Each rank's recent steady steps."""
        return self.record.rank_steps

    @property
    def rank_step_ms(self) -> Dict[int, Optional[float]]:
        """Rank -> median of its recent steady steps (ms)."""
        return {rank: steps.median_ms for rank, steps in self.record.rank_steps.items()}

    @property
    def rank_perf(self) -> Dict[int, Dict[str, Any]]:
        """Rank -> its latest perf event."""
        return self.record.rank_perf

    @property
    def rank_ended(self) -> Dict[int, str]:
        """Rank -> its finished status."""
        return self.record.rank_ended

    @property
    def slowest_rank(self) -> Optional[int]:
        """The rank with the longest recent step time (None with fewer than two ranks)."""
        known = {r: ms for r, ms in self.rank_step_ms.items() if isinstance(ms, (int, float))}
        return max(known, key=lambda rank: known[rank]) if len(known) > 1 else None

    def rank_images_per_s(self) -> Dict[int, float]:
        """Each rank's throughput: its run perf event once written, else its recent steady steps."""
        out: Dict[int, float] = {}
        for rank, steps in self.rank_steps.items():
            perf = self.rank_perf.get(rank) or {}
            value = (perf.get("steady") or {}).get("images_per_s") if perf.get("scope") == "run" else None
            if type(value) not in (int, float):
                value = steps.images_per_s
            if type(value) in (int, float):
                out[rank] = float(value)  # type: ignore[arg-type]  # the type() test excludes None; mypy does not narrow on it
        return out

    def global_images_per_s(self) -> Optional[float]:
        """Data-parallel throughput: the sum over ranks of their images/s (None unless every rank has one)."""
        per_rank = self.rank_images_per_s()
        if not per_rank or len(per_rank) < len(self.rank_steps):
            return None
        return sum(per_rank.values())

    @property
    def train_state(self) -> TrainState:
        """The training-state monitor's samples and flags (empty when the run is not monitored)."""
        return self.record.train_state

    @property
    def loss_scale(self) -> List[Dict[str, Any]]:
        """The run's loss-scale changes and overflow skips ([] without a loss scale)."""
        return self.record.loss_scale

    @property
    def monitor_every(self) -> int:
        """train.monitor.every of the followed run (0: not monitored)."""
        every = ((self.cfg.get("train") or {}).get("monitor") or {}).get("every")
        return every if type(every) is int else 0

    @property
    def overflow_origin(self) -> Optional[Dict[str, Any]]:
        """The run's overflow-origin check (where a non-finite value first appeared), None when it has none."""
        return self.record.checks.get("overflow-origin")

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        """The best epoch so far (the record's one rule)."""
        return self.record.best_epoch

    @property
    def latest_val(self) -> Dict[str, Any]:
        """Validation metrics of the latest epoch."""
        return (self.epochs[-1].get("val") or {}) if self.epochs else {}

    def weakest_class(self) -> Optional[int]:
        """The latest epoch's class with the lowest F1 (None when there is none, or every class ties)."""
        rows = self.latest_val.get("per_class") or []
        f1 = [r.get("f1") for r in rows]
        if not rows or any(type(x) not in (int, float) for x in f1) or min(f1) == max(f1):
            return None
        return weakest_class(self.latest_val)

    def planned_epochs(self) -> Optional[int]:
        """The run's epoch count, from its config (None when it has none)."""
        epochs = (self.cfg.get("train") or {}).get("epochs")
        return epochs if type(epochs) is int else None

    def eta_s(self) -> Optional[float]:
        """Seconds left as of the latest event: steady wall time per step, measured validation (workbench.fold.eta)."""
        return record_eta(self.record)

    def test_count(self) -> int:
        """How many test-set evaluations this session made of the followed run."""
        return sum(1 for t in self.tests if t.get("from") in (self.jid, None))


__all__ = ["TrainingView", "WholeRunHistory", "RankSteps", "JobRecord", "HISTORY"]
