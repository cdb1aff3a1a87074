"""Property tests: the fold's fast path for `step` and batched `steps` lines gives the generic path's outcome.

The one-pass checks (protocol.step_line_ok, steps_line_ok) never accept a line the generic validator
(type_problem) would flag; a record folded with the fast path equals one folded without it, field by
field, spool rows included; a batched line folds exactly as the `step` events expand_steps makes of it;
the CSV spool's rows, formatted a batch at a time, are what csv.writer would have written; and folding
a stream a block at a time (workbench.fold.stream) equals folding its lines one by one.
"""

from __future__ import annotations

import csv
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fold_state import record_state
from workbench.events.files import complete_lines
from workbench.events.protocol import step_line_ok, steps_line_ok, type_problem
from workbench.events.steps import expand_steps
from workbench.fold.record import JobRecord
from workbench.fold.steptable import StepTable
from workbench.fold.stream import fold_stream, has_object

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CASES = {"checks": 800, "fold": 400, "batched": 300, "rows": 300, "stream": 300}

# Values of the types a step field holds, and of the types it must not hold (bools, strings, lists, objects).
numbers = st.integers(-3, 10**6) | st.floats(allow_nan=True, allow_infinity=True)
odd = (
    st.booleans()
    | st.text(max_size=4)
    | st.sampled_from(["nan", "inf", "-inf", "steady"])
    | st.lists(st.integers(0, 3), max_size=2)
    | st.dictionaries(st.sampled_from(["a", "env"]), st.integers(), max_size=1)
)
field_values = st.none() | numbers | odd
phases = st.none() | st.sampled_from(["compile", "recompile", "warmup", "steady", "profiled", "other"])
MISSING = object()


def _maybe(draw, value_strategy, typical):
    """Mostly a well-typed value, sometimes anything (or the field left out)."""
    roll = draw(st.integers(0, 9))
    if roll == 0:
        return MISSING
    if roll == 1:
        return draw(field_values)
    return draw(typical)


@st.composite
def step_lines(draw):
    """A `step` event: well typed most of the time, one or more fields wrong or missing otherwise."""
    ev = {"v": 1, "type": "step"}
    fields = {
        "seq": st.integers(0, 40),
        "t": st.none() | numbers,
        "epoch": st.integers(0, 3),
        "step": st.integers(0, 10**6),
        "loss": st.none() | numbers | st.sampled_from(["nan", "inf"]),
        "step_ms": st.none() | numbers,
        "batch_size": st.none() | st.integers(1, 128),
        "phase": phases,
        "global_step": st.none() | st.integers(0, 10**6),
        "rank": st.integers(0, 3),
        "synthetic": st.booleans(),
        "raw": st.booleans(),
        "note": st.text(max_size=3),
    }
    for name, typical in fields.items():
        if name in ("global_step", "rank", "synthetic", "raw", "note") and draw(st.booleans()):
            continue  # optional fields: often absent
        value = _maybe(draw, field_values, typical)
        if value is not MISSING:
            ev[name] = value
    return ev


@st.composite
def steps_lines(draw):
    """A batched `steps` event (lists of step values), sometimes mistyped, uneven or with fields missing."""
    n = draw(st.integers(0, 6))
    ev = {"v": 1, "type": "steps"}
    fields = {
        "seq": st.integers(0, 40),
        "t": st.none() | numbers,
        "epoch": st.integers(0, 3),
        "first_step": st.integers(0, 1000),
        "global_step": st.none() | st.integers(0, 10**6),
        "loss": st.lists(st.none() | numbers | st.just("nan"), min_size=max(0, n - 1), max_size=n),
        "step_ms": st.lists(st.none() | numbers, min_size=max(0, n - 1), max_size=n),
        "batch_size": st.integers(1, 128) | st.lists(st.integers(1, 128), max_size=n + 1),
        "phase": phases | st.lists(phases, max_size=n + 1),
        "rank": st.integers(0, 3),
    }
    for name, typical in fields.items():
        if name in ("global_step", "rank") and draw(st.booleans()):
            continue
        value = _maybe(draw, field_values, typical)
        if value is not MISSING:
            ev[name] = value
    return ev


