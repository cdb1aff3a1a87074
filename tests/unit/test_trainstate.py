"""The training-state monitor's flags (workbench.analysis.trainstate), on hand-made samples and on a recorded run.

The recorded run (tests/fixtures/trainstate/exploding_sgd_lr1.jsonl, its started and monitor events):
mlp on 2000 synthetic images, SGD momentum 0.9 at train.lr=1.0 (raised from 0.001), train.monitor.every=1,
2 epochs, MindSpore 2.10 on CPU.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from hypothesis import given, settings
from hypothesis.strategies import floats as st_floats
from hypothesis.strategies import lists as st_lists
from hypothesis.strategies import none as st_none
from hypothesis.strategies import sampled_from as st_sampled_from
from hypothesis.strategies import tuples as st_tuples

from workbench.analysis import trainstate
from workbench.events.protocol import read_all, validate
from workbench.fold.record import JobRecord

RECORDED = Path(__file__).resolve().parent.parent / "fixtures" / "trainstate" / "exploding_sgd_lr1.jsonl"


def sample(step, grad, ratio=0.01, nonfinite=0.0, name="1.weight"):
    row = {"weight_norm": 1.0, "grad_norm": grad, "update_ratio": ratio, "nonfinite": nonfinite}
    return {"global_step": step, "epoch": 1, "rows": {name: row}}


def test_exploding_needs_history_and_k_times_the_median():
    st = trainstate.TrainState()
    for step, grad in enumerate([1.0, 1.0, 1.0, 1.0], 1):
        assert st.add(sample(step, grad)) == []
    assert st.add(sample(5, 50.0)) == []  # only 4 earlier samples: the rule does not speak yet
    assert st.add(sample(6, 10.0)) == []  # median of [1,1,1,1,50] is 1: 10 is not above 10 x 1
    raised = st.add(sample(7, 10.5))
    assert [(f["flag"], f["global_step"]) for f in raised] == [("exploding", 7)]
    assert st.add(sample(8, 99.0)) == []  # raised once per parameter
    assert st.flag_counts["exploding"] == 2 and st.param_flags("1.weight") == ["exploding"]


def test_vanishing_stalled_and_non_finite():
    st = trainstate.TrainState()
    assert [f["flag"] for f in st.add(sample(1, 1e-8))] == ["vanishing"]
    for step in range(2, 2 + trainstate.STALL_SAMPLES - 1):
        assert st.add(sample(step, 1.0, ratio=1e-7)) == []
    raised = st.add(sample(40, 1.0, ratio=1e-7))
    assert [f["flag"] for f in raised] == ["stalled"]
    st.add(sample(41, 1.0, ratio=1e-3))  # the run of small updates is broken
    raised = st.add(sample(42, float("nan"), nonfinite=0.25))
    assert [f["flag"] for f in raised] == ["non-finite"] and raised[0]["value"] == 0.25
    text = trainstate.describe(raised[0])
    assert text == "non-finite: 1.weight at global step 42 (non-finite share 0.25)"


def test_events_round_trip_through_the_protocol_and_the_fold():
    ev = {
        "v": 1,
        "seq": 0,
        "t": 1.0,
        "type": "monitor",
        "names": ["1.weight", "1.bias"],
        "every": 10,
        "global_step": [10, 20],
        "epoch": [1, 1],
        "weight_norm": [[1.0, 0.5], [1.1, 0.5]],
        "grad_norm": [[0.1, "nan"], [0.2, 0.01]],
        "update_ratio": [[0.01, 0.02], [0.01, 0.02]],
        "nonfinite": [[0.0, 1.0], [0.0, 0.0]],
    }
    assert validate(ev) == []
    assert validate(dict(ev, grad_norm=[["big"]])) != []
    rec = JobRecord("train-001", "train", config={})
    rec.ingest([ev])
    st = rec.train_state
    assert st.names == ["1.weight", "1.bias"] and st.count == 2 and st.last_step == 20
    assert st.latest["1.bias"]["grad_norm"] == 0.01
    assert [(f["flag"], f["param"], f["global_step"]) for f in st.flags] == [("non-finite", "1.bias", 10)]


def _first_explosion_by_brute_force(events):
    """The first (global step, parameter) where grad > K x median of that parameter's earlier finite samples."""
    history = {}
    for ev in events:
        for i, step in enumerate(ev["global_step"]):
            hits = []
            for j, name in enumerate(ev["names"]):
                grad = ev["grad_norm"][i][j]
                earlier = history.setdefault(name, [])
                if len(earlier) >= trainstate.EXPLODE_MIN_SAMPLES and grad > trainstate.EXPLODE_K * statistics.median(
                    earlier
                ):
                    hits.append(name)
                earlier.append(grad)
            if hits:
                return step, hits
    return None


