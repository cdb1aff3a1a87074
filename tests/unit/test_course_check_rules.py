"""The pure rules of the course-check jobs: the overfit curve's bound, the first differing step, the repeats' quartiles."""

from __future__ import annotations

import pytest

from jobs.overfit import CURVE_POINTS, thin_curve
from jobs.resume.job import first_difference
from jobs.train.repeats import quartiles


def test_a_short_curve_keeps_every_step():
    assert thin_curve([3.0, 2.0, 1.0]) == [[1, 3.0], [2, 2.0], [3, 1.0]]


def test_a_long_curve_is_bounded_and_keeps_both_ends():
    losses = [float(i) for i in range(1000)]
    curve = thin_curve(losses)
    assert len(curve) == CURVE_POINTS
    assert curve[0] == [1, 0.0] and curve[-1] == [1000, 999.0]
    assert [p[0] for p in curve] == sorted({p[0] for p in curve})


def test_first_difference_names_the_first_step_not_bit_identical():
    a = {1: 0.5, 2: 0.25, 3: 0.125}
    assert first_difference(a, dict(a), [1, 2, 3]) is None
    assert first_difference(a, {1: 0.5, 2: 0.25000001, 3: 0.0}, [1, 2, 3]) == (2, 0.25, 0.25000001)
    assert first_difference(a, {1: 0.5}, [1, 2, 3]) == (2, 0.25, None)


def test_quartiles_of_repeat_medians():
    q = quartiles([4.0, 1.0, 3.0, 2.0, 5.0])
    assert q == {"q1": pytest.approx(2.0), "q3": pytest.approx(4.0)}
