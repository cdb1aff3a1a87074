"""The ETA on a recorded real run (4 epochs of the official data on CPU) and on small hand-made sequences."""

from pathlib import Path

import pytest

from tests.support.eta import boundaries, previous_eta, read_events
from workbench.fold.eta import EpochMarks, eta_s
from workbench.fold.record import JobRecord
from workbench.views.training import record_eta, tail_steps

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "events" / "train_eta.jsonl"
MOVE, ERROR = 0.20, 0.25  # at an epoch boundary: how far the predicted end may move, how far off it may be


def failures(rows):
    """What breaks the rule at each boundary: the end moves by MOVE or more; from epoch 2 on, off by more than ERROR."""
    out = []
    for row in rows:
        if not row["move"] < MOVE:
            out.append("epoch %d: moved %.0f %%" % (row["epoch"], 100 * row["move"]))
        if row["epoch"] >= 2 and not abs(row["error"]) <= ERROR:
            out.append("epoch %d: off by %+.0f %%" % (row["epoch"], 100 * row["error"]))
    return out


def test_recorded_run_is_a_multi_epoch_run_with_a_compile_step():
    events = read_events(RECORDED)
    assert max(e["epoch"] for e in events if e["type"] == "epoch") >= 4
    phases = [e["phase"] for e in events if e["type"] == "steps" and isinstance(e["phase"], str)]
    assert phases[0] == "compile" and "steady" in phases


def test_eta_is_steady_and_close_at_every_epoch_boundary_of_the_recorded_run():
    rows = boundaries(read_events(RECORDED), record_eta)
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert not failures(rows), rows
    print(["epoch %(epoch)d: moved %(move).3f, off %(error)+.3f of %(left_s).1f s left" % r for r in rows])


def test_the_previous_estimate_fails_the_same_rule():
    # steps left at the recent median step time, plus each ended epoch's time less its steps at that
    # median per epoch left: the median undercounts the wall time and the compile lands in "validation"
    rows = boundaries(read_events(RECORDED), previous_eta)
    assert failures(rows), rows


def _marks(*events):
    marks = EpochMarks()
    for kind, t, *rest in events:
        getattr(marks, kind)(t, *rest)
    return marks


def test_a_span_starts_after_the_first_step_so_the_compile_is_outside():
    # epoch 1: the compile step ends at t=10 (progress 1 of 300); 99 more steps take 1 s
    marks = _marks(("progress", 10.0, 1, 300, 1), ("progress", 11.0, 100, 300, 1))
    assert marks.step_s() == pytest.approx(1.0 / 99)
    assert eta_s(marks, 11.0, 3) == pytest.approx(200 / 99.0)  # no validation measured yet: steps alone


def test_validation_and_pause_are_measured_and_the_first_epochs_left_out_once_a_later_one_is_measured():
    marks = _marks(
        ("progress", 0.0, 1, 400, 1),
        ("progress", 1.0, 100, 400, 1),  # training of epoch 1 ends, its validation begins
        ("epoch", 4.0, 1),  # validation 3 s (compile included)
        ("progress", 4.5, 101, 400, 2),  # pause 0.5 s
        ("progress", 5.5, 200, 400, 2),
        ("epoch", 6.5, 2),  # validation 1 s
    )
    assert marks.validation_s() == pytest.approx(1.0)
    assert marks.pause_s() == pytest.approx(0.5)
    # as of the epoch-2 event: 200 steps at 1/99 s, 2 validations, 2 pauses
    assert eta_s(marks, 6.5, 4) == pytest.approx(200 / 99.0 + 2 * 1.0 + 2 * 0.5)
    assert eta_s(marks, 7.5, 4) == pytest.approx(200 / 99.0 + 2 * 1.0 + 2 * 0.5 - 1.0)  # counted from then
    only_first = _marks(("progress", 0.0, 1, 400, 1), ("progress", 1.0, 100, 400, 1), ("epoch", 4.0, 1))
    assert only_first.validation_s() == pytest.approx(3.0)  # the only one measured counts until a later one


def test_a_validation_under_way_counts_down_from_where_training_ended():
    marks = _marks(
        ("progress", 0.0, 1, 200, 1),
        ("progress", 1.0, 100, 200, 1),
        ("epoch", 3.0, 1),
        ("progress", 3.5, 101, 200, 2),
        ("progress", 4.5, 200, 200, 2),  # epoch 2's training ended; its validation (2 s) runs
    )
    assert eta_s(marks, 4.5, 2) == pytest.approx(2.0)
    assert eta_s(marks, 5.5, 2) == pytest.approx(1.0)
    assert eta_s(marks, 9.0, 2) == 0.0  # later than expected: never negative


def test_a_resumed_run_counts_its_own_epochs_only():
    # resumed at epoch 3 of 4: one span of 50 steps in 1 s; epochs 3 and 4 still to validate, 1 pause
    marks = _marks(("progress", 0.0, 601, 800, 3), ("progress", 1.0, 651, 800, 3))
    assert eta_s(marks, 1.0, 4) == pytest.approx(149 / 50.0)


def test_timing_repeats_after_the_last_epoch_are_counted():
    marks = _marks(("progress", 0.0, 1, 100, 1), ("progress", 1.0, 51, 100, 1))
    assert eta_s(marks, 1.0, 1, tail_steps=150) == pytest.approx((49 + 150) / 50.0)
    assert tail_steps({"perf": {"repeats": 3, "repeat_steps": 50}}) == 150
    assert tail_steps({"perf": {"repeats": 1, "repeat_steps": 50}}) == 0
    assert tail_steps({"perf": {"repeats": 3, "repeat_steps": 50}, "train": {"parallel": {"workers": 2}}}) == 0


def test_unknown_before_a_steady_span():
    assert eta_s(EpochMarks(), 0.0, 4) is None
    assert eta_s(_marks(("progress", 0.0, 1, 100, 1)), 0.0, 4) is None  # one progress: no span yet
    assert record_eta(JobRecord("train-001", "train", config={})) is None


def test_the_record_marks_only_main_rank_step_progress():
    record = JobRecord("train-001", "train", config={"train": {"epochs": 1}})
    steps = {"type": "steps", "epoch": 1, "first_step": 1, "loss": [1.0, 1.0], "step_ms": [5.0, 5.0]}
    events = [
        dict(steps, batch_size=8, phase="steady"),
        {"type": "progress", "done": 1, "total": 10, "unit": "step", "phase": "train epoch 1/1"},
        {"type": "progress", "done": 4, "total": 10, "unit": "step", "phase": "train epoch 1/1", "rank": 1},
        {"type": "progress", "done": 0, "total": 3, "unit": "repeat", "phase": "timing repeats"},
        {"type": "progress", "done": 3, "total": 10, "unit": "step", "phase": "train epoch 1/1"},
    ]
    record.ingest([dict(ev, v=1, seq=i, t=10.0 + i) for i, ev in enumerate(events)])
    assert record.epoch_marks.spans() == [(3.0, 2)]  # t 11 -> 14, steps 1 -> 3
