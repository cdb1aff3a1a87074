"""The Training screen's model: the latest train job's curves, epochs, perf and checks."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional

from workbench.atomic import read_json
from workbench.views import View

HISTORY = 120  # points kept for each sparkline


class WholeRunHistory:
    """Bounded history of a whole run: when full, neighbours are averaged and each point covers twice the steps."""

    def __init__(self, max_points: int = HISTORY) -> None:
        self.max_points = max_points
        self.points: List[float] = []
        self.per_point = 1  # steps averaged into each point
        self._sum, self._n = 0.0, 0

    def append(self, value: float) -> None:
        """Add one step's value."""
        self._sum += value
        self._n += 1
        if self._n == self.per_point:
            self.points.append(self._sum / self._n)
            self._sum, self._n = 0.0, 0
            if len(self.points) >= self.max_points:
                self.points = [(a + b) / 2.0 for a, b in zip(self.points[::2], self.points[1::2])]
                self.per_point *= 2

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, index):
        return self.points[index]
RANK_WINDOW = 20  # recent steady steps per rank behind its step time and images/s


def _is_main(ev: Dict[str, Any]) -> bool:
    """Events of a single-process run, of rank 0, or job-level ones (no rank) drive the main panels."""
    return ev.get("rank") in (None, 0)


