"""The monitor's per-parameter rows from the weights before and after a step and its gradients (jobs/train/monitor.rows_from)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from jobs.train import monitor
from jobs.train.monitor import PAGE, nonfinite_grads, rows_from, spaced_like


def test_norms_ratio_and_share():
    before = [np.array([3.0, 4.0], np.float32), np.array([1.0], np.float16)]
    after = [np.array([3.0, 4.0 + 0.5], np.float32), np.array([1.0], np.float16)]
    grads = [np.array([0.0, 2.0], np.float32), np.array([np.nan], np.float16)]
    rows = rows_from(before, after, grads)
    assert rows["weight_norm"][0] == float("%.5g" % math.hypot(3.0, 4.5))
    assert rows["grad_norm"][0] == 2.0 and rows["update_ratio"][0] == float("%.5g" % (0.5 / math.hypot(3.0, 4.5)))
    assert rows["nonfinite"] == [0.0, 1.0] and math.isinf(rows["grad_norm"][1]) and rows["update_ratio"][1] == 0.0
    assert nonfinite_grads(rows)
    assert before[0].tolist() == [0.0, 0.5]  # the float32 buffer now holds the update (the monitor reuses it)


def test_huge_finite_gradient_is_not_called_non_finite():
    g = np.full(4, 1e30, np.float32)  # its float32 sum of squares overflows; the values are finite
    rows = rows_from([np.ones(4, np.float32)], [np.ones(4, np.float32)], [g])
    assert rows["nonfinite"] == [0.0] and rows["grad_norm"] == [float("%.5g" % 2e30)]
    assert not nonfinite_grads(rows)


def test_copy_buffers_lie_half_a_page_from_their_source():
    for shape in ((128, 784), (10,), ()):
        for source in (0, 16, 1568, 4080, 123456):
            buf = spaced_like(shape, source)
            assert buf.shape == shape and buf.dtype == np.float32 and buf.flags.writeable
            assert (buf.ctypes.data - source) % PAGE == PAGE // 2


def test_grad_scale_multiplies_the_gradient_norm_only():
    """The monitor passes m_t - b1 m_(t-1) with grad_scale 1 / (1 - b1): only the gradient norm is scaled."""
    g = np.array([3.0, 4.0], np.float32)
    plain = rows_from([np.zeros(2, np.float32)], [np.ones(2, np.float32)], [g])
    scaled = rows_from([np.zeros(2, np.float32)], [np.ones(2, np.float32)], [g], 10.0)
    assert plain["grad_norm"] == [5.0] and scaled["grad_norm"] == [50.0]
    assert {k: v for k, v in scaled.items() if k != "grad_norm"} == {k: v for k, v in plain.items() if k != "grad_norm"}


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40))
def test_five_digits_of_every_value_at_once_are_those_of_each_alone(values):
    """_short formats all the rows' values in one go: the same numbers as float("%.5g" % v) one by one."""
    got, want = monitor._short(values), [float("%.5g" % v) for v in values]
    assert [repr(v) for v in got] == [repr(v) for v in want]