def _record(max_rows: int = 5) -> JobRecord:
    return JobRecord(
        "train-001",
        "train",
        config={"train": {"warmup_steps": 2}},
        keep_steps=StepTable(max_rows=max_rows, spool=True, jid="train-001"),
    )


def _fold(events, fast: bool, max_rows: int = 5) -> JobRecord:
    rec = _record(max_rows)
    rec.fast = fast
    rec.ingest([dict(ev) for ev in events])
    return rec


@settings(max_examples=CASES["checks"], **SETTINGS)
@given(step_lines(), steps_lines())
def test_the_one_pass_checks_accept_only_lines_the_validator_accepts(step, steps):
    if step_line_ok(step):
        assert type_problem(step) is None, step
    if steps_line_ok(steps):
        assert type_problem(steps) is None, steps


def test_the_one_pass_checks_accept_the_lines_jobs_write():
    """The fast path is taken for the usual lines (else it would be tested but never used)."""
    assert step_line_ok(
        {
            "v": 1,
            "seq": 3,
            "t": 1.5,
            "type": "step",
            "epoch": 1,
            "step": 3,
            "loss": 0.5,
            "step_ms": 2.0,
            "batch_size": 64,
        }
    )
    assert step_line_ok(
        {
            "v": 1,
            "seq": 3,
            "t": 1.5,
            "type": "step",
            "epoch": 1,
            "step": 3,
            "global_step": 9,
            "loss": 2,
            "step_ms": None,
            "batch_size": 64,
            "phase": "steady",
            "rank": 1,
        }
    )
    assert steps_line_ok(
        {
            "v": 1,
            "seq": 3,
            "t": 1.5,
            "type": "steps",
            "epoch": 1,
            "first_step": 3,
            "loss": [0.5, None],
            "step_ms": [2.0, 1],
            "batch_size": 64,
            "phase": ["compile", None],
        }
    )
    assert not step_line_ok(
        {
            "v": 1,
            "seq": 3,
            "t": 1.5,
            "type": "step",
            "epoch": 1,
            "step": True,
            "loss": 0.5,
            "step_ms": 2.0,
            "batch_size": 64,
        }
    )


@settings(max_examples=CASES["fold"], **SETTINGS)
@given(st.lists(step_lines() | steps_lines(), max_size=30), st.integers(1, 6))
def test_the_fast_fold_equals_the_generic_fold(events, max_rows):
    assert record_state(_fold(events, True, max_rows)) == record_state(_fold(events, False, max_rows))


@settings(max_examples=CASES["batched"], **SETTINGS)
@given(st.lists(steps_lines(), max_size=8), st.sampled_from([1, 2, 3, 5, 1000]))
def test_a_batched_line_folds_as_the_step_events_it_stands_for(lines, max_rows):
    batched = _fold(lines, True, max_rows=max_rows)  # a small table: thinning within a batched line too
    single = JobRecord(
        "train-001",
        "train",
        config={"train": {"warmup_steps": 2}},
        keep_steps=StepTable(max_rows=max_rows, spool=True, jid="train-001"),
    )
    for ev in lines:
        if type_problem(ev) is None and not ev.get("raw"):
            for step in expand_steps(ev):
                single._one_step(step)
    a, b = record_state(batched), record_state(single)
    for key in ("steps_seen", "series", "ranks", "table", "table_facts", "rows"):
        assert a[key] == b[key], key


