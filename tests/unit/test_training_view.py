"""The Training view: its whole-run loss history stays bounded and keeps the trend; its ETA counts validations."""

import pytest

from workbench.fold.record import SessionModel
from workbench.views.training import WholeRunHistory


def test_history_is_bounded_and_averages_neighbours():
    h = WholeRunHistory(max_points=8)
    for i in range(100):
        h.append(float(i))
    assert len(h) < 8 and h.per_point == 16
    # each point is the mean of per_point consecutive steps, in order
    assert h[0] == sum(range(16)) / 16.0
    assert list(h) == sorted(h)


def test_short_history_keeps_every_step():
    h = WholeRunHistory(max_points=8)
    for v in (3.0, 2.0, 1.0):
        h.append(v)
    assert list(h) == [3.0, 2.0, 1.0] and h.per_point == 1


def _followed(epochs_planned, epoch_times, done, total, step_ms=10.0):
    """A Training view following one train job: steady steps, a progress line and ended epochs."""
    from types import SimpleNamespace

    from workbench.fold.record import JobRecord
    from workbench.views.training import TrainingView

    record = JobRecord("train-001", "train", 1.0, config={"train": {"epochs": epochs_planned}})
    events = [
        {
            "type": "steps",
            "epoch": 1,
            "first_step": 0,
            "loss": [1.0] * 20,
            "step_ms": [step_ms] * 20,
            "batch_size": 64,
            "phase": "steady",
        },
        {"type": "progress", "done": done, "total": total, "unit": "steps", "phase": "train"},
    ]
    events += [
        {"type": "epoch", "epoch": n + 1, "train_loss": 1.0, "samples": 6400, "epoch_s": s}
        for n, s in enumerate(epoch_times)
    ]
    record.ingest([dict(ev, v=1, seq=i, t=1.0 + i) for i, ev in enumerate(events)])
    model = SessionModel()
    model.add(record)
    view = TrainingView(model)
    view.ingest(SimpleNamespace(jid="train-001", kind="train"), [])
    return view


def test_eta_adds_one_validation_per_epoch_left():
    # 4 epochs of 100 steps at 10 ms: an epoch's steps take 1 s, so epochs of 3.0 s and 3.4 s spent
    # 2.0 s and 2.4 s validating (mean 2.2 s); 250 steps (2.5 s) and 2 validations (4.4 s) are left.
    view = _followed(4, [3.0, 3.4], done=150, total=400)
    assert view.validation_s(10.0, 100.0) == pytest.approx(2.2)
    assert view.eta_s() == pytest.approx(2.5 + 2 * 2.2)


def test_eta_without_an_ended_epoch_or_a_plan_is_the_steps_left():
    assert _followed(4, [], done=100, total=400).eta_s() == pytest.approx(3.0)
    assert _followed(None, [3.0], done=100, total=400).eta_s() == pytest.approx(3.0)  # no epoch count: no validation


def test_eta_never_counts_negative_validation_or_steps():
    view = _followed(2, [0.5], done=500, total=400)  # an epoch faster than its steps; more done than planned
    assert view.validation_s(10.0, 200.0) == 0.0
    assert view.eta_s() == 0.0


def test_eta_is_unknown_without_steady_steps_or_progress():
    from workbench.views.training import TrainingView

    assert TrainingView(SessionModel()).eta_s() is None
