"""The Training screen's model: the latest train job's curves, epochs, perf and checks."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional

from workbench.atomic import read_json
from workbench.views import View

HISTORY = 120  # points kept for each sparkline


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
        self.loss: Deque[float] = deque(maxlen=HISTORY)
        self.step_ms: Deque[float] = deque(maxlen=HISTORY)
        self.compile_ms: List[float] = []
        self.warmup_seen = 0
        self.steps_seen = 0
        self.last_step: Dict[str, Any] = {}
        self.progress: Dict[str, Any] = {}
        self.epochs: List[Dict[str, Any]] = []
        self.perf: Dict[str, Any] = {}
        self.checks: Dict[str, Dict[str, Any]] = {}
        self.result: Dict[str, Any] = {}
        self.rank_step_ms: Dict[int, float] = {}
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
        if kind == "started":
            self.started = ev
        elif kind == "step":
            self._step(ev)
        elif kind == "progress":
            self.progress = ev
        elif kind == "epoch":
            self.epochs.append(ev)
        elif kind == "perf":
            self.perf = ev
        elif kind == "check":
            self.checks[str(ev.get("id"))] = ev
        elif kind == "result":
            self.result = ev.get("summary") or {}
        elif kind == "artifact":
            self.artifacts.append(ev)
        elif kind == "finished":
            self.error = ev.get("error")

    def _step(self, ev: Dict[str, Any]) -> None:
        self.steps_seen += 1
        self.last_step = ev
        if "rank" in ev and isinstance(ev.get("step_ms"), (int, float)):
            self.rank_step_ms[int(ev["rank"])] = float(ev["step_ms"])
            if ev["rank"] != 0:
                return
        loss = ev.get("loss")
        if isinstance(loss, (int, float)):
            self.loss.append(float(loss))
        phase = ev.get("phase") or self._infer_phase()
        ms = ev.get("step_ms")
        if not isinstance(ms, (int, float)):
            return
        if phase in ("compile", "recompile"):
            self.compile_ms.append(float(ms))
        elif phase == "warmup":
            self.warmup_seen += 1
        else:
            self.step_ms.append(float(ms))

    def _infer_phase(self) -> str:
        warmup = int(((self.cfg.get("train") or {}).get("warmup_steps")) or 0)
        if self.steps_seen == 1:
            return "compile"
        return "warmup" if self.steps_seen <= 1 + warmup else "steady"

    def job_changed(self, job: Any) -> None:
        """Track the followed job's status."""
        if job.kind == "train" and (job.jid == self.jid or self.jid is None):
            if self.jid is None:
                self.reset(job.jid)
            self.status = job.status.label()
            self.state = job.status.state
        self.version += 1

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