class RankSteps:
    """Recent steady step times and batch sizes of one rank."""

    def __init__(self) -> None:
        self.step_ms: Deque[float] = deque(maxlen=RANK_WINDOW)
        self.sizes: Deque[int] = deque(maxlen=RANK_WINDOW)
        self.last_ms: Optional[float] = None

    def add(self, ms: float, size: Any, steady: bool) -> None:
        """Record one step; only steady ones enter the window."""
        self.last_ms = ms
        if steady:
            self.step_ms.append(ms)
            self.sizes.append(int(size) if isinstance(size, (int, float)) else 0)

    @property
    def median_ms(self) -> Optional[float]:
        """Median of the recent steady steps, else the last step seen."""
        if not self.step_ms:
            return self.last_ms
        ordered = sorted(self.step_ms)
        return ordered[len(ordered) // 2]

    @property
    def images_per_s(self) -> Optional[float]:
        """Images over wall time of the recent steady steps."""
        total_ms = sum(self.step_ms)
        return 1000.0 * sum(self.sizes) / total_ms if total_ms > 0 and sum(self.sizes) else None


class TrainingView(View):
    """Folds `train` and `test` job events into what the Training screen draws."""

    kinds = ("train", "test")

    def __init__(self) -> None:
        super().__init__()
        self.reset(None)
        self.tests: List[Dict[str, Any]] = []

    def reset(self, jid: Optional[str]) -> None:
        """Start following a new training job."""
        self.jid = jid
        self.status = ""
        self.state = ""
        self.started: Dict[str, Any] = {}
        self.cfg: Dict[str, Any] = {}
        self.loss = WholeRunHistory()  # the whole run's trend, not just the last steps
        self.step_ms: Deque[float] = deque(maxlen=HISTORY)
        self.compile_ms: List[float] = []
        self.warmup_seen = 0
        self.profiled_seen = 0
        self.steps_seen = 0
        self.last_step: Dict[str, Any] = {}
        self.progress: Dict[str, Any] = {}
        self.epochs: List[Dict[str, Any]] = []
        self.perf: Dict[str, Any] = {}
        self.checks: Dict[str, Dict[str, Any]] = {}
        self.result: Dict[str, Any] = {}
        self.rank_step_ms: Dict[int, float] = {}  # rank -> median of its recent steady steps (ms)
        self.rank_steps: Dict[int, RankSteps] = {}
        self.rank_perf: Dict[int, Dict[str, Any]] = {}  # rank -> its latest perf event
        self.rank_ended: Dict[int, str] = {}  # rank -> finished status
        self.main_steps_seen = 0
        self.error: Optional[Dict[str, Any]] = None
        self.artifacts: List[Dict[str, Any]] = []

    def apply(self, job: Any, ev: Dict[str, Any]) -> None:
        """Fold one event of a train or test job."""
        if job.kind == "test":
            if ev.get("type") == "result":
                self.tests.append(dict(ev.get("summary") or {}, jid=job.jid))
            return
        if job.jid != self.jid:
            self.reset(job.jid)
            try:
                self.cfg = read_json(job.dir / "config.json")
            except (OSError, ValueError):
                self.cfg = {}
        kind = ev.get("type")
        main = _is_main(ev)
        if kind == "started":
            if main or not self.started:
                self.started = ev
        elif kind == "step":
            self._step(ev)
        elif kind == "progress":
            if main:
                self.progress = ev
        elif kind == "epoch":
            if main:
                self.epochs.append(ev)
        elif kind == "perf":
            if "rank" in ev:
                self.rank_perf[int(ev["rank"])] = ev
            if main:
                self.perf = ev
        elif kind == "check":
            if main:
                self.checks[str(ev.get("id"))] = ev
            elif ev.get("status") != "observed-pass":  # other ranks' checks: only what went wrong
                self.checks["%s@r%s" % (ev.get("id"), ev.get("rank"))] = dict(
                    ev, title="r%s %s" % (ev.get("rank"), ev.get("title") or ev.get("id")))
        elif kind == "result":
            if main:
                self.result = ev.get("summary") or {}
        elif kind == "artifact":
            self.artifacts.append(ev)
        elif kind == "finished":
            self._finished(ev)

    def _finished(self, ev: Dict[str, Any]) -> None:
        """A job-level end (no rank) names the root cause; a rank's error counts when none is known yet."""
        err = ev.get("error")
        if "rank" not in ev:
            self.error = err
            return
        self.rank_ended[int(ev["rank"])] = str(ev.get("status"))
        if err and self.error is None:
            self.error = err

    def _step(self, ev: Dict[str, Any]) -> None:
        self.steps_seen += 1
        ms = ev.get("step_ms")
        if "rank" in ev and isinstance(ms, (int, float)):
            rank = int(ev["rank"])
            steps = self.rank_steps.setdefault(rank, RankSteps())
            steps.add(float(ms), ev.get("batch_size"), ev.get("phase") in (None, "steady"))
            self.rank_step_ms[rank] = steps.median_ms
            if rank != 0:
                return
        self.main_steps_seen += 1
        self.last_step = ev
        loss = ev.get("loss")
        if isinstance(loss, (int, float)):
            self.loss.append(float(loss))
        phase = ev.get("phase") or self._infer_phase()
        if not isinstance(ms, (int, float)):
            return
        if phase in ("compile", "recompile"):
            self.compile_ms.append(float(ms))
        elif phase == "warmup":
            self.warmup_seen += 1
        elif phase == "profiled":
            self.profiled_seen += 1  # slowed by the profiler: not a steady step
        else:
            self.step_ms.append(float(ms))

    def _infer_phase(self) -> str:
        warmup = int(((self.cfg.get("train") or {}).get("warmup_steps")) or 0)
        if self.main_steps_seen == 1:
            return "compile"
        return "warmup" if self.main_steps_seen <= 1 + warmup else "steady"

    def job_changed(self, job: Any) -> None:
        """Track the followed job's status."""
        if job.kind == "train" and (job.jid == self.jid or self.jid is None):
            if self.jid is None:
                self.reset(job.jid)
            self.status = job.status.label()
            self.state = job.status.state
        self.version += 1

    @property
    def slowest_rank(self) -> Optional[int]:
        """The rank with the longest recent step time (None with fewer than two ranks)."""
        known = {r: ms for r, ms in self.rank_step_ms.items() if isinstance(ms, (int, float))}
        return max(known, key=known.get) if len(known) > 1 else None

    def rank_images_per_s(self) -> Dict[int, float]:
        """Each rank's throughput: its run perf event once written, else its recent steady steps."""
        out: Dict[int, float] = {}
        for rank, steps in self.rank_steps.items():
            perf = self.rank_perf.get(rank) or {}
            value = (perf.get("steady") or {}).get("images_per_s") if perf.get("scope") == "run" else None
            if not isinstance(value, (int, float)):
                value = steps.images_per_s
            if isinstance(value, (int, float)):
                out[rank] = float(value)
        return out

    def global_images_per_s(self) -> Optional[float]:
        """Data-parallel throughput: the sum over ranks of their images/s (None unless every rank has one)."""
        per_rank = self.rank_images_per_s()
        if not per_rank or len(per_rank) < len(self.rank_steps):
            return None
        return sum(per_rank.values())

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        """The best epoch so far (by the job's own is_best)."""
        best = [e for e in self.epochs if e.get("is_best")]
        return best[-1] if best else None

    @property
    def latest_val(self) -> Dict[str, Any]:
        """Validation metrics of the latest epoch."""
        return (self.epochs[-1].get("val") or {}) if self.epochs else {}

    def eta_s(self) -> Optional[float]:
        """Remaining time from steady step time and the steps left, when known."""
        done, total = self.progress.get("done"), self.progress.get("total")
        if not isinstance(done, int) or not isinstance(total, int) or not self.step_ms:
            return None
        ordered = sorted(self.step_ms)
        return (total - done) * ordered[len(ordered) // 2] / 1000.0

    def test_count(self) -> int:
        """How many test-set evaluations this session made of the followed run."""
        return sum(1 for t in self.tests if t.get("from") in (self.jid, None))
