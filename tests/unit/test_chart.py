"""The Training charts' scale and window figures: compile and warm-up cannot squash the scale; one window, one set of figures."""

import pytest

from screens.widgets.spark import CLIPPED, bar_rows
from workbench.fold.record import JobRecord
from workbench.views.chart import steady_range, window_stats


def test_the_scale_comes_from_the_points_after_compile_and_warm_up():
    # 4 unsteady steps (loss 9, 8, 7, 0.2), then steady losses between 0.5 and 1.0
    points = [9.0, 8.0, 7.0, 0.2, 1.0, 0.8, 0.5]
    scale = steady_range(points, unsteady_steps=4)
    assert (scale.lo, scale.hi, scale.clipped, scale.scaled_from) == (0.2, 1.0, 3, 4)  # 0.2 is below: no clip


def test_a_point_holding_any_unsteady_step_is_left_out_of_the_scale():
    # a point = mean of 4 steps: 5 unsteady steps reach into the second point
    scale = steady_range([5.0, 3.0, 1.0, 0.9], unsteady_steps=5, per_point=4)
    assert (scale.hi, scale.clipped, scale.scaled_from) == (1.0, 2, 2)


def test_while_only_unsteady_points_exist_they_set_the_scale():
    scale = steady_range([9.0, 8.0], unsteady_steps=5)
    assert (scale.lo, scale.hi, scale.clipped, scale.scaled_from) == (8.0, 9.0, 0, 0)
    assert steady_range([], 3) is None


def test_the_old_full_range_squashes_the_curve_and_the_steady_scale_does_not():
    points = [9.0, 1.0, 0.9, 0.8, 0.7, 0.6]
    full = bar_rows(points, 2)
    steady = bar_rows(points, 2, (0.6, 1.0))
    # five steady points: two bar heights under the full range (squashed), five under the steady one
    assert len(set(zip(full[0][1:], full[1][1:]))) == 2
    assert len(set(zip(steady[0][1:], steady[1][1:]))) == 5
    assert steady[0][0] == CLIPPED and full[0][0] != CLIPPED


def test_window_figures_use_the_jobs_rules():
    stats = window_stats([float(v) for v in range(1, 101)], size=60)  # the last 60: 41..100
    assert (stats.n, stats.min, stats.max) == (60, 41.0, 100.0)
    assert stats.median == pytest.approx(70.5)  # mean of the two middle values, as the job's median
    assert stats.p95 == 97.0  # nearest rank: ceil(0.95 * 60) = 57th smallest
    assert stats.window == "last 60 steady"
    assert window_stats([]).median is None


def test_the_record_knows_where_steady_steps_begin_on_both_fold_paths():
    line = {"type": "steps", "epoch": 1, "first_step": 1, "batch_size": 8, "v": 1, "t": 1.0}
    bulk, each = JobRecord("a", "train"), JobRecord("b", "train")
    bulk.ingest(
        [
            dict(line, seq=0, loss=[2.0], step_ms=[900.0], phase="compile"),
            dict(line, seq=1, first_step=2, loss=[1.5, 1.2], step_ms=[5.0, 5.0], phase="warmup"),
            dict(line, seq=2, first_step=4, loss=[1.0, 0.9], step_ms=[4.0, 4.0], phase="steady"),
        ]
    )
    phases = ["compile", "warmup", "warmup", "steady", "steady"]
    each.ingest(
        [
            {
                "type": "step",
                "v": 1,
                "seq": i,
                "t": 1.0,
                "epoch": 1,
                "step": i + 1,
                "loss": 1.0,
                "step_ms": 5.0,
                "phase": p,
            }
            for i, p in enumerate(phases)
        ]
    )
    assert bulk.steps.steady_from == each.steps.steady_from == 3
    assert list(bulk.steps.step_ms) == [4.0, 4.0]  # the step chart's series holds no compile or warm-up step
