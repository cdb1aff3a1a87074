"""The one fold of a job's events (JobRecord) and of a session's jobs (SessionModel).

Screens' models, `watch` and the session record read their facts here. A record reads each line once,
incrementally; what grows with the run (steps, logs, telemetry) is bounded. Damaged lines (torn,
merged, not JSON, or JSON with a wrongly typed field) are listed with their line number and skipped.
"""

from __future__ import annotations

from collections import Counter, deque
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Tuple

from workbench.analysis.trainstate import TrainState
from workbench.events.protocol import (
    _OPT_INT,
    _T_TYPES,
    KNOWN_TYPES,
    Evidence,
    SeqCheck,
    decode_line,
    is_main,
    step_values,
    steps_line_ok,
    type_problem,
)
from workbench.events.steps import as_step, step_rows
from workbench.fold.eta import EpochMarks
from workbench.fold.series import RANK_WINDOW, RankSteps, StepSeries, number
from workbench.fold.steptable import COLUMNS as STEP_COLUMNS  # noqa: F401  (STEP_COLUMNS: the record's name)
from workbench.fold.steptable import StepTable
from workbench.fold.thinning import ThinnedHistory
from workbench.system.atomic import read_json

LOG_LINES = 50  # recent log events of any level
NOTABLE_LOGS = 200  # warnings and errors kept
DEVICE_SAMPLES = 120  # recent telemetry samples, for the live panel
DEVICE_HISTORY = 1000  # telemetry over the whole run, thinned to every k-th sample, for the record
LOSS_SCALE_KEPT = 5000  # loss-scale changes and overflow skips kept (one event each)
DAMAGE_KEPT = 100  # damaged lines listed (all are counted)
SEQ_PROBLEMS_KEPT = 100
UNKNOWN_SAMPLES = 3  # lines kept per unknown event type
NOTABLE_LEVELS = ("warning", "warn", "error", "critical", "garbage")
_FLOAT = {float}


def load_config(job_dir: Any) -> Dict[str, Any]:
    """A job's effective config.json, {} when it is missing or unreadable."""
    if job_dir is None:
        return {}
    try:
        cfg = read_json(Path(job_dir) / "config.json")
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def _damage_kind(text: str) -> str:
    """Two events run together (a torn line completed by the next write) read as 'merged'."""
    return "merged" if text.count('{"v"') > 1 or "}{" in text else "not JSON"


