"""Unit tests for workbench.analysis.tensordiff: tolerances, hand-computed diffs, NaN/Inf, flips, histogram."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from workbench.analysis.tensordiff import (
    DEFAULT_TOLERANCES,
    EXACT,
    REL_RULE,
    class_flips,
    diff_tensors,
    first_failure,
    histogram_abs_diff,
    tolerances_for,
)

FIELDS = {
    "name",
    "shape",
    "dtype",
    "atol",
    "rtol",
    "max_abs",
    "max_rel",
    "rel_rule",
    "mean_abs",
    "mismatch_ratio",
    "worst_index",
    "worst_rule",
    "max_abs_index",
    "worst",
    "cosine",
    "nan_ref",
    "nan_cand",
    "inf_ref",
    "inf_cand",
    "passed",
    "status",
    "reason",
}


def as_json(result):
    """Round-trip through strict JSON (no NaN, no numpy scalars) and return the decoded value."""
    return json.loads(json.dumps(result, allow_nan=False))


def f32(values):
    return np.array(values, dtype=np.float32)


# --- tolerances -------------------------------------------------------------------------------


def test_default_tolerances_match_torch_testing():
    assert DEFAULT_TOLERANCES["float32"] == (1.3e-6, 1e-5)
    assert DEFAULT_TOLERANCES["float16"] == (1e-3, 1e-5)
    assert DEFAULT_TOLERANCES["bfloat16"] == (1.6e-2, 1e-5)
    assert DEFAULT_TOLERANCES["float64"] == (1e-7, 1e-7)
    assert DEFAULT_TOLERANCES["float32"].rtol == 1.3e-6 and DEFAULT_TOLERANCES["float32"].atol == 1e-5


def test_tolerances_pick_the_looser_dtype():
    assert tolerances_for("float32", "float16") == (1e-3, 1e-5)
    assert tolerances_for(np.float16, np.dtype("float32")) == (1e-3, 1e-5)
    assert tolerances_for("Float16", "bfloat16") == (1.6e-2, 1e-5)  # MindSpore spells it Float16
    # Component by component: float64's atol 1e-7 loses to float32's 1e-5.
    assert tolerances_for("float64", "float32") == (1.3e-6, 1e-5)
    assert tolerances_for("float64", "float64") == (1e-7, 1e-7)


def test_tolerances_override_per_component():
    assert tolerances_for("float32", "float16", {"atol": 0.5}) == (1e-3, 0.5)
    assert tolerances_for("float32", "float32", {"rtol": 0.0, "atol": None}) == (0.0, 1e-5)
    assert tolerances_for("float32", "float32", (0.25, 0.125)) == (0.25, 0.125)


def test_tolerances_errors_name_the_problem():
    with pytest.raises(ValueError, match="complex64"):
        tolerances_for("float32", "complex64")
    with pytest.raises(ValueError, match="unknown keys"):
        tolerances_for("float32", "float32", {"atl": 1e-3})
    with pytest.raises(ValueError, match="atol"):
        tolerances_for("float32", "float32", {"atol": -1.0})


def test_integer_tensors_compare_exactly():
    assert tolerances_for("int32", "int64") == EXACT
    result = diff_tensors("labels", np.array([1, 2], dtype=np.int32), np.array([1, 3], dtype=np.int32))
    assert result["atol"] == 0.0 and result["rtol"] == 0.0
    assert result["passed"] is False
    assert result["mismatch_ratio"] == 0.5


# --- diff_tensors: numbers --------------------------------------------------------------------


def test_exact_equality_passes_with_zero_difference():
    ref = f32([[1.5, -2.0], [3.0, 4.0]])
    result = as_json(diff_tensors("fc1.weight", ref, ref.copy()))
    assert set(result) == FIELDS
    assert result["max_abs"] == 0.0
    assert result["max_rel"] == 0.0
    assert result["mean_abs"] == 0.0
    assert result["mismatch_ratio"] == 0.0
    assert result["cosine"] == pytest.approx(1.0, abs=1e-12)
    assert result["passed"] is True and result["status"] == "observed-pass"
    assert result["reason"] is None
    assert result["shape"] == [2, 2]
    assert result["dtype"] == {"ref": "float32", "cand": "float32"}
    assert (result["rtol"], result["atol"]) == (1.3e-6, 1e-5)
    assert result["rel_rule"] == REL_RULE


def test_known_worst_index_in_two_dimensions():
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    cand = ref.copy()
    cand[1, 2] = 5.5
    result = as_json(diff_tensors("logits", ref, cand))
    assert result["worst_index"] == [1, 2]
    assert result["worst"] == {"ref": 5.0, "cand": 5.5}
    assert result["max_abs"] == 0.5
    assert result["max_rel"] == 0.1  # 0.5 / 5
    assert result["mean_abs"] == pytest.approx(0.5 / 6)
    assert result["mismatch_ratio"] == pytest.approx(1 / 6)
    assert result["passed"] is False and result["status"] == "observed-fail"
    assert "1 of 6 elements" in result["reason"]


def test_worst_is_largest_excess_not_largest_difference_when_failing():
    # Tolerances 0.1 + 0.01*|ref| = [1.1, 0.1]: element 0 (diff 1.0) passes, element 1 (diff 0.5) fails.
    result = diff_tensors("x", np.array([100.0, 0.0]), np.array([101.0, 0.5]), atol=0.1, rtol=0.01)
    assert result["worst_index"] == [1]
    assert result["worst"] == {"ref": 0.0, "cand": 0.5}
    assert result["max_abs"] == 1.0
    assert result["max_rel"] == pytest.approx(0.01)  # ref == 0 element excluded
    assert result["mean_abs"] == 0.75
    assert result["cosine"] == pytest.approx(101 / math.sqrt(101**2 + 0.25))
    assert result["mismatch_ratio"] == 0.5
    assert (result["atol"], result["rtol"]) == (0.1, 0.01)


def test_worst_is_largest_difference_when_passing():
    # Both inside tolerance; the largest excess would be element 1, the largest |diff| is element 0.
    result = diff_tensors("x", np.array([100.0, 0.0]), np.array([101.0, 0.05]), atol=0.1, rtol=0.01)
    assert result["passed"] is True
    assert result["worst_index"] == [0]
    assert result["worst"] == {"ref": 100.0, "cand": 101.0}


def test_zero_reference_uses_max_abs_as_max_rel_and_no_cosine():
    cand = f32([0.0, 1e-6, 2e-6])
    result = as_json(diff_tensors("bias", np.zeros(3, dtype=np.float32), cand))
    assert result["max_abs"] == float(np.float32(2e-6))
    assert result["max_rel"] == result["max_abs"]
    assert result["cosine"] is None  # the reference norm is 0
    assert result["passed"] is True  # every |diff| <= atol 1e-5
    assert result["worst_index"] == [2]


def test_all_zero_on_both_sides_passes_without_cosine():
    result = as_json(diff_tensors("zeros", np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32)))
    assert result["passed"] is True
    assert result["max_abs"] == 0.0 and result["max_rel"] == 0.0
    assert result["cosine"] is None


def test_zero_reference_elements_excluded_from_max_rel():
    result = diff_tensors("b", np.array([0.0, 2.0]), np.array([1.0, 3.0]))
    assert result["max_abs"] == 1.0
    assert result["max_rel"] == 0.5


def test_fp16_candidate_gets_fp16_tolerance():
    ref = f32([1.0, -2.0])
    cand = np.array([1.0009765625, -2.0], dtype=np.float16)  # one fp16 ulp above 1.0
    result = diff_tensors("relu_out", ref, cand)
    assert result["dtype"] == {"ref": "float32", "cand": "float16"}
    assert (result["rtol"], result["atol"]) == (1e-3, 1e-5)
    assert result["max_abs"] == 0.0009765625
    assert result["passed"] is True  # 0.00098 <= 1e-5 + 1e-3 * 1
    # Same numbers judged by float32 defaults fail: the dtype choice matters.
    strict = diff_tensors("relu_out", ref, cand.astype(np.float32))
    assert strict["passed"] is False


def test_dtype_label_for_cast_candidate():
    result = diff_tensors("h", f32([1.0]), f32([1.01]), cand_dtype="bfloat16")
    assert result["dtype"]["cand"] == "bfloat16"
    assert result["rtol"] == 1.6e-2
    assert result["passed"] is True


def test_scalar_and_empty_tensors():
    scalar = diff_tensors("loss", np.float32(2.0), np.float32(2.5))
    assert scalar["shape"] == [] and scalar["worst_index"] == [] and scalar["passed"] is False
    empty = diff_tensors("none", np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32))
    assert empty["passed"] is True and empty["mismatch_ratio"] == 0.0
    assert "0 elements" in empty["reason"]


# --- diff_tensors: NaN and Inf ----------------------------------------------------------------


def test_nan_in_same_place_on_both_sides_is_a_mismatch():
    ref = f32([1.0, np.nan, 3.0])
    cand = f32([1.0, np.nan, 3.0])
    result = as_json(diff_tensors("grad", ref, cand))
    assert result["passed"] is False and result["status"] == "observed-fail"
    assert result["nan_ref"] == 1 and result["nan_cand"] == 1
    assert result["mismatch_ratio"] == pytest.approx(1 / 3)
    assert result["worst_index"] == [1]
    assert result["worst"] == {"ref": "nan", "cand": "nan"}
    assert result["max_abs"] == 0.0  # over the two finite pairs only
    assert "nan_ref 1" in result["reason"]


@pytest.mark.parametrize("side", ["ref", "cand"])
def test_nan_on_one_side_fails(side):
    clean, dirty = f32([1.0, 2.0, 3.0, 4.0]), f32([1.0, 2.0, np.nan, 4.0])
    ref, cand = (dirty, clean) if side == "ref" else (clean, dirty)
    result = as_json(diff_tensors("w", ref, cand))
    assert result["passed"] is False
    assert result["worst_index"] == [2]
    assert result[f"nan_{side}"] == 1
    assert result["nan_cand" if side == "ref" else "nan_ref"] == 0
    assert result["mismatch_ratio"] == 0.25
    assert result["worst"][side] == "nan"


def test_inf_against_finite_fails_and_inf_against_same_inf_matches():
    result = as_json(diff_tensors("a", f32([1.0, 2.0]), f32([np.inf, 2.0])))
    assert result["passed"] is False
    assert result["inf_cand"] == 1 and result["inf_ref"] == 0
    assert result["worst"] == {"ref": 1.0, "cand": "inf"}

    same = as_json(diff_tensors("b", f32([-np.inf, 2.0]), f32([-np.inf, 2.0])))
    assert same["passed"] is True
    assert same["inf_ref"] == 1 and same["inf_cand"] == 1
    assert "inf_ref 1" in same["reason"]  # a pass with infinities still says so

    opposite = diff_tensors("c", f32([np.inf, 2.0]), f32([-np.inf, 2.0]))
    assert opposite["passed"] is False and opposite["worst_index"] == [0]


def test_all_nan_has_no_statistics_and_fails():
    result = as_json(diff_tensors("d", f32([np.nan, np.nan]), f32([np.nan, np.nan])))
    assert result["passed"] is False
    assert result["max_abs"] is None and result["cosine"] is None
    assert result["mismatch_ratio"] == 1.0
    assert result["nan_ref"] == 2 and result["nan_cand"] == 2


# --- diff_tensors: structure problems ---------------------------------------------------------


def test_shape_mismatch_fails_without_numbers():
    ref, cand = np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)
    result = as_json(diff_tensors("fc2.weight", ref, cand))
    assert set(result) == FIELDS
    assert result["passed"] is False and result["status"] == "observed-fail"
    assert result["shape"] == {"ref": [2, 3], "cand": [3, 2]}
    assert result["max_abs"] is None and result["mismatch_ratio"] is None
    assert result["reason"] == "shape mismatch: reference [2, 3] vs candidate [3, 2]"


def test_one_sided_tensors_fail_and_are_not_skipped():
    only_ref = as_json(diff_tensors("conv1.bias", f32([1.0, 2.0]), None))
    assert set(only_ref) == FIELDS
    assert only_ref["status"] == "observed-fail" and only_ref["passed"] is False
    assert only_ref["reason"] == "present only in reference"
    assert only_ref["shape"] == [2]
    assert only_ref["dtype"] == {"ref": "float32", "cand": None}

    only_cand = diff_tensors("extra", None, f32([1.0]))
    assert only_cand["status"] == "observed-fail"
    assert only_cand["reason"] == "present only in candidate"

    with pytest.raises(ValueError, match="both"):
        diff_tensors("ghost", None, None)


# --- class flips, first failure, histogram ----------------------------------------------------


def test_class_flips():
    ref = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 5.0], [0.0, 0.0, 1.0]])
    cand = np.array([[2.0, 1.0, 0.0], [4.0, 3.0, 1.0], [1.0, 0.0, 5.0], [1.0, 0.0, 0.0]])
    flips = as_json(class_flips(ref, cand))
    assert flips["count"] == 2
    assert flips["n"] == 4
    assert flips["indices"] == [1, 3]
    assert flips["pairs"] == [
        {"index": 1, "ref_class": 1, "cand_class": 0},
        {"index": 3, "ref_class": 2, "cand_class": 0},
    ]
    assert class_flips(ref, ref)["count"] == 0
    with pytest.raises(ValueError, match="same shape"):
        class_flips(ref, cand[:2])


def test_first_failure_in_forward_order():
    good = diff_tensors("a", f32([1.0]), f32([1.0]))
    bad = diff_tensors("b", f32([1.0]), f32([2.0]))
    missing = diff_tensors("c", f32([1.0]), None)
    assert first_failure([good, good, bad, missing]) == 2
    assert first_failure([good, missing, bad]) == 1
    assert first_failure([good, good]) is None
    assert first_failure([]) is None
    with pytest.raises(ValueError, match="#1"):
        first_failure([good, {"name": "broken"}])


def test_histogram_log_bins_with_zeros_and_nonfinite_apart():
    ref = np.zeros(7)
    cand = np.array([0.0, 0.0, 1e-3, 1e-2, 1e-1, 1.0, np.nan])
    hist = as_json(histogram_abs_diff(ref, cand, bins=3))
    assert hist["zeros"] == 2
    assert hist["nonfinite"] == 1
    assert hist["counts"] == [1, 1, 2]  # [1e-3,1e-2) [1e-2,1e-1) [1e-1,1]
    assert hist["edges"] == pytest.approx([1e-3, 1e-2, 1e-1, 1.0])
    assert sum(hist["counts"]) + hist["zeros"] + hist["nonfinite"] == 7


def test_histogram_single_value_and_all_equal():
    # One distinct value gets one decade centred on it: 3 bins put it in the middle one.
    one = histogram_abs_diff(np.zeros(3), np.full(3, 0.5), bins=3)
    assert one["counts"] == [0, 3, 0]
    assert one["edges"][0] == pytest.approx(0.5 / math.sqrt(10))
    assert one["edges"][-1] == pytest.approx(0.5 * math.sqrt(10))
    equal = histogram_abs_diff(np.ones(4), np.ones(4))
    assert equal == {"edges": [], "counts": [], "zeros": 4, "nonfinite": 0}
    with pytest.raises(ValueError, match="shape mismatch"):
        histogram_abs_diff(np.ones(3), np.ones(4))


def test_the_largest_abs_difference_is_indexed_apart_from_the_worst_excess():
    # element 0 differs most in absolute terms but is inside its (relative) tolerance; element 1 is the mismatch
    ref, cand = f32([1000.0, 1.0]), f32([1000.5, 1.1])
    result = as_json(diff_tensors("t", ref, cand, atol=1e-5, rtol=1e-3))
    assert not result["passed"]
    assert result["max_abs_index"] == [0] and result["max_abs"] == pytest.approx(0.5)
    assert result["worst_index"] == [1]
