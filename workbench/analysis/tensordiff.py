"""Element-wise tensor comparison for the alignment job (numpy only).

Rule: an element matches when |cand - ref| <= atol + rtol * |ref|, both sides taken
in float64. Non-finite values never pass silently: NaN matches nothing (not even a
NaN in the same place) and +/-Inf matches only the same infinity in the same place.
Statistics (max_abs, max_rel, mean_abs, cosine) cover the elements finite on both
sides; the NaN/Inf counts are reported next to them. Every result is JSON-safe: no
numpy scalars, and non-finite numbers appear as the strings "nan", "inf", "-inf".
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

PASS = "observed-pass"
FAIL = "observed-fail"
MATCH_RULE = "|cand - ref| <= atol + rtol * |ref|"
REL_RULE = "|diff| / |ref|, elements with ref == 0 excluded; if all ref are 0, max_rel = max_abs"
NONFINITE_RULE = "NaN never matches; Inf matches only the same Inf in the same place"


class Tolerance(NamedTuple):
    """A relative and absolute tolerance pair for the match rule."""

    rtol: float
    atol: float


# The defaults of torch.testing.assert_close, per dtype.
DEFAULT_TOLERANCES: Dict[str, Tolerance] = {
    "float16": Tolerance(rtol=1e-3, atol=1e-5),
    "bfloat16": Tolerance(rtol=1.6e-2, atol=1e-5),
    "float32": Tolerance(rtol=1.3e-6, atol=1e-5),
    "float64": Tolerance(rtol=1e-7, atol=1e-7),
}
EXACT = Tolerance(rtol=0.0, atol=0.0)  # integer and bool tensors must match exactly

_ALIASES = {
    "half": "float16",
    "fp16": "float16",
    "bf16": "bfloat16",
    "float": "float32",
    "single": "float32",
    "fp32": "float32",
    "double": "float64",
    "fp64": "float64",
}


def dtype_name(dtype: Any) -> str:
    """Canonical dtype name ('float32', 'bfloat16', 'int32' …) for numpy, MindSpore or text dtypes."""
    if isinstance(dtype, type):  # np.float32 and friends are classes, not dtypes
        dtype = np.dtype(dtype)
    text = str(getattr(dtype, "name", None) or dtype).strip().lower()
    for prefix in ("mindspore.", "torch.", "numpy.", "np."):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return _ALIASES.get(text, text)


def _default_for(dtype: Any) -> Tolerance:
    """The default tolerance of one dtype; integers and bools are compared exactly."""
    name = dtype_name(dtype)
    if name in DEFAULT_TOLERANCES:
        return DEFAULT_TOLERANCES[name]
    try:
        kind = np.dtype(name).kind
    except TypeError:
        kind = ""
    if kind in ("i", "u", "b"):
        return EXACT
    raise ValueError(
        f"dtype {dtype!r}: no default tolerance; expected one of {sorted(DEFAULT_TOLERANCES)} or an integer/bool dtype"
    )


def _check_tol(key: str, value: Any) -> float:
    """Return a tolerance as a float after checking it is finite and >= 0."""
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{key}: tolerance must be a finite number >= 0, got {value!r}")
    return number


def tolerances_for(
    dtype_ref: Any,
    dtype_cand: Any,
    override: Union[Mapping[str, Any], Sequence[Any], None] = None,
) -> Tolerance:
    """Pick (rtol, atol): the looser default of the two dtypes, component by component.

    `override` is a mapping with optional keys rtol/atol or an (rtol, atol) pair; a value
    given there (not None) replaces the default for that component only.
    """
    ref_tol, cand_tol = _default_for(dtype_ref), _default_for(dtype_cand)
    rtol = max(ref_tol.rtol, cand_tol.rtol)
    atol = max(ref_tol.atol, cand_tol.atol)
    if override is None:
        return Tolerance(rtol=rtol, atol=atol)
    if isinstance(override, Mapping):
        unknown = sorted(set(override) - {"rtol", "atol"})
        if unknown:
            raise ValueError(f"override: unknown keys {unknown}, expected rtol and/or atol")
        given_rtol, given_atol = override.get("rtol"), override.get("atol")
    else:
        if len(override) != 2:
            raise ValueError(f"override: expected (rtol, atol), got {override!r}")
        given_rtol, given_atol = override
    if given_rtol is not None:
        rtol = _check_tol("rtol", given_rtol)
    if given_atol is not None:
        atol = _check_tol("atol", given_atol)
    return Tolerance(rtol=rtol, atol=atol)


def _num(value: Any) -> Union[float, str]:
    """A float for JSON: finite values as float, non-finite ones as 'nan', 'inf' or '-inf'."""
    number = float(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def _as_array(side: str, value: Any) -> np.ndarray:
    """Return `value` as a numeric numpy array, or raise naming the side."""
    arr = np.asarray(value)
    if arr.dtype.kind not in ("f", "i", "u", "b"):
        raise ValueError(f"{side}: expected a numeric tensor, got dtype {arr.dtype}")
    return arr


def _label(arr: Optional[np.ndarray], declared: Any) -> Optional[str]:
    """The dtype name to report: the declared one if given, else the array's own."""
    if arr is None:
        return None
    return dtype_name(arr.dtype if declared is None else declared)


