"""The v1 event protocol: typed events, one encoder, a tolerant reader and a validator.

Every line is `{"v": 1, "seq": n, "t": unix_s, "type": ...}` plus the fields of its type (FIELD_TYPES,
the one table: each field's JSON type, and which ones a line must have). Two line shapes carry steps:
`step` (one step per line) and `steps` (a batch of consecutive steps of one epoch in one line:
`{"epoch", "first_step", "loss": [...], "step_ms": [...], "batch_size": n or [...], "phase": str or
[...]}`, step i of the batch being `first_step + i`). Readers and folds understand both. `device`
lines are NPU telemetry samples (AI Core %, memory, temperature, power, health), every field optional.
A line whose JSON is valid but whose field has the wrong type is damaged: `type_problems` names it and
the fold (workbench.fold.record) skips it like a torn line.
"""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional

from workbench.events.fieldtypes import (
    BOOL,
    DICT,
    INT,
    LIST,
    NUM,
    STR,
    FieldType,
    fields_problem,
    list_of,
    need,
    obj,
    one_of,
    opt,
)
from workbench.events.files import VERSION, EventReader, EventWriter, decode_line, encode, read_all, tail_events  # noqa: F401


class Evidence:
    """The four evidence levels every check and verdict carries; use these names, never string literals."""

    PASS = "observed-pass"
    FAIL = "observed-fail"
    BLOCKED = "blocked"
    NOT_RUN = "not-run"
    ALL = (PASS, FAIL, BLOCKED, NOT_RUN)


STATUSES = Evidence.ALL
FINISHED_STATUSES = ("ok", "failed", "cancelled")

LEVEL = one_of(*Evidence.ALL)
SHAPE = list_of(INT)
PER_CLASS = list_of(obj(precision=opt(NUM), recall=opt(NUM), f1=opt(NUM), support=opt(INT)))
NUMS = list_of(opt(NUM))
# The one table of the fields of each event type: the JSON type of each field a reader uses (fields not
# named here are free), `need` marking those every line of the type must have.
ENVELOPE: Dict[str, FieldType] = {
    "seq": INT,
    "t": opt(INT | FieldType("a number", (float,))),
    "type": STR,
    "rank": INT,
    "synthetic": BOOL,
}
FIELD_TYPES: Dict[str, Dict[str, FieldType]] = {
    "started": {
        "kind": need(STR),
        "pid": need(INT),
        "python": need(STR),
        "argv": need(list_of(STR)),
        "version": need(STR),
        "device": need(obj(requested=opt(STR), resolved=opt(STR), id=opt(INT), why=opt(STR))),
        "scope": opt(STR),
        "split_seed": opt(INT),
        "val_fraction": opt(NUM),
        "data_dir": opt(STR),
        "mode": opt(STR),
        "precision": opt(STR),
        "reference": opt(STR),
        "candidate": opt(STR),
    },
    "log": {"level": need(STR), "message": need(STR)},
    "check": {
        "id": need(STR),
        "title": need(STR),
        "status": need(LEVEL),
        "detail": opt(STR),
        "evidence": opt(DICT),
        "hint": opt(STR),
        "group": opt(STR),
        "format": opt(STR),
        "batch_size": opt(INT),
        # what the check is about: checkpoint:<sha256>, recipe:<sha256>, initial weights; absent: no model
        "subject": opt(STR),
    },
    "progress": {"done": need(NUM), "total": need(NUM), "unit": need(STR), "phase": opt(STR)},
    "step": {
        "epoch": need(INT),
        "step": need(INT),
        "global_step": opt(INT),
        "loss": need(opt(NUM)),
        "step_ms": need(opt(NUM)),
        "batch_size": need(opt(INT)),
        "phase": opt(STR),
    },
    "steps": {
        "epoch": need(INT),
        "first_step": need(INT),
        "global_step": opt(INT),
        "loss": need(NUMS),
        "step_ms": need(NUMS),
        "batch_size": need(INT | list_of(INT)),
        "phase": opt(STR | list_of(opt(STR))),
    },
    "epoch": {
        "epoch": need(INT),
        "train_loss": need(opt(NUM)),
        "samples": need(opt(INT)),
        "val": need(
            obj(
                accuracy=opt(NUM),
                macro_f1=opt(NUM),
                per_class=opt(PER_CLASS),
                confusion=opt(list_of(list_of(INT))),
                samples=opt(INT),
            )
        ),
        "is_best": need(BOOL),
        "epoch_s": need(opt(NUM)),
    },
    "perf": {
        "first_step_s": need(opt(NUM)),
        "warmup_steps": need(opt(INT)),
        "steady": need(opt(obj(n=opt(INT), median_ms=opt(NUM), p95_ms=opt(NUM), images_per_s=opt(NUM)))),
        "peak_host_rss_mb": need(opt(NUM)),
        "peak_device_mb": need(opt(NUM)),
        "sync": need(opt(STR)),
        "scope": opt(STR),
        "epoch": opt(INT),
        "batch_size": opt(INT),
        "recompile": opt(LIST),
        "device_memory_note": opt(STR),
    },
    "tensor_diff": {
        "name": need(STR),
        "shape": need(opt(SHAPE | obj(ref=opt(SHAPE), cand=opt(SHAPE)))),
        "dtype": opt(STR | obj(ref=opt(STR), cand=opt(STR))),
        "ref": opt(STR),
        "cand": opt(STR),
        "atol": need(opt(NUM)),
        "rtol": need(opt(NUM)),
        "max_abs": need(opt(NUM)),
        "max_rel": opt(NUM),
        "mismatch_ratio": opt(NUM),
        "worst_index": opt(LIST),
        "passed": need(BOOL),
        "reason": opt(STR),
        "worst": opt(obj(ref=opt(NUM), cand=opt(NUM))),
        "flips": opt(obj(n=opt(INT), count=opt(INT), pairs=opt(LIST))),
        "hist": opt(obj(zeros=opt(INT), edges=opt(list_of(NUM)), counts=opt(list_of(INT)), nonfinite=opt(INT))),
    },
    "artifact": {"path": need(STR), "kind": need(STR), "bytes": need(INT), "sha256": need(STR)},
    "result": {"summary": need(opt(DICT))},
    "finished": {
        "status": need(one_of(*FINISHED_STATUSES)),
        "error": need(opt(obj(type=opt(STR), message=opt(STR), hint=opt(STR)))),
    },
    "monitor": {  # consecutive samples of the training-state monitor, one value per parameter of `names`
        "names": need(list_of(STR)),
        "every": opt(INT),
        "global_step": need(list_of(INT)),
        "epoch": opt(list_of(INT)),
        "weight_norm": need(list_of(NUMS)),
        "grad_norm": need(list_of(NUMS)),
        "update_ratio": need(list_of(NUMS)),  # |w_after - w_before| / |w_after|
        "nonfinite": need(list_of(NUMS)),  # share of the gradient's values that are NaN or Inf
        "skipped": opt(list_of(BOOL)),  # per sample: a dynamic loss scale's overflow skipped the step's update
    },
    "loss_scale": {  # the dynamic loss scale at a step where it changed or the step was skipped for an overflow
        "epoch": opt(INT),
        "step": opt(INT),
        "global_step": need(INT),
        "scale": need(NUM),  # the scale the step ran with
        "overflow": need(BOOL),  # the scaled gradients overflowed: the update was skipped
        "next_scale": opt(NUM),
        "skipped": opt(INT),  # overflow skips so far in this job
    },
    "device": {
        "ai_core_pct": opt(NUM),
        "mem_used_mb": opt(NUM),
        "mem_total_mb": opt(NUM),
        "temp_c": opt(NUM),
        "power_w": opt(NUM),
        "card_power_w": opt(NUM),
        "health": opt(STR),
        "npu": opt(INT),
        "chip": opt(INT),
    },
}


