"""Batched lines folded as columns (whole lists at a time: the CSV text, the loss history, the table) give the
outcome of folding every step one by one, on arbitrary mixes of batched and per-line events, read from bytes."""

from __future__ import annotations

import csv
import io
import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fold_state import record_state
from workbench.events.steps import expand_steps
from workbench.fold.record import JobRecord
from workbench.fold.series import WholeRunHistory
from workbench.fold.steptable import StepTable
from workbench.fold.stream import fold_stream

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
STEP_KEYS = ("steps_seen", "series", "ranks", "table", "table_facts", "rows")

floats = st.floats(allow_nan=True, allow_infinity=True) | st.floats(0.001, 10.0) | st.just(-0.0)
PHASES = ["compile", "recompile", "warmup", "steady", "profiled", "other"]


@st.composite
def runs(draw):
    """A run's lines: batched lines mostly as the train job writes them, some not (an int loss, a rank other than
    the main one, per-step phases or sizes, an empty phase), per-line `step` events and other events among them."""
    events, seq, step = [], 0, 1
    rank = draw(st.sampled_from([None, 0]))
    for _ in range(draw(st.integers(1, 10))):
        roll = draw(st.integers(0, 9))
        ev = {"v": 1, "seq": seq, "t": 1.0 + seq}
        if roll == 0:
            ev.update(type="log", level="info", message="m")
        elif roll == 1:
            ev.update(
                type="step",
                epoch=1,
                step=step,
                loss=draw(floats | st.integers(0, 3)),
                step_ms=draw(floats),
                batch_size=64,
                phase=draw(st.sampled_from(PHASES)),
            )
            step += 1
        else:
            n = draw(st.integers(1, 80))
            losses = draw(st.lists(floats, min_size=n, max_size=n))
            if draw(st.integers(0, 7)) == 0:
                losses[draw(st.integers(0, n - 1))] = draw(st.integers(0, 3))  # an int loss: no longer all floats
            ev.update(
                type="steps",
                epoch=1 + seq // 4,
                first_step=step,
                global_step=step,
                loss=losses,
                step_ms=draw(st.lists(floats, min_size=n, max_size=n)),
                batch_size=draw(st.sampled_from([64, 48]) | st.lists(st.just(64), min_size=n, max_size=n)),
                phase=draw(st.sampled_from(PHASES + [""]) | st.lists(st.sampled_from(PHASES), min_size=n, max_size=n)),
            )
            step += n
        if rank is not None or roll == 9:
            ev["rank"] = 1 if roll == 9 else rank  # now and then a line of another rank
        events.append(ev)
        seq += 1 if draw(st.integers(0, 19)) else 2  # a seq jump now and then
    return events


def _record(max_rows, fast=True):
    rec = JobRecord(
        "train-001",
        "train",
        config={"train": {"warmup_steps": 2}},
        keep_steps=StepTable(max_rows=max_rows, spool=True, jid="train-001"),
    )
    rec.fast = fast
    return rec


def _streamed(events, max_rows, block, fast=True):
    data = b"".join(json.dumps(ev).encode() + b"\n" for ev in events)
    rec = _record(max_rows, fast)
    fold_stream(rec, iter([data[i : i + block] for i in range(0, len(data), block)]), [])
    return rec


@settings(max_examples=150, **SETTINGS)
@given(runs(), st.sampled_from([1, 2, 3, 7, 4000]), st.integers(50, 5000))
def test_columns_fold_as_every_step_one_by_one(events, max_rows, block):
    columnar = _streamed(events, max_rows, block)
    per_step = _record(max_rows)
    for ev in events:
        if ev["type"] in ("step", "steps"):
            for one in expand_steps(ev):
                per_step._one_step(one)
    a, b = record_state(columnar), record_state(per_step)
    for key in STEP_KEYS:
        assert a[key] == b[key], key
    # and the whole record (seq, counts, damage, last event) is the generic path's
    assert a == record_state(_streamed(events, max_rows, block, fast=False))


def test_the_job_s_lines_take_the_columnar_path(monkeypatch):
    """The property above is not vacuous: a line as the train job writes it is never folded step by step."""

    def one_by_one(*args, **kwargs):
        raise AssertionError("folded step by step")

    monkeypatch.setattr(StepTable, "add_row", one_by_one)
    monkeypatch.setattr(JobRecord, "_step_values", one_by_one)
    ev = {
        "v": 1,
        "seq": 0,
        "t": 1.0,
        "type": "steps",
        "epoch": 1,
        "first_step": 1,
        "global_step": 1,
        "loss": [2.5, 2.25],
        "step_ms": [3.0, 1.5],
        "batch_size": 64,
        "phase": "steady",
    }
    rec = _streamed([ev], 4000, 4096)
    assert rec.steps_seen == 2 and rec.type_counts["steps"] == 1
    with pytest.raises(AssertionError, match="step by step"):  # the spy does catch the per-step path
        _streamed([dict(ev, loss=[2.5, 2])], 4000, 4096)


@settings(max_examples=200, **SETTINGS)
@given(st.lists(st.lists(floats, max_size=40), max_size=12), st.integers(2, 9))
def test_a_history_extended_by_lists_equals_one_appended_value_by_value(chunks, max_points):
    whole, one = WholeRunHistory(max_points), WholeRunHistory(max_points)
    for chunk in chunks:
        whole.extend(chunk)
        for value in chunk:
            one.append(value)
    assert repr((whole.points, whole.per_point, whole._sum, whole._n)) == repr(
        (one.points, one.per_point, one._sum, one._n)
    )


