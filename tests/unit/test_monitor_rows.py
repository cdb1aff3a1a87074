"""The monitor's per-parameter rows (jobs/train/monitor.rows_from) and their batches (Batch): five digits and flags at the flush."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.train import monitor
from jobs.train.monitor import PAGE, nonfinite_grads, rows_from, spaced_like
from workbench.analysis import trainstate


def test_norms_ratio_and_share():
    before = [np.array([3.0, 4.0], np.float32), np.array([1.0], np.float16)]
    after = [np.array([3.0, 4.0 + 0.5], np.float32), np.array([1.0], np.float16)]
    grads = [np.array([0.0, 2.0], np.float32), np.array([np.nan], np.float16)]
    rows = rows_from(before, after, grads)
    assert rows["weight_norm"][0] == pytest.approx(math.hypot(3.0, 4.5), rel=1e-7)  # unrounded: Batch rounds
    assert rows["grad_norm"][0] == 2.0 and rows["update_ratio"][0] == pytest.approx(
        0.5 / math.hypot(3.0, 4.5), rel=1e-7
    )
    assert rows["nonfinite"] == [0.0, 1.0] and math.isinf(rows["grad_norm"][1]) and rows["update_ratio"][1] == 0.0
    assert nonfinite_grads(rows)
    assert before[0].tolist() == [0.0, 0.5]  # the float32 buffer now holds the update (the monitor reuses it)


def test_huge_finite_gradient_is_not_called_non_finite():
    g = np.full(4, 1e30, np.float32)  # its float32 sum of squares overflows; the values are finite
    rows = rows_from([np.ones(4, np.float32)], [np.ones(4, np.float32)], [g])
    assert rows["nonfinite"] == [0.0] and rows["grad_norm"][0] == pytest.approx(2e30, rel=1e-6)
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


def _rows(grad: float, ratio: float = 1e-3, nonfinite: float = 0.0) -> dict:
    return {
        "weight_norm": [1.234567891, 2.0],
        "grad_norm": [grad, 0.5],
        "update_ratio": [ratio, 1e-3],
        "nonfinite": [nonfinite, 0.0],
    }


def test_a_batch_becomes_one_events_columns_in_five_digits_and_is_folded_at_the_step_each_flag_held():
    batch, state = monitor.Batch(), trainstate.TrainState()
    grads = [1.0, 1.1, 0.9, 1.0, 1.05, 1.0, 123.456789]  # the seventh sample explodes (over 10x the median)
    for i, g in enumerate(grads, 1):
        batch.add(10 * i, 1, dict(_rows(g), skipped=False))
    assert state.count == 0  # nothing folded between steps
    fields = batch.take(["w", "b"], state)
    assert len(batch) == 0 and state.count == 7
    assert fields["global_step"] == [10, 20, 30, 40, 50, 60, 70] and fields["epoch"] == [1] * 7
    assert fields["weight_norm"][0] == [1.2346, 2.0] and fields["grad_norm"][6] == [123.46, 0.5]
    assert fields["skipped"] == [False] * 7
    assert [(f["flag"], f["param"], f["global_step"], f["value"]) for f in state.flags] == [
        ("exploding", "w", 70, 123.46)
    ]


@given(
    st.lists(
        st.tuples(
            st.one_of(st.floats(min_value=0, max_value=1e6), st.just(float("nan")), st.just(float("inf"))),
            st.floats(min_value=0, max_value=1.0),
            st.booleans(),
        ),
        max_size=60,
    ),
    st.lists(st.integers(min_value=1, max_value=25), min_size=1, max_size=10),
)
def test_flags_folded_by_batches_are_those_folded_sample_by_sample(samples, cuts):
    """However the samples are cut into flushes, the state's flags and counts are those of adding each (rounded) alone."""
    one_by_one, batched, batch = trainstate.TrainState(), trainstate.TrainState(), monitor.Batch()
    cut = itertools.cycle(cuts)
    left = next(cut)
    for i, (grad, ratio, skipped) in enumerate(samples, 1):
        rows = _rows(grad, ratio, 0.5 if math.isnan(grad) else 0.0)
        short = {f: monitor._short(v) for f, v in rows.items()}
        one_by_one.add(
            {
                "global_step": i,
                "epoch": 1,
                "rows": {n: {f: short[f][j] for f in short} for j, n in enumerate("wb")},
                "skipped": skipped,
            }
        )
        batch.add(i, 1, dict(rows, skipped=skipped))
        left -= 1
        if not left:
            batch.take(["w", "b"], batched)
            left = next(cut)
    batch.take(["w", "b"], batched)
    assert batched.flags == one_by_one.flags and batched.flag_counts == one_by_one.flag_counts
    assert (batched.count, batched.skipped, batched.last_step) == (
        one_by_one.count,
        one_by_one.skipped,
        one_by_one.last_step,
    )
