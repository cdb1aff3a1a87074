"""Comparing two side records (pure numpy): settings that must match, tensor order, diffs, verdict."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from workbench.analysis.tensordiff import (
    FAIL,
    PASS,
    class_flips,
    diff_tensors,
    dtype_name,
    first_failure,
    histogram_abs_diff,
)

# Forward order of tensor groups: inputs → layers → logits → loss → grads → weights after K steps.
GROUPS = ("input", "layer", "logits", "loss", "grad", "steps")
HIST_BINS = 8

# (check id, title, how to read the value from a side's settings)
MATCHED_SETTINGS = (
    ("match.preprocessing", "preprocessing (pixel scaling)", "preprocessing"),
    ("match.input-range", "input value range", "x_range"),
    ("match.class-order", "class order", "class_order"),
    ("match.loss-reduction", "loss reduction", "loss_reduction"),
    ("match.state", "train/eval state (forward, loss+grads)", "state"),
    ("match.seed", "seed", "seed"),
    ("match.inputs", "fixed batch (inputs.npz SHA-256)", "inputs_sha256"),
    ("match.init", "initial weights (init.ckpt SHA-256)", "init_sha256"),
    ("match.model", "model", "model"),
    ("match.optimizer", "optimizer for the K steps", "optimizer"),  # only when align.steps > 0
)
HINTS = {
    "match.optimizer": "the weights after K steps differ for this reason too (fp16 needs Adam eps >= 1e-4)",
}
DEFAULT_HINT = "differences would come from the input protocol, not the path"


def group_of(name: str) -> str:
    """The forward-order group of a tensor name."""
    if name in ("input", "labels"):
        return "input"
    if name.startswith("layer."):
        return "layer"
    if name == "logits":
        return "logits"
    if name == "loss":
        return "loss"
    if name.startswith("grad."):
        return "grad"
    return "steps"


def forward_order(ref_names: Sequence[str], cand_names: Sequence[str]) -> List[str]:
    """Every name of either side once, in forward order; a one-sided name keeps its place on its side."""
    merged: List[str] = list(ref_names)
    seen = set(merged)
    anchor = -1
    for name in cand_names:
        if name in seen:
            anchor = merged.index(name)
            continue
        anchor += 1
        merged.insert(anchor, name)
        seen.add(name)
    # A stable sort by group keeps each side's order inside a group and puts groups in forward order.
    return sorted(merged, key=lambda n: GROUPS.index(group_of(n)))


def _show(key: str, value: Any) -> str:
    """A setting as a short phrase for a check's detail line."""
    if value is None:
        return "not recorded"
    if key == "class_order":
        return "%d classes %s … %s" % (len(value), value[0], value[-1]) if value else "no classes"
    if key == "state":
        return ", ".join("%s %s" % (k.replace("_", "+"), v) for k, v in sorted(value.items()))
    if key == "model":
        return "%s hidden %s" % (value.get("name"), value.get("hidden"))
    if key.endswith("sha256"):
        return str(value)[:12]
    return str(value)