STYLES = {
    "repr": repr,
    "%.17g": lambda x: "%.17g" % x,  # more digits than needed now and then; an int's text for 1.0
    "trailing zero": lambda x: repr(x) + "0" if "." in repr(x) and "e" not in repr(x) else repr(x),
    "upper E": lambda x: "%.16E" % x,
}


def _number(x, style):
    if x != x or x in (float("inf"), float("-inf")):
        return json.dumps(x)  # NaN, Infinity, -Infinity as json writes them
    return STYLES[style](x) if isinstance(x, float) else json.dumps(x)


@st.composite
def _decoy(draw, values):
    """Another list under the same key: the same length and ends, one number between them changed (if any)."""
    out = list(values)
    if len(out) > 2:
        out[draw(st.integers(1, len(out) - 2))] = draw(floats)
    return out


@st.composite
def written_lines(draw):
    """Each event of a run written by hand: spaced separators, numbers in other spellings than repr, a nested
    object holding "loss" and "step_ms", a duplicate "loss" key (json keeps the last), a key spelled with escapes."""
    lines = []
    for ev in draw(runs()):
        item, kv = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :  ")]))
        style = draw(st.sampled_from(sorted(STYLES)))
        parts = []
        for key, value in ev.items():
            if isinstance(value, list) and key in ("loss", "step_ms"):
                text = "[%s]" % item.join(_number(x, style) for x in value)
            else:
                text = json.dumps(value, separators=(item, kv))
            name = json.dumps(key)
            if key == "loss" and draw(st.integers(0, 3)) == 0:
                name = '"\\u006coss"'
            if key == "loss" and isinstance(value, list) and draw(st.integers(0, 5)) == 0:
                parts.append('"loss"%s%s' % (kv, json.dumps(draw(_decoy(value)))))  # json keeps the last "loss"
            parts.append(name + kv + text)
        roll = draw(st.integers(0, 3))
        if roll == 0 and ev.get("type") == "steps" and isinstance(ev["loss"], list):  # a nested object's lists
            decoys = (json.dumps(draw(_decoy(ev[k]))) for k in ("loss", "step_ms"))
            nested = '{"loss"%s%s%s"step_ms"%s%s}' % (kv, next(decoys), item, kv, next(decoys))
            parts.insert(draw(st.integers(0, len(parts))), '"meta"' + kv + nested)
        lines.append("{" + item.join(parts) + "}")
    return lines


def _same_rows(columnar, per_step):
    """CSV rows equal cell for cell, the loss and step time cells as numbers, bit for bit."""
    a, b = list(csv.reader(io.StringIO(columnar))), list(csv.reader(io.StringIO(per_step)))
    assert len(a) == len(b)
    for row_a, row_b in zip(a, b):
        assert row_a[:3] + row_a[5:] == row_b[:3] + row_b[5:]
        for cell_a, cell_b in zip(row_a[3:5], row_b[3:5]):
            if cell_a != cell_b:
                assert struct.pack("<d", float(cell_a)) == struct.pack("<d", float(cell_b)), (cell_a, cell_b)


@settings(max_examples=150, **SETTINGS)
@given(written_lines(), st.sampled_from([1, 3, 4000]), st.integers(50, 5000))
def test_the_numbers_text_makes_the_same_rows_as_every_step_one_by_one(lines, max_rows, block):
    """steps.csv's loss and step time cells from the line's text are the per-step path's numbers bit for bit."""
    data = "".join(line + "\n" for line in lines).encode()
    columnar = _record(max_rows)
    fold_stream(columnar, iter([data[i : i + block] for i in range(0, len(data), block)]), [])
    per_step = _record(max_rows)
    for line in lines:
        ev = json.loads(line)
        if ev["type"] in ("step", "steps"):
            for one in expand_steps(ev):
                per_step._one_step(one)
    a, b = record_state(columnar), record_state(per_step)
    for key in STEP_KEYS[:-1]:
        assert a[key] == b[key], key
    _same_rows(a["rows"], b["rows"])
    generic = _record(max_rows, fast=False)
    fold_stream(generic, iter([data]), [])
    c = record_state(generic)
    _same_rows(a.pop("rows"), c.pop("rows"))
    assert a == c


def _rows_of(line):
    rec = _record(4000)
    fold_stream(rec, iter([line.encode() + b"\n"]), [])
    return record_state(rec)["rows"]


STEPS = '"v":1,"seq":0,"t":1.0,"type":"steps","epoch":1,"first_step":1,"batch_size":64,"phase":"steady"'


def test_a_batched_line_s_numbers_go_to_steps_csv_as_written():
    """The cell is the number as the line wrote it (the same double); json.dumps writes repr, so the same text."""
    assert _rows_of('{%s,"loss":[1.50, 2.0E-3],"step_ms":[3.0,4.00]}' % STEPS) == (
        "train-001,1,1,1.50,3.0,64,,steady\ntrain-001,1,2,2.0E-3,4.00,64,,steady\n"
    )
    # a nested object, a backslash, NaN or a repeated key: repr, as the per-step path writes
    for line in (
        '{%s,"loss":[1.50,2.0E-3],"step_ms":[3.0,4.0],"m":{}}',
        '{%s,"loss":[1.50,2.0E-3],"step_ms":[3.0,4.0],"m":"\\\\"}',
        '{%s,"loss":[1.50,NaN],"step_ms":[3.0,4.0]}',
        '{%s,"loss":[1.50,2.0E-3],"step_ms":[3.0,4.0],"x":"loss"}',
    ):
        rows = _rows_of(line % STEPS)
        assert rows.startswith("train-001,1,1,1.5,3.0,64,,steady\ntrain-001,1,2,"), line
