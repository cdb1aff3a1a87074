"""Unit tests for workbench.analysis.metrics: hand-computed confusion, F1, weighted loss and step timing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.analysis.metrics import (
    classification_report,
    confusion_matrix,
    most_confused_pairs,
    step_stats,
    weakest_class,
    weighted_mean,
)

# Three classes; class 2 is present (support 2) but never predicted.
Y_TRUE = [0, 0, 1, 1, 2, 2]
Y_PRED = [0, 1, 1, 1, 0, 0]


def test_confusion_matrix_rows_true_cols_pred():
    conf = confusion_matrix(Y_TRUE, Y_PRED, n_classes=3)
    assert conf.dtype == np.int64
    assert conf.tolist() == [[1, 1, 0], [0, 2, 0], [2, 0, 0]]


def test_confusion_matrix_default_ten_classes_and_int32_input():
    conf = confusion_matrix(np.array([9, 3, 3], dtype=np.int32), np.array([9, 3, 5], dtype=np.int32))
    assert conf.shape == (10, 10)
    assert conf[9, 9] == 1 and conf[3, 3] == 1 and conf[3, 5] == 1
    assert int(conf.sum()) == 3


@pytest.mark.parametrize(
    "y_true, y_pred, message",
    [
        ([0, 1], [0], "same length"),
        ([0, 3], [0, 1], "0..2, got min 0, max 3"),
        ([0, -1], [0, 1], "got min -1"),
        ([0.0, 1.0], [0, 1], "integer class indices"),
    ],
)
def test_confusion_matrix_rejects_bad_labels(y_true, y_pred, message):
    with pytest.raises(ValueError, match=message):
        confusion_matrix(y_true, y_pred, n_classes=3)


def test_report_zero_division_for_never_predicted_class():
    report = classification_report(confusion_matrix(Y_TRUE, Y_PRED, n_classes=3))
    # class 0: tp 1, predicted 3, support 2 -> P 1/3, R 1/2, F1 = (2/6)/(5/6) = 0.4
    # class 1: tp 2, predicted 3, support 2 -> P 2/3, R 1,   F1 = (4/3)/(5/3) = 0.8
    # class 2: never predicted -> P 0 (zero division), R 0/2 = 0, F1 0
    assert report["accuracy"] == pytest.approx(0.5)
    pc = report["per_class"]
    assert pc[0] == pytest.approx({"precision": 1 / 3, "recall": 0.5, "f1": 0.4, "support": 2})
    assert pc[1] == pytest.approx({"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2})
    assert pc[2] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    assert report["macro_f1"] == pytest.approx((0.4 + 0.8 + 0.0) / 3)
    assert "never predicted" in report["zero_division"]
    assert set(report) == {"accuracy", "macro_f1", "per_class", "zero_division"}


def test_report_absent_class_counts_in_macro_f1():
    # Class 3 never occurs and is never predicted: recall 0 by rule, F1 0, still averaged.
    report = classification_report(confusion_matrix([0, 1, 2], [0, 1, 2], n_classes=4))
    assert report["accuracy"] == 1.0
    assert report["per_class"][3] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert report["macro_f1"] == pytest.approx(0.75)


def test_report_absent_but_predicted_class_has_zero_precision():
    # True labels never contain class 1, yet it is predicted once.
    report = classification_report(confusion_matrix([0, 0], [0, 1], n_classes=2))
    assert report["per_class"][1] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert report["per_class"][0] == pytest.approx({"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2})


def test_report_is_plain_json():
    report = classification_report(confusion_matrix(Y_TRUE, Y_PRED, n_classes=3))
    text = json.dumps(report, allow_nan=False)
    assert json.loads(text) == report
    assert type(report["accuracy"]) is float
    assert type(report["per_class"][0]["support"]) is int


def test_report_rejects_empty_and_non_square():
    with pytest.raises(ValueError, match="no samples"):
        classification_report(np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="square"):
        classification_report(np.zeros((2, 3), dtype=np.int64))


def test_weighted_mean_counts_tail_batch_by_its_size():
    # (1*64 + 2*64 + 4*48) / 176 = 384/176; the unweighted mean would be 7/3.
    assert weighted_mean([1.0, 2.0, 4.0], [64, 64, 48]) == pytest.approx(384 / 176)
    assert weighted_mean([1.0, 2.0, 4.0], [64, 64, 48]) != pytest.approx(7 / 3)


@pytest.mark.parametrize(
    "values, weights, message",
    [
        ([], [], "empty"),
        ([1.0, 2.0], [0, 0], "total weight is 0"),
        ([1.0, 2.0], [64], "differ in length"),
        ([1.0, 2.0], [64, -1], ">= 0"),
    ],
)
def test_weighted_mean_rejects(values, weights, message):
    with pytest.raises(ValueError, match=message):
        weighted_mean(values, weights)


def test_weighted_mean_propagates_nan_loss():
    assert np.isnan(weighted_mean([1.0, float("nan")], [64, 64]))


def test_step_stats_warmup_and_excluded_steps():
    step_ms = [1500.0, 20.0, 12.0, 10.0, 11.0, 500.0, 9.0, 13.0]
    batch_sizes = [64, 64, 64, 64, 64, 48, 64, 64]
    stats = step_stats(step_ms, batch_sizes, warmup_steps=2, exclude={5})
    # Steady window: indices 3..7 minus 5 -> [10, 11, 9, 13] ms, 4 x 64 images.
    assert stats["first_step_s"] == 1.5
    assert stats["warmup_steps"] == 2
    assert stats["n"] == 4
    assert stats["median_ms"] == 10.5
    assert stats["p95_ms"] == 13.0  # ceil(0.95 * 4) = 4th smallest
    assert stats["images_per_s"] == pytest.approx(256 / 0.043)
    assert stats["excluded"] == [5]
    json.dumps(stats, allow_nan=False)


def test_step_stats_p95_is_nearest_rank_not_interpolated():
    shuffled = (7, 3, 20, 1, 15, 9, 11, 2, 18, 5, 14, 8, 4, 19, 6, 10, 13, 17, 16, 12)
    step_ms = [999.0] + [float(v) for v in shuffled]
    stats = step_stats(step_ms, [32] * 21, warmup_steps=0)
    assert stats["n"] == 20
    assert stats["p95_ms"] == 19.0  # ceil(19.0) = 19th smallest; linear interpolation gives 19.05
    assert stats["median_ms"] == 10.5
    assert stats["images_per_s"] == pytest.approx(640 / 0.210)


def test_step_stats_excluding_inside_warmup_changes_nothing():
    stats = step_stats([100.0, 5.0, 4.0, 6.0], [8, 8, 8, 8], warmup_steps=1, exclude={0, 1})
    assert stats["n"] == 2
    assert stats["median_ms"] == 5.0
    assert stats["excluded"] == []


def test_step_stats_empty_steady_window():
    stats = step_stats([900.0, 10.0], [64, 64], warmup_steps=3)
    assert stats["first_step_s"] == 0.9
    assert stats["n"] == 0
    assert stats["median_ms"] is None and stats["p95_ms"] is None and stats["images_per_s"] is None
    nothing = step_stats([], [], warmup_steps=0)
    assert nothing["first_step_s"] is None and nothing["n"] == 0


def test_step_stats_all_steady_steps_excluded():
    stats = step_stats([900.0, 10.0, 11.0], [64, 64, 48], warmup_steps=0, exclude={1, 2})
    assert stats["n"] == 0 and stats["median_ms"] is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"step_ms": [1.0, 2.0], "batch_sizes": [64], "warmup_steps": 0}, "differ in length"),
        (
            {"step_ms": [1.0, 2.0], "batch_sizes": [64, 64], "warmup_steps": 0, "exclude": {2}},
            r"\[2\] are outside",
        ),
        ({"step_ms": [1.0, -2.0], "batch_sizes": [64, 64], "warmup_steps": 0}, ">= 0"),
        ({"step_ms": [1.0, 2.0], "batch_sizes": [64, 0], "warmup_steps": 0}, "> 0"),
        ({"step_ms": [1.0], "batch_sizes": [64], "warmup_steps": -1}, "warmup_steps"),
    ],
)
def test_step_stats_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        step_stats(**kwargs)


def test_weakest_class_lowest_f1_then_lowest_index():
    report = classification_report(confusion_matrix(Y_TRUE, Y_PRED, n_classes=3))
    assert weakest_class(report) == 2
    tie = {"per_class": [{"f1": 0.9}, {"f1": 0.5}, {"f1": 0.5}]}
    assert weakest_class(tie) == 1
    with pytest.raises(ValueError, match="empty"):
        weakest_class({"per_class": []})


def test_most_confused_pairs_off_diagonal_sorted():
    conf = np.array([[50, 3, 0], [7, 40, 3], [0, 1, 60]])
    assert most_confused_pairs(conf, 3) == [(1, 0, 7), (0, 1, 3), (1, 2, 3)]
    assert most_confused_pairs(conf, 10) == [(1, 0, 7), (0, 1, 3), (1, 2, 3), (2, 1, 1)]
    assert most_confused_pairs(np.diag([5, 5]), 3) == []
    assert most_confused_pairs(conf, 0) == []