# Required fields per event type (beyond v, seq, t, type), in the table's order.
REQUIRED: Dict[str, tuple] = {
    kind: tuple(n for n, ft in fields.items() if ft.required) for kind, fields in FIELD_TYPES.items()
}
KNOWN_TYPES = tuple(REQUIRED)


def is_main(event: Dict[str, Any]) -> bool:
    """True for events of a single-process run, of rank 0, or job-level ones (no rank)."""
    return event.get("rank") in (None, 0)


def type_problem(event: Dict[str, Any]) -> Optional[str]:
    """The first field whose JSON type is wrong for its event type (an unknown evidence level too), else None."""
    p = fields_problem(event, ENVELOPE)
    if p is None:
        fields = FIELD_TYPES.get(event.get("type"))  # type: ignore[arg-type]  # a str (the envelope check), or None: no fields
        p = fields_problem(event, fields) if fields else None
    return None if p is None else "%s %s" % (event.get("type"), p)


_NONE = type(None)
_T_TYPES = (float, int, _NONE)  # ENVELOPE "t"; exact types, as FieldType compares them (a bool is no int)
_OPT_NUM = (float, int, _NONE)
_OPT_INT = (int, _NONE)
_OPT_STR = (str, _NONE)
_NUM_ITEMS = frozenset(_OPT_NUM)
_INT_ITEMS = frozenset((int,))
_PHASE_ITEMS = frozenset(_OPT_STR)
_STEP_KEYS = operator.itemgetter("seq", "t", "epoch", "step", "loss", "step_ms")


def _envelope_ok(event: Dict[str, Any]) -> bool:
    g = event.get
    return (
        type(g("seq")) is int
        and type(g("t")) in _T_TYPES
        and ("rank" not in event or type(event["rank"]) is int)
        and ("synthetic" not in event or type(event["synthetic"]) is bool)
    )


