"""metrics_report: the validation/test summary both the train and the test job emit."""

from __future__ import annotations

import numpy as np

from workbench.analysis.metrics import metrics_report
from workbench.data.fashion import CLASS_NAMES


def test_report_names_classes_counts_samples_and_keeps_the_confusion_rows_true():
    labels = np.array([0, 0, 1, 2, 9])
    pred = np.array([0, 1, 1, 2, 0])
    report = metrics_report(labels, pred)
    assert report["samples"] == 5 and report["accuracy"] == 3 / 5
    assert [row["name"] for row in report["per_class"]] == list(CLASS_NAMES)
    assert report["confusion"][0][1] == 1 and report["confusion"][9][0] == 1
    assert report["per_class"][9]["recall"] == 0.0 and report["per_class"][9]["support"] == 1