def test_recorded_exploding_run_flags_at_the_step_the_rule_first_holds():
    events = [e for e in read_all(str(RECORDED)) if e["type"] == "monitor"]
    assert events and all(validate(e) == [] for e in events)
    assert events[0]["every"] == 1
    rec = JobRecord("train-001", "train", config={})
    rec.ingest(read_all(str(RECORDED)))
    first = rec.train_state.first("exploding")
    expected_step, expected_params = _first_explosion_by_brute_force(events)
    assert first is not None and first["global_step"] == expected_step
    assert sorted(
        f["param"] for f in rec.train_state.flags if f["flag"] == "exploding" and f["global_step"] == expected_step
    ) == sorted(expected_params)
    # and not before: every earlier sample is below K x its running median
    assert all(f["global_step"] >= expected_step for f in rec.train_state.flags if f["flag"] == "exploding")


def test_a_loss_scale_skip_is_counted_and_never_judged():
    st = trainstate.TrainState()
    for step in range(1, 7):
        st.add(sample(step, 1.0))
    skip = dict(sample(7, float("inf"), ratio=0.0, nonfinite=1.0), skipped=True)
    assert st.add(skip) == []  # non-finite gradients of an overflowing scale, no update: not the model's
    assert st.skipped == 1 and st.last_skipped == 7 and st.count == 7
    assert st.latest["1.weight"]["grad_norm"] == 1.0 and list(st.grad_history["1.weight"]) == [1.0] * 6
    raised = st.add(sample(8, float("nan"), nonfinite=0.5))  # the same values on a step that was not skipped
    assert [f["flag"] for f in raised] == ["non-finite"]
    ev = {
        "type": "monitor",
        "names": ["1.weight"],
        "global_step": [9, 10],
        "weight_norm": [[1.0], [1.0]],
        "grad_norm": [["inf"], [1.0]],
        "update_ratio": [[0.0], [0.01]],
        "nonfinite": [[1.0], [0.0]],
        "skipped": [True, False],
    }
    assert [s["skipped"] for s in trainstate.samples(ev)] == [True, False]
    st.add_event(ev)
    assert st.skipped == 2 and st.summary()["skipped"] == 2


@settings(max_examples=60, deadline=None)
@given(st_lists(st_floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=trainstate.HISTORY + 40))
def test_running_median_equals_the_median_of_the_kept_history(grads):
    st = trainstate.TrainState()
    for step, grad in enumerate(grads, 1):
        st.add(sample(step, grad))
        kept = sorted(st.grad_history["1.weight"])
        assert st.grad_sorted["1.weight"] == kept
        assert trainstate._median(st.grad_sorted["1.weight"]) == statistics.median(kept)


def _rules_as_stated(rows):
    """The flags of a sequence of (grad, ratio, nonfinite) rows of one parameter, each rule read off RULES: the
    first step at which each holds (a plain reading to hold TrainState's one-test shortcut for no flag to)."""
    first, history, stall = {}, [], 0
    for step, (grad, ratio, nonfinite) in enumerate(rows, 1):
        held = []
        if (nonfinite is not None and nonfinite > 0) or (grad is not None and not math.isfinite(grad)):
            held.append("non-finite")
        if grad is not None and math.isfinite(grad):
            if len(history) >= trainstate.EXPLODE_MIN_SAMPLES and grad > trainstate.EXPLODE_K * statistics.median(
                history[-trainstate.HISTORY :]
            ):
                held.append("exploding")
            if grad < trainstate.VANISH_FLOOR:
                held.append("vanishing")
            history.append(grad)
        stall = stall + 1 if ratio is not None and math.isfinite(ratio) and ratio < trainstate.STALL_RATIO else 0
        if stall >= trainstate.STALL_SAMPLES:
            held.append("stalled")
        for flag in held:
            first.setdefault(flag, step)
    return first


values = st_floats(allow_nan=True, allow_infinity=True) | st_sampled_from([0.0, 1e-8, 1e-7, 1.0, 50.0, float("nan")])


@settings(max_examples=150, deadline=None)
@given(st_lists(st_tuples(values | st_none(), values | st_none(), st_sampled_from([0.0, 0.5, None])), max_size=60))
def test_the_flags_are_the_rules_as_stated(rows):
    """Whatever the rows (NaN, inf, None, tiny, huge), each flag is raised at the first step its rule holds."""
    st = trainstate.TrainState()
    for step, (grad, ratio, nonfinite) in enumerate(rows, 1):
        row = {"weight_norm": 1.0, "grad_norm": grad, "update_ratio": ratio, "nonfinite": nonfinite}
        st.add({"global_step": step, "epoch": 1, "rows": {"w": row}})
    assert {f["flag"]: f["global_step"] for f in st.flags} == _rules_as_stated(rows)