def _empty_result(
    name: str, shape: Any, dtypes: Dict[str, Optional[str]], tol: Optional[Tolerance], atol: Any, rtol: Any
) -> Dict[str, Any]:
    """A result with every number unset, for comparisons that never reached the numbers."""
    return {
        "name": name,
        "shape": shape,
        "dtype": dtypes,
        "atol": tol.atol if tol else (None if atol is None else _check_tol("atol", atol)),
        "rtol": tol.rtol if tol else (None if rtol is None else _check_tol("rtol", rtol)),
        "max_abs": None,
        "max_rel": None,
        "rel_rule": REL_RULE,
        "mean_abs": None,
        "mismatch_ratio": None,
        "worst_index": None,
        "worst_rule": "the element furthest over its tolerance (non-finite mismatches first); "
        "without a mismatch, the largest |diff|",
        "max_abs_index": None,
        "worst": None,
        "cosine": None,
        "nan_ref": None,
        "nan_cand": None,
        "inf_ref": None,
        "inf_cand": None,
        "passed": False,
        "status": FAIL,
        "reason": None,
    }


def _cosine(ref: np.ndarray, cand: np.ndarray) -> Optional[float]:
    """Cosine similarity of two finite vectors, None when either norm is 0."""
    scale = max(float(np.max(np.abs(ref))), float(np.max(np.abs(cand))))
    if scale == 0.0:
        return None
    r, c = ref / scale, cand / scale  # scaling keeps the squares from overflowing
    norm_r, norm_c = float(np.linalg.norm(r)), float(np.linalg.norm(c))
    if norm_r == 0.0 or norm_c == 0.0:
        return None
    return float(min(1.0, max(-1.0, float(np.dot(r, c)) / (norm_r * norm_c))))