class JobRecord:
    """Everything one job's events say, folded once and incrementally (`ingest` or `ingest_lines`)."""

    fast = True  # well-typed `step` lines take a shorter path with the same outcome (False: the generic one)

    def __init__(
        self,
        jid: str,
        kind: str = "",
        created: float = 0.0,
        job_dir: Any = None,
        config: Optional[Dict[str, Any]] = None,
        keep_steps: Any = False,
    ):
        self.jid, self.kind, self.created, self.dir = jid, kind, created, job_dir
        self.config: Dict[str, Any] = config if config is not None else load_config(job_dir)
        self.status: Any = None  # the job's JobStatus (from its files), set by whoever follows them
        self.version = 0  # bumped by every ingest
        self.file, self.lines, self.events = "events.jsonl", 0, 0
        self.type_counts: Counter = Counter()
        self.started: Dict[str, Any] = {}
        self.synthetic = False
        self.progress: Dict[str, Any] = {}
        self.epoch_marks = EpochMarks()  # when the main rank's epochs trained and validated (the ETA's input)
        self.checks: Dict[str, Dict[str, Any]] = {}  # main rank (or job-level) checks by id, latest wins
        self.rank_checks: Dict[str, Dict[str, Any]] = {}  # other ranks' checks by "id@rN"
        self.check_events: List[Dict[str, Any]] = []  # every check line in order (ids may repeat)
        self.check_device: Dict[str, str] = {}  # check id -> the device it was observed on
        self.epochs: List[Dict[str, Any]] = []  # main rank
        self.perf: List[Dict[str, Any]] = []  # every perf line, all ranks
        self.main_perf: Dict[str, Any] = {}  # the main rank's latest perf line
        self.rank_perf: Dict[int, Dict[str, Any]] = {}
        self.steps = StepSeries()
        self._warmup = 0  # train.warmup_steps, and the config it was read from
        self._warmup_of: Optional[Dict[str, Any]] = None
        self.steps_seen = 0  # step lines and batched steps of every rank
        self.rank_steps: Dict[int, RankSteps] = {}
        # keep_steps: True keeps every step in a StepTable; a StepTable given is filled (bounded, spooled)
        self.step_table: Optional[StepTable] = (
            keep_steps if isinstance(keep_steps, StepTable) else StepTable(max_rows=None) if keep_steps else None
        )
        self.tensor_diffs: List[Dict[str, Any]] = []
        self.artifacts: List[Dict[str, Any]] = []
        self.results: List[Dict[str, Any]] = []  # the main rank's result summaries
        self.finished: Optional[Dict[str, Any]] = None
        self.error: Optional[Dict[str, Any]] = None  # the root cause: job-level first, else a rank's
        self.rank_ended: Dict[int, str] = {}
        self.logs: Deque[Dict[str, Any]] = deque(maxlen=LOG_LINES)
        self.notable_logs: Deque[Dict[str, Any]] = deque(maxlen=NOTABLE_LOGS)
        self.device_samples: Deque[Dict[str, Any]] = deque(maxlen=DEVICE_SAMPLES)
        self.device_history = ThinnedHistory(DEVICE_HISTORY)
        self.train_state = TrainState()  # the main rank's `monitor` samples, folded with their flags
        self.loss_scale: List[Dict[str, Any]] = []  # the main rank's `loss_scale` events (changes and skips)
        self.unknown: List[Dict[str, Any]] = []
        self.damaged: List[Dict[str, Any]] = []  # {file, line, what, problem}: what = merged, not JSON, wrong type
        self.damaged_count = 0
        self.seq = SeqCheck()
        self.seq_problems: List[str] = []
        self.torn_tail_bytes = 0
        self.last_t: Optional[float] = None  # time of the latest event

    # -- reading -------------------------------------------------------------------------------
    def begin_file(self, name: str) -> None:
        """Start another events file of the job (line numbers and seq restart)."""
        self.file, self.lines, self.seq = name, 0, SeqCheck()

    def ingest(self, events: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Fold decoded events (one per line); return those that were folded (damaged ones are left out)."""
        kept = []
        for ev in events:
            self.lines += 1
            if self._fold(ev, self.lines):
                kept.append(ev)
        self.version += 1
        return kept

    def ingest_lines(
        self,
        lines: Iterable[bytes],
        transform: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None,
        keep: bool = True,
    ) -> List[Dict[str, Any]]:
        """Fold complete raw lines (without newline); return the events folded, `transform`ed first.

        keep=False returns [] and holds no event beyond the fold's bounded state (a whole file streamed;
        workbench.fold.stream does that faster, a block at a time).
        """
        kept = []
        for raw in lines:
            self.lines += 1
            if not raw.strip():
                continue
            ev = decode_line(raw)
            if transform is not None:
                ev = transform(ev)
            if self._fold(ev, self.lines) and keep:
                kept.append(ev)
        self.version += 1
        return kept

    def note_torn_tail(self, nbytes: int) -> None:
        """The file ends in `nbytes` of a line without its newline (torn, or still being written)."""
        self.torn_tail_bytes += nbytes
        if nbytes:
            self._damage(self.lines + 1, "torn", "%d bytes without a newline at the end" % nbytes)

    def _damage(self, line: int, what: str, problem: str) -> None:
        self.damaged_count += 1
        if len(self.damaged) < DAMAGE_KEPT:
            self.damaged.append({"file": self.file, "line": line, "what": what, "problem": problem[:200]})

    def _seq_problem(self, text: str) -> None:
        if len(self.seq_problems) < SEQ_PROBLEMS_KEPT:
            self.seq_problems.append("%s %s" % (self.file, text))

    def _fold(self, ev: Dict[str, Any], line: int, text: Optional[str] = None, start: int = 0, end: int = 0) -> bool:
        """Fold one event of line `line`; text[start:end], when given, is that line as written (one JSON object)."""
        kind = ev.get("type")
        values = step_values(ev) if kind == "step" and self.fast and "raw" not in ev else None
        if values is not None:  # the commonest line, checked in one pass: the generic path's outcome, sooner
            seq, t, rank, epoch, number_, loss, ms, size, phase = values
            jump = self.seq.see_seq(rank, seq)
            if jump is not None:
                self._seq_problem("line %d: %s" % (line, jump))
            self.events += 1
            if t is not None:
                self.last_t = t
            self.type_counts["step"] += 1
            if "synthetic" in ev and ev["synthetic"] is True:
                self.synthetic = True
            if self._step_values(rank, epoch, number_, loss, ms, size, phase):
                self.steps.last = ev
            return True
        if kind == "steps" and self.fast and "raw" not in ev and self._float_steps(ev, line, text, start, end):
            return True
        if ev.get("raw"):  # not JSON, or JSON that is no event: shown as a garbage log line
            message = str(ev.get("message"))
            self._damage(line, _damage_kind(message), "not a JSON event: %r" % message[:80])
            self._seq_problem("line %d: not a JSON event" % line)
            self.type_counts["log"] += 1
            self._log(ev)
            self.events += 1
            return True
        wrong = None if kind == "steps" and steps_line_ok(ev) else type_problem(ev)
        if wrong is not None:
            self._damage(line, "wrong type", wrong)
            if type(ev.get("seq")) is int and type(ev.get("rank", 0)) is int:
                self.seq.see(ev)  # its number was written: it is damaged, not missing
            return False
        jump = self.seq.see(ev)
        if jump is not None:
            self._seq_problem("line %d: %s" % (line, jump))
        self.events += 1
        if type(ev.get("t")) in (int, float):
            self.last_t = ev["t"]
        self.type_counts[kind] += 1
        if ev.get("synthetic") is True:
            self.synthetic = True
        handler = _HANDLERS.get(kind)  # type: ignore[arg-type]  # a str (type_problem checked it), or None: no handler
        if handler is not None:
            handler(self, ev)
        elif kind not in KNOWN_TYPES and sum(1 for u in self.unknown if u.get("type") == kind) < UNKNOWN_SAMPLES:
            self.unknown.append(ev)
        return True

    # -- one handler per event type ---------------------------------------------------------------
    def _started(self, ev: Dict[str, Any]) -> None:
        if is_main(ev) or not self.started:
            self.started = ev

    def _log(self, ev: Dict[str, Any]) -> None:
        self.logs.append(ev)
        if str(ev.get("level", "")).lower() in NOTABLE_LEVELS:
            self.notable_logs.append(ev)

    def _check(self, ev: Dict[str, Any]) -> None:
        self.check_events.append(ev)
        cid = str(ev.get("id"))
        if is_main(ev):
            self.checks[cid] = ev
            self.check_device[cid] = str(self.device.get("resolved") or "?")
        elif ev.get("status") != Evidence.PASS:  # other ranks' checks: only what went wrong
            self.rank_checks["%s@r%s" % (cid, ev.get("rank"))] = ev

    def _progress(self, ev: Dict[str, Any]) -> None:
        if is_main(ev):
            self.progress = ev
            t, done, total = number(ev.get("t")), ev.get("done"), ev.get("total")
            if ev.get("unit") == "step" and t is not None and type(done) is int and type(total) is int:
                epoch = self.steps.last.get("epoch")
                self.epoch_marks.progress(t, done, total, epoch if type(epoch) is int else None)

    def _step(self, ev: Dict[str, Any]) -> None:
        if ev.get("type") != "steps":
            self._one_step(ev)
            return
        if self._bulk_steps(ev):
            return
        # a batched line, step by step without a dict per step; the last one becomes the latest step
        epoch, rank, values, row = ev.get("epoch"), ev.get("rank"), self._step_values, None
        for row in step_rows(ev):
            values(rank, epoch, *row[1:])
        if row is not None and is_main(ev):
            self.steps.last = as_step(ev, *row)

    def _float_steps(
        self, ev: Dict[str, Any], line: int, text: Optional[str] = None, start: int = 0, end: int = 0
    ) -> bool:
        """A batched line as the train job writes it, checked and folded in one go: the main rank's (no rank
        or rank 0), every loss and step time a float, one int batch size, one named phase, a well-typed
        envelope. The outcome of the generic path (steps_line_ok, then _bulk_steps); False for any other line."""
        g = ev.get
        losses, times, size, phase, seq, t = g("loss"), g("step_ms"), g("batch_size"), g("phase"), g("seq"), g("t")
        if not (
            type(seq) is int
            and type(t) in _T_TYPES
            and type(size) is int
            and type(phase) is str
            and phase  # an empty phase is inferred step by step
            and type(g("epoch")) is int
            and type(g("first_step")) is int
            and type(g("global_step")) in _OPT_INT
            and type(losses) is list
            and type(times) is list
            and losses
            and len(losses) == len(times)
            and ("rank" not in ev or (type(ev["rank"]) is int and ev["rank"] == 0))
            and ("synthetic" not in ev or type(ev["synthetic"]) is bool)
            and set(map(type, losses)) == _FLOAT
            and set(map(type, times)) == _FLOAT
        ):
            return False
        rank = g("rank")
        jump = self.seq.see_seq(rank, seq)
        if jump is not None:
            self._seq_problem("line %d: %s" % (line, jump))
        self.events += 1
        if t is not None:
            self.last_t = t
        self.type_counts["steps"] += 1
        if g("synthetic") is True:
            self.synthetic = True
        # the line as written: the CSV's cells are its numbers' text
        self._fold_floats(ev, rank, losses, times, size, phase, (text, start, end) if text is not None else None)
        return True

    def _bulk_steps(self, ev: Dict[str, Any]) -> bool:
        """The commonest batched line at once: the main rank's, every loss and step time a float, one batch
        size and one named phase for all (what the train job writes). The outcome of folding its steps in
        turn (property test); False for any other line, which is then folded step by step."""
        g = ev.get
        losses, times, size, phase, rank = g("loss"), g("step_ms"), g("batch_size"), g("phase"), g("rank")
        if (
            rank not in (None, 0)
            or type(losses) is not list
            or type(times) is not list
            or type(phase) is not str
            or not phase  # an empty phase is inferred step by step
            or isinstance(size, list)
            or len(losses) != len(times)
            or not losses
            or type(ev.get("first_step")) is not int
            or set(map(type, losses)) != _FLOAT
            or set(map(type, times)) != _FLOAT
        ):
            return False
        self._fold_floats(ev, rank, losses, times, size, phase)
        return True

    def _fold_floats(
        self,
        ev: Dict[str, Any],
        rank: Any,
        losses: List[float],
        times: List[float],
        size: Any,
        phase: str,
        span: Optional[Tuple[str, int, int]] = None,
    ) -> None:
        """Fold a main-rank batched line's steps at once (their losses and times all floats, one size and phase)."""
        n = len(losses)
        self.steps_seen += n
        if self.step_table is not None:
            self.step_table.add_floats(rank, ev.get("epoch"), ev["first_step"], losses, times, size, phase, span)
        if rank is not None:
            steps = self.rank_steps.get(rank)
            if steps is None:
                steps = self.rank_steps[rank] = RankSteps()
            steady = phase == "steady"
            for ms in times[-RANK_WINDOW:] if steady else times[-1:]:
                steps.add(ms, size, steady)
        self.steps.add_floats(losses, times, phase)
        self.steps.last = as_step(ev, n - 1, ev["first_step"] + n - 1, losses[-1], times[-1], size, phase)

    def _one_step(self, step: Dict[str, Any]) -> None:
        g = step.get
        if self._step_values(g("rank"), g("epoch"), g("step"), g("loss"), g("step_ms"), g("batch_size"), g("phase")):
            self.steps.last = step

    def _step_values(self, rank: Any, epoch: Any, number_: Any, loss: Any, ms: Any, size: Any, phase: Any) -> bool:
        """Fold one step given by its values; True when it is the main rank's."""
        self.steps_seen += 1
        if self.step_table is not None:
            self.step_table.add_row(rank, epoch, number_, loss, ms, size, phase)
        if rank is not None and type(ms) in (float, int):
            steps = self.rank_steps.get(rank)
            if steps is None:
                steps = self.rank_steps[rank] = RankSteps()
            steps.add(float(ms), size, phase in (None, "steady"))
        if rank not in (None, 0):  # is_main
            return False
        self.steps.add_values(loss, ms, phase or self._infer_phase())
        return True

    def _infer_phase(self) -> str:
        """Steps written before phases were: the first compiles, then train.warmup_steps warm up."""
        seen = self.steps.count + 1
        if seen == 1:
            return "compile"
        if self._warmup_of is not self.config:  # looked up once per config (a run's config does not change)
            warmup = (self.config.get("train") or {}).get("warmup_steps") if isinstance(self.config, dict) else None
            self._warmup, self._warmup_of = (warmup if type(warmup) is int else 0), self.config
        return "warmup" if seen <= 1 + self._warmup else "steady"

    def _epoch(self, ev: Dict[str, Any]) -> None:
        if is_main(ev):
            self.epochs.append(ev)
            t = number(ev.get("t"))
            if t is not None and type(ev.get("epoch")) is int:
                self.epoch_marks.epoch(t, ev["epoch"])

    def _perf(self, ev: Dict[str, Any]) -> None:
        self.perf.append(ev)
        if "rank" in ev:
            self.rank_perf[ev["rank"]] = ev
        if is_main(ev):
            self.main_perf = ev

    def _tensor_diff(self, ev: Dict[str, Any]) -> None:
        self.tensor_diffs.append(ev)

    def _artifact(self, ev: Dict[str, Any]) -> None:
        self.artifacts.append(ev)

    def _result(self, ev: Dict[str, Any]) -> None:
        if is_main(ev):
            self.results.append(ev.get("summary") or {})

    def _finished(self, ev: Dict[str, Any]) -> None:
        """A job-level end (no rank) names the root cause; a rank's error counts when none is known yet."""
        if "rank" not in ev:
            self.finished, self.error = ev, ev.get("error")
            return
        self.rank_ended[ev["rank"]] = str(ev.get("status"))
        if ev["rank"] == 0 and (self.finished is None or "rank" in self.finished):
            self.finished = ev
        if ev.get("error") and self.error is None:
            self.error = ev.get("error")

    def _monitor(self, ev: Dict[str, Any]) -> None:
        if is_main(ev):
            self.train_state.add_event(ev)

    def _loss_scale(self, ev: Dict[str, Any]) -> None:
        if is_main(ev) and len(self.loss_scale) < LOSS_SCALE_KEPT:
            self.loss_scale.append(ev)

    def _device(self, ev: Dict[str, Any]) -> None:
        self.device_samples.append(ev)
        self.device_history.append(ev)

    # -- facts ------------------------------------------------------------------------------------
    @property
    def device(self) -> Dict[str, Any]:
        """The device resolution the job reported: {requested, resolved, id, why}."""
        return self.started.get("device") or {}

    @property
    def result(self) -> Dict[str, Any]:
        """The main rank's latest result summary ({} before it)."""
        return self.results[-1] if self.results else {}

    @property
    def best_epoch(self) -> Optional[Dict[str, Any]]:
        """The epoch the job marked best (the last so marked), else the one with the highest accuracy."""
        for ev in reversed(self.epochs):
            if ev.get("is_best"):
                return ev
        scored = [e for e in self.epochs if number((e.get("val") or {}).get("accuracy")) is not None]
        return max(scored, key=lambda e: e["val"]["accuracy"]) if scored else None

    @property
    def ranks(self) -> List[int]:
        """Ranks that wrote steps, sorted (empty for a single-process run)."""
        return sorted(self.rank_steps)

    def check_facts(self) -> List[Dict[str, Any]]:
        """Main-rank checks by id with their evidence level and the device they were observed on."""
        return [
            {
                "id": cid,
                "title": ev.get("title"),
                "status": ev.get("status"),
                "detail": ev.get("detail") or "",
                "hint": ev.get("hint"),
                "evidence": ev.get("evidence") or {},
                "device": self.check_device.get(cid),
            }
            for cid, ev in self.checks.items()
        ]

    @property
    def missing_seq(self) -> List[Dict[str, Any]]:
        """Seq ranges never seen, per rank: [{rank, first, last}]."""
        return list(self.seq.missing)

    @property
    def state(self) -> str:
        """running, ok, failed, crashed … from the job's files ('' when not known)."""
        return getattr(self.status, "state", "") or ""

    @property
    def label(self) -> str:
        """The status for people ('crashed: SIGSEGV after 41 s'), '' when not known."""
        return self.status.label() if self.status is not None else ""


