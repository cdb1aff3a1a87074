"""The Training view: its whole-run loss history stays bounded and keeps the trend; its ETA reads the run's config."""

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


def _followed(cfg, progress):
    """A Training view following one train job: a steady step, then progress lines (t, done, total)."""
    from types import SimpleNamespace

    from workbench.fold.record import JobRecord
    from workbench.views.training import TrainingView

    record = JobRecord("train-001", "train", 1.0, config=cfg)
    events = [{"type": "steps", "epoch": 1, "first_step": 1, "loss": [1.0], "step_ms": [9.0], "phase": "steady"}]
    events += [
        {"type": "progress", "done": d, "total": n, "unit": "step", "phase": "train", "t": t} for t, d, n in progress
    ]
    record.ingest([dict({"t": 0.0}, **ev, v=1, seq=i) for i, ev in enumerate(events)])
    model = SessionModel()
    model.add(record)
    view = TrainingView(model)
    view.ingest(SimpleNamespace(jid="train-001", kind="train"), [])
    return view


def test_eta_reads_the_runs_epochs_and_timing_repeats_from_its_config():
    # 100 steps in 1 s after the first; 300 left; 2 epochs not validated (none measured yet); 150 repeat steps
    cfg = {"train": {"epochs": 4}, "perf": {"repeats": 3, "repeat_steps": 50}}
    view = _followed(cfg, [(10.0, 1, 400), (11.0, 101, 400)])
    assert view.eta_s() == pytest.approx((299 + 150) / 100.0)
    assert _followed({}, [(10.0, 1, 400), (11.0, 101, 400)]).eta_s() == pytest.approx(2.99)


def test_eta_is_unknown_without_steady_steps_or_progress():
    from workbench.views.training import TrainingView

    assert TrainingView(SessionModel()).eta_s() is None
