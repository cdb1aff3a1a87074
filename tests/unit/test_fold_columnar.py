"""Batched lines folded as columns (whole lists at a time: the CSV text, the loss history, the table) give the
outcome of folding every step one by one, on arbitrary mixes of batched and per-line events, read from bytes."""

from __future__ import annotations

import json

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