_HANDLERS = {
    "started": JobRecord._started,
    "log": JobRecord._log,
    "check": JobRecord._check,
    "progress": JobRecord._progress,
    "step": JobRecord._step,
    "steps": JobRecord._step,
    "epoch": JobRecord._epoch,
    "perf": JobRecord._perf,
    "tensor_diff": JobRecord._tensor_diff,
    "artifact": JobRecord._artifact,
    "result": JobRecord._result,
    "finished": JobRecord._finished,
    "device": JobRecord._device,
    "monitor": JobRecord._monitor,
    "loss_scale": JobRecord._loss_scale,
}


def newest_key(record: JobRecord) -> tuple:
    """THE order of jobs of a kind: by creation time, then id; the last is the newest."""
    return (record.created or 0.0, record.jid)


class SessionModel:
    """The session's jobs, each folded once into a JobRecord; one rule says which job of a kind is the newest."""

    def __init__(self) -> None:
        self.records: Dict[str, JobRecord] = {}

    def record_for(self, job: Any) -> JobRecord:
        """The record of a job (anything with jid, kind, spec and dir), made on first sight."""
        rec = self.records.get(job.jid)
        if rec is None:
            spec = getattr(job, "spec", None) or {}
            created: Any = spec.get("created") if isinstance(spec, dict) else None
            rec = JobRecord(
                job.jid,
                getattr(job, "kind", "") or "",
                float(created) if type(created) in (int, float) else 0.0,
                getattr(job, "dir", None),
            )
            self.records[job.jid] = rec
        return rec

    def add(self, record: JobRecord) -> JobRecord:
        """Hold an already folded record."""
        self.records[record.jid] = record
        return record

    def ingest(self, job: Any, events: Iterable[Dict[str, Any]]) -> JobRecord:
        """Fold a batch of one job's events; return its record."""
        rec = self.record_for(job)
        rec.ingest(events)
        return rec

    def of_kind(self, *kinds: str) -> List[JobRecord]:
        """Records of these kinds (all when none given), oldest first."""
        return sorted((r for r in self.records.values() if not kinds or r.kind in kinds), key=newest_key)

    def newest(self, *kinds: str, started: bool = False) -> Optional[JobRecord]:
        """The newest job of these kinds; with started=True the newest that wrote its `started` line."""
        found = [r for r in self.of_kind(*kinds) if r.started or not started]
        return found[-1] if found else None

    def test_evaluations(self, of_jid: Optional[str] = None) -> List[Dict[str, Any]]:
        """Test-set results of the session (each with its jid), of one training run when `of_jid` is given."""
        out = []
        for rec in self.of_kind("test"):
            for summary in rec.results:
                if of_jid is None or summary.get("from") in (of_jid, None):
                    out.append(dict(summary, jid=rec.jid))
        return out
