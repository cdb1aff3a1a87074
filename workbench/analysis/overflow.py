"""Where a non-finite value first appears: the probes of one replayed step and the first one out of range.

A probe is one tensor the replay looked at, in execution order: each cell's forward output (with its
input's range), the loss, each parameter's gradient (backward order) and each parameter after the
optimizer's update. A probe is bad when it holds a non-finite value or a finite value beyond its
dtype's largest (float16: |x| > 65504).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from workbench.events.protocol import Evidence

# The largest finite magnitude of each floating dtype, by the names MindSpore and numpy print.
DTYPE_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
}
SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
KINDS = ("forward", "loss", "gradient", "update")
ORDER_RULE = (
    "execution order: forward outputs of the leaf cells as they ran, the loss, the gradients in backward "
    "order (last parameter first), then each parameter after the optimizer's update"
)
ABOUT_RULE = (
    "the replay re-runs the model's numbers on the replay device in PyNative mode; a replay on another device "
    "than the run's (CPU for an Ascend run) is evidence about the model's numbers, not about the run's device"
)
BAD_RULE = "a probe is bad when it holds NaN or Inf, or a finite |x| beyond its dtype's largest (float16: 65504)"


def dtype_name(dtype: Any) -> str:
    """'float16' for mindspore.float16, numpy float16 or the string itself."""
    text = str(dtype).lower()
    for name in DTYPE_MAX:
        if text.endswith(name):
            return name
    return text


def value_range(values: Any) -> Dict[str, Any]:
    """{min, max, absmax, nonfinite, size} of a numpy array over its finite values (None when none is finite)."""
    import numpy as np

    arr = np.asarray(values)
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    wide = arr.astype(np.float64, copy=False)
    finite = np.isfinite(wide)
    nonfinite = int(wide.size - int(finite.sum()))
    good = wide[finite]
    if good.size:
        lo, hi = float(good.min()), float(good.max())
        out: Dict[str, Any] = {"min": lo, "max": hi, "absmax": max(abs(lo), abs(hi))}
    else:
        out = {"min": None, "max": None, "absmax": None}
    out.update(nonfinite=nonfinite, nan=int(np.isnan(wide).sum()), size=int(wide.size))
    return out


def problem(probe: Dict[str, Any]) -> Optional[str]:
    """Why a probe is bad ('non-finite' or 'overflows fp16'), None when it is within range."""
    out = probe.get("out") or {}
    if out.get("nonfinite"):
        return "non-finite"
    limit = DTYPE_MAX.get(str(probe.get("dtype")))
    absmax = out.get("absmax")
    if limit is not None and isinstance(absmax, (int, float)) and absmax > limit:
        return "overflows " + SHORT.get(str(probe.get("dtype")), str(probe.get("dtype")))
    return None


def first_bad(probes: Iterable[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The first probe (in the order given, the execution order) that is bad, with its `problem`; else None."""
    for index, probe in enumerate(probes):
        why = problem(probe)
        if why is not None:
            return dict(probe, problem=why, index=index)
    return None


def _num(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "?"
    if math.isfinite(value) and (value == 0 or 1e-3 <= abs(value) < 1e4):
        return "%.3g" % value
    return "%.2g" % value


def _where(probe: Dict[str, Any]) -> str:
    kind = probe.get("kind")
    if kind == "forward":
        return "%s forward output" % probe.get("cell")
    if kind == "gradient":
        return "%s gradient of %s" % (probe.get("cell"), probe.get("param"))
    if kind == "update":
        return "%s update of %s" % (probe.get("cell"), probe.get("param"))
    return "the loss"


def _step_words(at: Dict[str, Any]) -> str:
    step = "{:,}".format(at["global_step"]).replace(",", " ") if isinstance(at.get("global_step"), int) else "?"
    return "epoch %s step %s (global step %s)" % (at.get("epoch"), at.get("step"), step)


def sentence(bad: Dict[str, Any], at: Dict[str, Any]) -> str:
    """'layer.1.Dense forward output overflows fp16 (max 7.1e+04) at epoch 3 step 12 (global step 1 284); input max 38.2'."""
    out = bad.get("out") or {}
    why = bad.get("problem") or problem(bad) or "is within range"
    if why == "non-finite":
        what = "is non-finite (%d of %d values NaN or Inf" % (out.get("nonfinite", 0), out.get("size", 0))
        what += "; finite max |x| %s)" % _num(out.get("absmax")) if out.get("absmax") is not None else ")"
    else:
        what = "%s (max |x| %s)" % (why, _num(out.get("absmax")))
    text = "%s %s %s at %s" % (_where(bad), bad.get("dtype"), what, _step_words(at))
    inp = bad.get("in")
    if isinstance(inp, dict):
        text += "; input max |x| %s" % _num(inp.get("absmax"))
        if inp.get("nonfinite"):
            text += " (%d non-finite)" % inp["nonfinite"]
    return text


def largest(probes: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The probe with the largest finite |x| relative to its dtype's limit (the closest to overflowing)."""
    best, best_frac = None, -1.0
    for probe in probes:
        absmax = (probe.get("out") or {}).get("absmax")
        limit = DTYPE_MAX.get(str(probe.get("dtype")))
        if isinstance(absmax, (int, float)) and limit:
            frac = absmax / limit
            if frac > best_frac:
                best, best_frac = probe, frac
    return best


def clean_sentence(probes: List[Dict[str, Any]], at: Dict[str, Any]) -> str:
    """The sentence of a replay where every probe was within range (the nearest to its limit named)."""
    near = largest(probes)
    text = "every cell output, the loss, every gradient and update at %s finite and within its dtype (%d probes)" % (
        _step_words(at),
        len(probes),
    )
    if near is not None:
        text += "; closest to its limit: %s %s max |x| %s" % (
            _where(near),
            near.get("dtype"),
            _num((near.get("out") or {}).get("absmax")),
        )
    return text


def origin_evidence(finding: Dict[str, Any], run_device: Dict[str, Any]) -> Dict[str, Any]:
    """The check's evidence: where, the probe, the replay device against the run's, the rules."""
    return {
        "at": finding.get("at"),
        "bad": finding.get("bad"),
        "probes": len(finding.get("probes") or []),
        "replay_device": finding.get("replay_device"),
        "run_device": run_device,
        "about": ABOUT_RULE,
        "order_rule": ORDER_RULE,
        "bad_rule": BAD_RULE,
    }


def origin_verdict(finding: Dict[str, Any], run_device: Dict[str, Any]) -> Tuple[str, str, Optional[str]]:
    """(status, detail, hint) of the overflow-origin check."""
    if "error" in finding:
        return Evidence.BLOCKED, "the replay could not run: %s" % finding["error"], "run `ms-workbench run numerics`"
    replay_on = str((finding.get("replay_device") or {}).get("target") or "?")
    run_on = str(run_device.get("target") or run_device.get("resolved") or "?")
    where = "replayed on %s in PyNative" % replay_on
    if replay_on != run_on:
        where += " (the run was on %s: this is evidence about the model's numbers, not about %s)" % (run_on, run_on)
    if finding.get("bad") is None:
        return (
            Evidence.BLOCKED,
            "not located: %s; %s" % (finding.get("sentence"), where),
            "the step did not break again in the replay",
        )
    return Evidence.FAIL, "%s; %s" % (finding.get("sentence"), where), "lower train.lr, rescale the inputs or use fp32"
