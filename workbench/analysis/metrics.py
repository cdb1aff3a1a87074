"""Classification and timing statistics for training and validation events (numpy only).

Every function returns plain Python numbers, lists and dicts so the result can go
straight into an event line. Each rule that changes a number (zero division, the
percentile method, which steps count as steady) is stated in the output itself.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from workbench.data.fashion import CLASS_NAMES


class _LazyModule:
    """A module imported on first attribute use: screens read `median` and `weakest_class` without numpy."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)  # later uses skip __getattr__
        return value


np: Any = _LazyModule("numpy")  # numpy costs ~0.15 s of UI start-up; jobs pay it at their first metric

ZERO_DIVISION_RULE = (
    "0 when a class is never predicted (precision) or absent (recall); "
    "F1 is 0 when precision+recall is 0; macro_f1 averages all classes, absent ones included"
)
P95_RULE = "nearest rank: the ceil(0.95 * n)-th smallest steady step"
MEDIAN_RULE = "middle steady step; mean of the two middle ones when n is even"


def _int_labels(name: str, values: Any, n_classes: int) -> np.ndarray:
    """Return `values` as a 1-D int64 array after checking dtype and range."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of class indices, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected integer class indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        low, high = int(arr.min()), int(arr.max())
        if low < 0 or high >= n_classes:
            raise ValueError(f"{name}: class indices must lie in 0..{n_classes - 1}, got min {low}, max {high}")
    return arr


def confusion_matrix(y_true: Any, y_pred: Any, n_classes: int = 10) -> np.ndarray:
    """Count samples per (true class, predicted class): rows are true, columns predicted."""
    if n_classes < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    true = _int_labels("y_true", y_true, n_classes)
    pred = _int_labels("y_pred", y_pred, n_classes)
    if true.shape != pred.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {true.shape[0]} and {pred.shape[0]}")
    flat = np.bincount(true * n_classes + pred, minlength=n_classes * n_classes)
    return flat.reshape(n_classes, n_classes).astype(np.int64)


def _square_counts(confusion: Any) -> np.ndarray:
    """Return `confusion` as a square non-negative int64 matrix, or raise ValueError."""
    conf = np.asarray(confusion)
    if conf.ndim != 2 or conf.shape[0] != conf.shape[1] or conf.shape[0] == 0:
        raise ValueError(f"confusion: expected a square n x n matrix, got shape {conf.shape}")
    if conf.size and not np.issubdtype(conf.dtype, np.integer):
        raise ValueError(f"confusion: expected integer counts, got dtype {conf.dtype}")
    conf = conf.astype(np.int64, copy=False)
    if conf.min() < 0:
        raise ValueError(f"confusion: counts must be >= 0, got min {int(conf.min())}")
    return conf


def classification_report(confusion: Any) -> Dict[str, Any]:
    """Accuracy, macro F1 and per-class precision/recall/F1/support from a confusion matrix."""
    conf = _square_counts(confusion)
    total = int(conf.sum())
    if total == 0:
        raise ValueError("confusion: holds no samples, accuracy is undefined")
    per_class: List[Dict[str, Any]] = []
    for k in range(conf.shape[0]):
        tp = int(conf[k, k])
        support = int(conf[k, :].sum())
        predicted = int(conf[:, k].sum())
        precision = tp / predicted if predicted else 0.0
        recall = tp / support if support else 0.0
        both = precision + recall
        f1 = 2.0 * precision * recall / both if both else 0.0
        per_class.append({"precision": float(precision), "recall": float(recall), "f1": float(f1), "support": support})
    macro_f1 = math.fsum(c["f1"] for c in per_class) / len(per_class)
    return {
        "accuracy": float(int(np.trace(conf)) / total),
        "macro_f1": float(macro_f1),
        "per_class": per_class,
        "zero_division": ZERO_DIVISION_RULE,
    }


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """Mean of `values` weighted by `weights` (per-batch loss by batch size), as a float."""
    vals = np.asarray(values, dtype=np.float64)
    wts = np.asarray(weights, dtype=np.float64)
    if vals.ndim != 1 or wts.ndim != 1:
        raise ValueError(f"values and weights must be 1-D, got shapes {vals.shape} and {wts.shape}")
    if vals.size == 0:
        raise ValueError("values: empty, a mean of nothing is undefined")
    if vals.shape != wts.shape:
        raise ValueError(f"values and weights differ in length: {vals.size} vs {wts.size}")
    if not np.all(np.isfinite(wts)) or wts.min() < 0:
        raise ValueError(f"weights must be finite and >= 0, got {wts.tolist()}")
    total = float(wts.sum())
    if total == 0.0:
        raise ValueError("weights: total weight is 0, the weighted mean is undefined")
    # A NaN or Inf loss propagates on purpose: a diverged epoch must show as such.
    return float(np.dot(vals, wts) / total)


def _nearest_rank(sorted_values: Sequence[float], percent: int) -> float:
    """The nearest-rank percentile: the ceil(percent/100 * n)-th smallest value."""
    n = len(sorted_values)
    rank = max(1, (percent * n + 99) // 100)  # integer ceil avoids 0.95 * n rounding
    return float(sorted_values[rank - 1])


def step_stats(
    step_ms: Sequence[float],
    batch_sizes: Sequence[int],
    warmup_steps: int,
    exclude: Optional[Iterable[int]] = None,
) -> Dict[str, Any]:
    """Compile time and steady-state step statistics from per-step wall times.

    Step 0 is the compile step (first_step_s). The steady window is every step after the
    first 1 + warmup_steps, minus the indices in `exclude` (for example the recompile of
    a tail batch or profiled steps).
    """
    times = [float(t) for t in step_ms]
    sizes = [int(b) for b in batch_sizes]
    if len(times) != len(sizes):
        raise ValueError(f"step_ms and batch_sizes differ in length: {len(times)} vs {len(sizes)}")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
    bad_times = [t for t in times if not math.isfinite(t) or t < 0]
    if bad_times:
        raise ValueError(f"step_ms must be finite and >= 0, got {bad_times[:5]}")
    bad_sizes = [b for b in sizes if b <= 0]
    if bad_sizes:
        raise ValueError(f"batch_sizes must be > 0, got {bad_sizes[:5]}")
    skip: Set[int] = set(int(i) for i in exclude) if exclude is not None else set()
    outside = sorted(i for i in skip if i < 0 or i >= len(times))
    if outside:
        raise ValueError(f"exclude: indices {outside} are outside 0..{len(times) - 1}")

    window = [i for i in range(1 + warmup_steps, len(times)) if i not in skip]
    result: Dict[str, Any] = {
        "first_step_s": times[0] / 1000.0 if times else None,
        "warmup_steps": int(warmup_steps),
        "n": len(window),
        "median_ms": None,
        "p95_ms": None,
        "images_per_s": None,
        "excluded": sorted(i for i in skip if i >= 1 + warmup_steps),
        "median_rule": MEDIAN_RULE,
        "p95_rule": P95_RULE,
    }
    if not window:
        return result
    steady = sorted(times[i] for i in window)
    total_ms = math.fsum(times[i] for i in window)
    result["median_ms"] = float(np.median(steady))
    result["p95_ms"] = _nearest_rank(steady, 95)
    if total_ms > 0:
        result["images_per_s"] = sum(sizes[i] for i in window) / (total_ms / 1000.0)
    return result


def weakest_class(report: Dict[str, Any]) -> int:
    """Index of the class with the lowest F1 (the lowest index wins a tie)."""
    per_class = report.get("per_class") or []
    if not per_class:
        raise ValueError("report: per_class is empty, no class to pick")
    f1s = [float(c["f1"]) for c in per_class]
    return int(min(range(len(f1s)), key=lambda k: (f1s[k], k)))


def most_confused_pairs(confusion: Any, k: int) -> List[Tuple[int, int, int]]:
    """The k largest off-diagonal cells as (true, pred, count), largest first, zeros left out."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    conf = _square_counts(confusion)
    pairs = [
        (int(t), int(p), int(conf[t, p]))
        for t in range(conf.shape[0])
        for p in range(conf.shape[1])
        if t != p and conf[t, p] > 0
    ]
    pairs.sort(key=lambda tpc: (-tpc[2], tpc[0], tpc[1]))
    return pairs[:k]


def median(values: Iterable[float]) -> Optional[float]:
    """Median (mean of the two middle values when n is even); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def upper_median(values: Iterable[float]) -> Optional[float]:
    """The upper middle value (an observed step, never an average); None for no values."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


def metrics_report(labels: Any, pred: Any) -> Dict[str, Any]:
    """accuracy, macro_f1, per_class (with class names), confusion (rows = true), zero_division, samples."""
    conf = confusion_matrix(labels, pred, len(CLASS_NAMES))
    report = classification_report(conf)
    for k, row in enumerate(report["per_class"]):
        row["name"] = CLASS_NAMES[k]
    report["confusion"] = conf.tolist()
    report["samples"] = int(len(labels))
    return report