def diff_tensors(
    name: str,
    ref: Optional[Any],
    cand: Optional[Any],
    atol: Optional[float] = None,
    rtol: Optional[float] = None,
    *,
    ref_dtype: Any = None,
    cand_dtype: Any = None,
) -> Dict[str, Any]:
    """Compare a candidate tensor with its reference element by element.

    atol/rtol left as None come from `tolerances_for` of the two dtypes. `ref_dtype` and
    `cand_dtype` name the dtype the tensor was computed in when the array handed over was
    cast (numpy has no bfloat16, for example).
    """
    if ref is None and cand is None:
        raise ValueError(f"{name}: both reference and candidate are missing")
    ref_arr = None if ref is None else _as_array(f"{name} reference", ref)
    cand_arr = None if cand is None else _as_array(f"{name} candidate", cand)
    dtypes = {"ref": _label(ref_arr, ref_dtype), "cand": _label(cand_arr, cand_dtype)}

    # A tensor on one side only is a failure of the comparison, never a skip.
    if ref_arr is None or cand_arr is None:
        present = ref_arr if ref_arr is not None else cand_arr
        assert present is not None  # both sides missing was refused above
        result = _empty_result(name, list(present.shape), dtypes, None, atol, rtol)
        only = "candidate" if ref_arr is None else "reference"
        result["reason"] = f"present only in {only}"
        return result

    tol = tolerances_for(dtypes["ref"], dtypes["cand"], {"rtol": rtol, "atol": atol})
    if ref_arr.shape != cand_arr.shape:
        shapes = {"ref": list(ref_arr.shape), "cand": list(cand_arr.shape)}
        result = _empty_result(name, shapes, dtypes, tol, atol, rtol)
        result["reason"] = f"shape mismatch: reference {list(ref_arr.shape)} vs candidate {list(cand_arr.shape)}"
        return result

    result = _empty_result(name, list(ref_arr.shape), dtypes, tol, atol, rtol)
    r = ref_arr.astype(np.float64).ravel()
    c = cand_arr.astype(np.float64).ravel()
    size = r.size
    nan_r, nan_c = np.isnan(r), np.isnan(c)
    inf_r, inf_c = np.isinf(r), np.isinf(c)
    result.update(
        nan_ref=int(nan_r.sum()),
        nan_cand=int(nan_c.sum()),
        inf_ref=int(inf_r.sum()),
        inf_cand=int(inf_c.sum()),
    )
    if size == 0:
        result.update(
            mismatch_ratio=0.0, passed=True, status=PASS, reason="empty tensor: 0 elements, equal by shape only"
        )
        return result

    finite = ~(nan_r | nan_c | inf_r | inf_c)
    abs_diff = np.zeros(size, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        abs_diff[finite] = np.abs(c[finite] - r[finite])
        allowed = tol.atol + tol.rtol * np.abs(r)
        same_inf = (inf_r & inf_c) & (r == c)
        matched = np.where(finite, abs_diff <= allowed, same_inf)
    mismatches = int(size - matched.sum())

    if finite.any():
        fin_abs = abs_diff[finite]
        fin_ref = r[finite]
        nonzero = fin_ref != 0
        max_abs = float(fin_abs.max())
        if nonzero.any():
            max_rel = float((fin_abs[nonzero] / np.abs(fin_ref[nonzero])).max())
        else:
            max_rel = max_abs
        result.update(
            max_abs=_num(max_abs),
            max_rel=_num(max_rel),
            mean_abs=_num(float(fin_abs.mean())),
            cosine=_cosine(fin_ref, c[finite]),
        )

    # Worst element: the largest excess over tolerance among mismatches (non-finite
    # mismatches first), else the largest absolute difference among finite elements.
    if mismatches:
        excess = np.full(size, -np.inf)
        with np.errstate(invalid="ignore"):
            excess[finite] = abs_diff[finite] - allowed[finite]
        excess[~finite & ~matched] = np.inf
        excess[matched] = -np.inf
        flat_worst: Optional[int] = int(np.argmax(excess))
    elif finite.any():
        flat_worst = int(np.argmax(np.where(finite, abs_diff, -1.0)))
    else:
        flat_worst = None
    if finite.any():  # the largest |diff| itself, which the worst-by-excess element need not be
        flat_max = int(np.argmax(np.where(finite, abs_diff, -1.0)))
        result["max_abs_index"] = [int(i) for i in np.unravel_index(flat_max, ref_arr.shape)]
    if flat_worst is not None:
        result["worst_index"] = [int(i) for i in np.unravel_index(flat_worst, ref_arr.shape)]
        result["worst"] = {"ref": _num(r[flat_worst]), "cand": _num(c[flat_worst])}

    passed = mismatches == 0
    result.update(mismatch_ratio=mismatches / size, passed=passed, status=PASS if passed else FAIL)
    nonfinite = result["nan_ref"] + result["nan_cand"] + result["inf_ref"] + result["inf_cand"]
    notes: List[str] = []
    if mismatches:
        notes.append(
            f"{mismatches} of {size} elements outside {MATCH_RULE} "
            f"(atol {tol.atol:g}, rtol {tol.rtol:g}); worst at {result['worst_index']}: "
            f"ref {result['worst']['ref']}, cand {result['worst']['cand']}"
        )
    if nonfinite:
        notes.append(
            f"non-finite values: nan_ref {result['nan_ref']}, nan_cand {result['nan_cand']}, "
            f"inf_ref {result['inf_ref']}, inf_cand {result['inf_cand']} ({NONFINITE_RULE}); "
            f"statistics cover {int(finite.sum())} of {size} elements"
        )
    result["reason"] = "; ".join(notes) or None
    return result


def class_flips(ref_logits: Any, cand_logits: Any) -> Dict[str, Any]:
    """Samples whose arg-max class differs between reference and candidate logits [N, C]."""
    ref_arr, cand_arr = np.asarray(ref_logits), np.asarray(cand_logits)
    if ref_arr.ndim != 2 or ref_arr.shape != cand_arr.shape:
        raise ValueError(
            f"logits: expected two [N, C] arrays of the same shape, got {ref_arr.shape} and {cand_arr.shape}"
        )
    ref_cls = np.argmax(ref_arr, axis=1)
    cand_cls = np.argmax(cand_arr, axis=1)
    flipped = np.flatnonzero(ref_cls != cand_cls)
    return {
        "n": int(ref_arr.shape[0]),
        "count": int(flipped.size),
        "indices": [int(i) for i in flipped],
        "pairs": [{"index": int(i), "ref_class": int(ref_cls[i]), "cand_class": int(cand_cls[i])} for i in flipped],
    }


def first_failure(diffs_in_forward_order: Sequence[Mapping[str, Any]]) -> Optional[int]:
    """Position of the first comparison that did not pass (in forward order), or None."""
    for position, diff in enumerate(diffs_in_forward_order):
        passed = diff.get("passed")
        if not isinstance(passed, bool):
            raise ValueError(f"diff #{position} ({diff.get('name')!r}): 'passed' must be a bool, got {passed!r}")
        if not passed:
            return position
    return None


def histogram_abs_diff(ref: Any, cand: Any, bins: int = 8) -> Dict[str, Any]:
    """Counts of |cand - ref| in log-spaced bins, exact zeros and non-finite pairs counted apart.

    Edges run from the smallest to the largest non-zero |diff| (a single distinct value
    gets one decade around it); the last bin includes its right edge.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    r = _as_array("reference", ref).astype(np.float64).ravel()
    c = _as_array("candidate", cand).astype(np.float64).ravel()
    ref_shape, cand_shape = np.shape(ref), np.shape(cand)
    if ref_shape != cand_shape:
        raise ValueError(f"shape mismatch: reference {list(ref_shape)} vs candidate {list(cand_shape)}")
    finite = np.isfinite(r) & np.isfinite(c)
    with np.errstate(over="ignore"):
        abs_diff = np.abs(c[finite] - r[finite])
    abs_diff = abs_diff[np.isfinite(abs_diff)]
    positive = abs_diff[abs_diff > 0]
    result: Dict[str, Any] = {
        "edges": [],
        "counts": [],
        "zeros": int((abs_diff == 0).sum()),
        "nonfinite": int(r.size - abs_diff.size),
    }
    if positive.size == 0:
        return result
    low, high = math.log10(float(positive.min())), math.log10(float(positive.max()))
    if low == high:
        low, high = low - 0.5, high + 0.5
    log_edges = np.linspace(low, high, bins + 1)
    counts, _ = np.histogram(np.log10(positive), bins=log_edges)
    edges = [float(10.0**e) for e in log_edges]
    if float(positive.min()) != float(positive.max()):
        edges[0], edges[-1] = float(positive.min()), float(positive.max())
    result["edges"] = edges
    result["counts"] = [int(n) for n in counts]
    return result