def matched_settings(ref: Mapping[str, Any], cand: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One check per setting that must be the same on both sides (read back by each side)."""
    checks = []
    for check_id, title, key in MATCHED_SETTINGS:
        a, b = ref.get(key), cand.get(key)
        if key == "optimizer" and a is None and b is None:
            continue  # no optimizer steps were taken
        if key == "x_range":
            same = a is not None and b is not None and min(a[0], b[0]) >= 0.0 and max(a[1], b[1]) <= 1.0
            detail = "reference %s, candidate %s (pixel / 255 must lie in [0, 1])" % (a, b)
        else:
            same = a is not None and a == b
            detail = (
                ("both %s" % _show(key, a)) if same else "reference %s ≠ candidate %s" % (_show(key, a), _show(key, b))
            )
        checks.append(
            {
                "id": check_id,
                "title": title,
                "status": PASS if same else FAIL,
                "detail": detail,
                "evidence": {"ref": a, "cand": b},
                "hint": None if same else HINTS.get(check_id, DEFAULT_HINT),
            }
        )
    return checks


def diff_event_fields(
    name: str,
    ref: Optional[np.ndarray],
    cand: Optional[np.ndarray],
    ref_dtype: Optional[str],
    cand_dtype: Optional[str],
    atol: Optional[float],
    rtol: Optional[float],
) -> Dict[str, Any]:
    """The fields of one tensor_diff event: compare.diff_tensors plus group and |diff| histogram."""
    fields = diff_tensors(name, ref, cand, atol=atol, rtol=rtol, ref_dtype=ref_dtype, cand_dtype=cand_dtype)
    fields["group"] = group_of(name)
    fields["hist"] = None
    if ref is not None and cand is not None and np.shape(ref) == np.shape(cand):
        fields["hist"] = histogram_abs_diff(ref, cand, bins=HIST_BINS)
    present = ref if ref is not None else cand
    assert present is not None  # diff_tensors refused both sides missing
    fields["size"] = int(np.size(present))
    return fields


def flips_with_labels(
    ref_logits: np.ndarray, cand_logits: np.ndarray, labels: Optional[Sequence[int]]
) -> Dict[str, Any]:
    """compare.class_flips with each flipped sample's true label added."""
    flips = class_flips(ref_logits, cand_logits)
    if labels is not None:
        for pair in flips["pairs"]:
            pair["label"] = int(labels[pair["index"]])
    return flips


def compare_sides(
    ref_arrays: Mapping[str, np.ndarray],
    cand_arrays: Mapping[str, np.ndarray],
    ref_names: Sequence[str],
    cand_names: Sequence[str],
    atol: Optional[float],
    rtol: Optional[float],
    labels: Optional[Sequence[int]] = None,
    computed: Optional[Mapping[str, Mapping[str, Optional[str]]]] = None,
) -> List[Dict[str, Any]]:
    """tensor_diff fields for every tensor of either side, in forward order; logits carry class flips.

    `computed` = {"ref": {name: dtype}, "cand": {...}}: the dtype a tensor was computed in where it
    differs from the stored one (amp's float32 output of float16 work); tolerances follow it.
    """
    computed = computed or {}
    out = []
    for position, name in enumerate(forward_order(ref_names, cand_names)):
        ref, cand = ref_arrays.get(name), cand_arrays.get(name)
        ref_dtype = (computed.get("ref") or {}).get(name)
        cand_dtype = (computed.get("cand") or {}).get(name)
        fields = diff_event_fields(name, ref, cand, ref_dtype, cand_dtype, atol, rtol)
        if ref_dtype or cand_dtype:
            fields["stored_dtype"] = {
                "ref": None if ref is None else dtype_name(ref.dtype),
                "cand": None if cand is None else dtype_name(cand.dtype),
            }
        fields["position"] = position
        if name == "logits" and ref is not None and cand is not None and np.shape(ref) == np.shape(cand):
            fields["flips"] = flips_with_labels(ref, cand, labels)
        out.append(fields)
    return out


def verdict(diffs: Sequence[Mapping[str, Any]], setting_checks: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Counts, the first failing tensor and the verdict: observed-pass only when everything passed."""
    first = first_failure(diffs) if diffs else None
    one_sided = [d["name"] for d in diffs if str(d.get("reason") or "").startswith("present only in")]
    mismatched = [c["id"] for c in setting_checks if c["status"] != PASS]
    passed = sum(1 for d in diffs if d["passed"])
    flips = next((d.get("flips") for d in diffs if d["name"] == "logits"), None)
    ok = bool(diffs) and first is None and not one_sided and not mismatched
    return {
        "verdict": PASS if ok else FAIL,
        "counts": {"tensors": len(diffs), "passed": passed, "failed": len(diffs) - passed, "one_sided": len(one_sided)},
        "first_failure": None
        if first is None
        else {"position": first, "name": diffs[first]["name"], "reason": diffs[first].get("reason")},
        "one_sided": one_sided,
        "settings_mismatch": mismatched,
        "class_flips": None if flips is None else {"count": flips["count"], "n": flips["n"], "pairs": flips["pairs"]},
    }