def step_values(event: Dict[str, Any]) -> Optional[tuple]:
    """A `step` event's (seq, t, rank, epoch, step, loss, step_ms, batch_size, phase) when it is surely well typed.

    One pass over its fields, the fold's path for the commonest line: a tuple means type_problem would
    say None; None means "ask type_problem" (which names the problem, or finds none: a missing seq, a
    loss written as "nan"). Held to type_problem by a property test (tests/unit/test_fold_fast_path.py).
    """
    try:
        seq, t, epoch, step, loss, ms = _STEP_KEYS(event)  # the keys every step line has, fetched at once
    except KeyError:
        return None  # type_problem decides (a missing seq or t is damage; a step without a loss is not)
    g = event.get
    rank, size, phase = g("rank"), g("batch_size"), g("phase")
    if (
        type(seq) is int
        and type(t) in _T_TYPES
        and type(epoch) is int
        and type(step) is int
        and type(loss) in _OPT_NUM
        and type(ms) in _OPT_NUM
        and type(size) in _OPT_INT
        and type(phase) in _OPT_STR
        and type(rank) in _OPT_INT
        and (rank is not None or "rank" not in event)
        and type(g("global_step")) in _OPT_INT
        and ("synthetic" not in event or type(event["synthetic"]) is bool)
    ):
        return seq, t, rank, epoch, step, loss, ms, size, phase
    return None


def step_line_ok(event: Dict[str, Any]) -> bool:
    """True when a `step` event is surely well typed (step_values gives its values)."""
    return step_values(event) is not None


def steps_line_ok(event: Dict[str, Any]) -> bool:
    """Like step_line_ok, for a batched `steps` line (its lists checked by the set of their items' types)."""
    g = event.get
    loss, ms, size, phase = g("loss"), g("step_ms"), g("batch_size"), g("phase")
    return (
        type(g("epoch")) is int
        and type(g("first_step")) is int
        and type(g("global_step")) in _OPT_INT
        and type(loss) is list
        and set(map(type, loss)) <= _NUM_ITEMS
        and type(ms) is list
        and set(map(type, ms)) <= _NUM_ITEMS
        and (type(size) is int or (type(size) is list and set(map(type, size)) <= _INT_ITEMS))
        and (type(phase) in _OPT_STR or (type(phase) is list and set(map(type, phase)) <= _PHASE_ITEMS))
        and _envelope_ok(event)
    )


def validate(event: Dict[str, Any]) -> List[str]:
    """Return the problems of one event against the v1 schema (empty list when valid)."""
    problems = []
    if event.get("v") != VERSION:
        problems.append("v must be %d, got %r" % (VERSION, event.get("v")))
    if type(event.get("seq")) is not int or event["seq"] < 0:
        problems.append("seq must be a non-negative int, got %r" % (event.get("seq"),))
    if type(event.get("t")) not in (int, float):
        problems.append("t must be unix seconds, got %r" % (event.get("t"),))
    kind = event.get("type")
    if type(kind) is not str or kind not in REQUIRED:
        problems.append("unknown type %r" % (kind,))
    else:
        problems.extend("%s event lacks %r" % (kind, name) for name in REQUIRED[kind] if name not in event)
    wrong = type_problem(event)
    if wrong is not None:
        problems.append(wrong)
    return problems


class SeqCheck:
    """Seq numbers per rank must run from 0 without gaps: names each jump and keeps the missing ranges."""

    def __init__(self) -> None:
        self.expected: Dict[Any, int] = {}
        self.missing: List[Dict[str, Any]] = []  # {rank, first, last}: seq numbers never seen

    def see(self, event: Dict[str, Any]) -> Optional[str]:
        """Account for one event's seq; a problem text when it is not the one expected."""
        rank = event.get("rank")
        if type(rank) is not int:
            rank = None
        seq = event.get("seq")
        if type(seq) is not int:
            return "seq %r, expected %d" % (seq, self.expected.get(rank, 0))
        return self.see_seq(rank, seq)

    def see_seq(self, rank: Optional[int], seq: int) -> Optional[str]:
        """see() for a seq and rank already known to be ints (rank None: a single-process job)."""
        want = self.expected.get(rank, 0)
        self.expected[rank] = seq + 1
        if seq == want:
            return None
        if seq > want:
            self.missing.append({"rank": rank, "first": want, "last": seq - 1})
        return "seq %d, expected %d" % (seq, want)


def validate_file(path: str) -> List[str]:
    """Validate every line of an events file, including seq contiguity per rank."""
    problems = []
    seqs = SeqCheck()
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                problems.append("line %d: torn (no newline)" % number)
                continue
            event = decode_line(raw)
            if event.get("raw"):
                problems.append("line %d: not a JSON event: %r" % (number, event["message"][:80]))
                continue
            for p in validate(event):
                problems.append("line %d: %s" % (number, p))
            jump = seqs.see(event)
            if jump is not None:
                problems.append("line %d: %s" % (number, jump))
    return problems