def test_a_long_run_of_step_lines_folds_the_same_either_way():
    """Thinning, seq jumps, warm-up inference and rank windows over a few thousand lines."""
    events = []
    for i in range(3000):
        ev = {
            "v": 1,
            "seq": i if i % 997 else i + 1,
            "t": 1.0 + i,
            "type": "step",
            "epoch": 1 + i // 1000,
            "step": i,
            "loss": 1.0 / (1 + i),
            "step_ms": 0.5 + i % 7,
            "batch_size": 64,
        }
        if i % 5 == 0:
            ev["rank"] = i % 3
        if i % 11 == 0:
            ev["phase"] = "steady"
        events.append(ev)
    fast, generic = _fold(events, True, 64), _fold(events, False, 64)
    assert record_state(fast) == record_state(generic)
    assert fast.step_table.count == 3000 and fast.steps_seen == 3000


cells = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats()
    | st.just("None")
    | st.text(alphabet=st.sampled_from('ab,"\r\n N1.'), max_size=5)
    | st.text(max_size=3)
)


@settings(max_examples=CASES["rows"], **SETTINGS)
@given(st.lists(st.tuples(*[cells] * 7), max_size=12), st.sampled_from(["train-001", "a,b", "None"]))
def test_the_spool_holds_what_csv_writer_writes(rows, jid):
    """steps.csv rows formatted in one go (the common case) are byte for byte csv.writer's."""
    table = StepTable(max_rows=4, spool=True, jid=jid)
    for rank, epoch, step, loss, ms, size, phase in rows:
        table.add_row(rank, epoch, step, loss, ms, size, phase)
    out = io.StringIO()
    table.copy_rows(out)
    expected = io.StringIO()
    csv.writer(expected, lineterminator="\n").writerows(
        [(jid, epoch, step, loss, ms, size, rank, phase) for rank, epoch, step, loss, ms, size, phase in rows]
    )
    assert out.getvalue() == expected.getvalue()


line_variants = st.sampled_from(
    [
        b"",
        b"   ",
        b"\r",
        b"not json",
        b"[1, 2]",
        b"{}",
        b'{"type": "log"}  ',
        b"\xff\xfe",
        b'{"v":1,"seq":0,"t":1.0,"type":"log","level":"info","message":"\xc3\xa9"}\r',
        b'{"v":1,"seq":0,"type":"step"}{"v":1,"seq":1,"type":"step"}',
        b' {"v":1,"seq":2,"t":1.0,"type":"check","id":"x","title":"t","status":"blocked","evidence":{"env":{"A":"1"}}}',
    ]
)


@st.composite
def event_files(draw):
    """An events file's bytes: encoded events (steps, batches, nested objects) with odd lines among them."""
    lines = []
    for ev in draw(st.lists(step_lines() | steps_lines(), max_size=25)):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(line_variants))
        try:
            lines.append(json.dumps(dict(ev, extra={"k": 1}) if draw(st.booleans()) else ev).encode())
        except ValueError:
            lines.append(b"{bad")
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b'\n{"v":1,"se']))


@settings(max_examples=CASES["stream"], **SETTINGS)
@given(event_files(), st.integers(1, 400))
def test_folding_a_stream_by_blocks_equals_folding_its_lines(data, block):
    """fold_stream (each block decoded once) == ingest_lines over complete_lines, transform calls included."""
    seen = {"stream": [], "lines": []}

    def marker(name):
        def transform(ev):
            seen[name].append(json.dumps(ev, sort_keys=True))
            return dict(ev, masked=True)

        return transform

    chunks = [data[i : i + block] for i in range(0, len(data), block)]
    by_blocks, by_lines = _record(), _record()
    tail_a, tail_b = [], []
    fold_stream(by_blocks, iter(chunks), tail_a, marker("stream"), objects_only=True)
    lines_transform = marker("lines")
    by_lines.ingest_lines(
        complete_lines(iter(chunks), tail_b), lambda ev: lines_transform(ev) if has_object(ev) else ev, keep=False
    )
    assert tail_a == tail_b
    assert seen["stream"] == seen["lines"]
    assert record_state(by_blocks) == record_state(by_lines)
    assert (by_blocks.lines, by_blocks.version) == (by_lines.lines, by_lines.version)
