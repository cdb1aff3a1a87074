"""The training-state monitor's samples and flags: per parameter weight norm, gradient norm, update ratio, non-finite share.

A `monitor` event carries consecutive samples (one per sampled step) of every parameter. The flags
follow stated rules, each raised once per parameter at the first sample where it holds.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence

EXPLODE_K = 10.0  # gradient norm above EXPLODE_K x the median of its earlier samples
EXPLODE_MIN_SAMPLES = 5  # earlier samples needed before the explode rule speaks
VANISH_FLOOR = 1e-7  # gradient norm below this
STALL_RATIO = 1e-6  # update ratio below this ...
STALL_SAMPLES = 20  # ... for this many consecutive samples
HISTORY = 200  # earlier samples kept per parameter for the running median and the sparkline
SERIES = 1000  # whole-run samples kept for the record's figure: every k-th, k doubling when full
RULES = {
    "exploding": "gradient norm > %g x the median of its earlier samples (after %d samples)"
    % (EXPLODE_K, EXPLODE_MIN_SAMPLES),
    "vanishing": "gradient norm < %g" % VANISH_FLOOR,
    "stalled": "update ratio |dw|/|w| < %g for %d consecutive samples" % (STALL_RATIO, STALL_SAMPLES),
    "non-finite": "a NaN or Inf among the gradient's values",
}
FLAG_ORDER = ("non-finite", "exploding", "vanishing", "stalled")
FIELDS = ("weight_norm", "grad_norm", "update_ratio", "nonfinite")
_INF = float("inf")
RATIO_RULE = "update ratio = |w_after - w_before| / |w_after| of one step (L2 norms over the parameter)"


def _num(value: Any) -> Optional[float]:
    """A float of a JSON number or non-finite string ('nan', 'inf'); None otherwise."""
    if type(value) in (int, float):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def samples(event: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """A `monitor` event's samples: {global_step, epoch, rows: {name: {weight_norm, grad_norm, ...}}}."""
    names = event.get("names") or []
    steps = event.get("global_step") or []
    epochs = event.get("epoch") if isinstance(event.get("epoch"), list) else None
    marks = event.get("skipped")
    skipped: List[Any] = marks if isinstance(marks, list) else []
    for i, step in enumerate(steps):
        rows = {}
        for j, name in enumerate(names):
            row = {}
            for field in FIELDS:
                table = event.get(field) or []
                values = table[i] if i < len(table) and isinstance(table[i], list) else []
                row[field] = _num(values[j]) if j < len(values) else None
            rows[name] = row
        yield {
            "global_step": step,
            "epoch": epochs[i] if epochs and i < len(epochs) else None,
            "rows": rows,
            "skipped": i < len(skipped) and skipped[i] is True,
        }


def _median(ordered: List[float]) -> float:
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


class TrainState:
    """Samples folded per parameter: the latest row, a bounded history, and the flags raised so far."""

    def __init__(self) -> None:
        self.names: List[str] = []
        self.latest: Dict[str, Dict[str, Optional[float]]] = {}
        self.grad_history: Dict[str, Deque[float]] = {}
        self.grad_sorted: Dict[str, List[float]] = {}  # grad_history kept sorted: the running median in O(log n)
        self.ratio_history: Dict[str, Deque[float]] = {}
        self.stall_run: Dict[str, int] = {}
        self.flags: List[Dict[str, Any]] = []  # the first time each (flag, parameter) held
        self.flag_counts: Dict[str, int] = {}  # samples at which a flag held, by flag
        self.count = 0
        self.skipped = 0  # samples of steps a dynamic loss scale skipped (overflow): counted, never judged
        self.last_skipped: Optional[int] = None
        self.last_step: Optional[int] = None
        self.series: List[Dict[str, Any]] = []  # {global_step, grad_norm: {name: v}, update_ratio: {...}} thinned
        self.stride = 1

    def add_event(self, event: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Fold every sample of one `monitor` event; the flags raised for the first time."""
        new: List[Dict[str, Any]] = []
        for sample in samples(event):
            new.extend(self.add(sample))
        return new

    def add(self, sample: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Fold one sample; the flags raised for the first time by it."""
        self.count += 1
        self.last_step = sample.get("global_step")
        if sample.get("skipped"):
            # the loss scale overflowed and the optimizer did not run: non-finite gradients are the scale's, not
            # the model's, and the weights did not move, so no rule reads this sample
            self.skipped += 1
            self.last_skipped = sample.get("global_step")
            return []
        if (self.count - 1) % self.stride == 0:
            self.series.append(
                {
                    "global_step": sample.get("global_step"),
                    "grad_norm": {n: r.get("grad_norm") for n, r in sample["rows"].items()},
                    "update_ratio": {n: r.get("update_ratio") for n, r in sample["rows"].items()},
                }
            )
            if len(self.series) >= SERIES:
                self.series, self.stride = self.series[::2], self.stride * 2
        raised = []
        for name, row in sample["rows"].items():
            if name not in self.latest:
                self.names.append(name)
                self.grad_history[name] = deque(maxlen=HISTORY)
                self.grad_sorted[name] = []
                self.ratio_history[name] = deque(maxlen=HISTORY)
                self.stall_run[name] = 0
            for flag, value in self._flags_of(name, row):
                self.flag_counts[flag] = self.flag_counts.get(flag, 0) + 1
                if not any(f["flag"] == flag and f["param"] == name for f in self.flags):
                    found = {
                        "flag": flag,
                        "param": name,
                        "global_step": sample.get("global_step"),
                        "epoch": sample.get("epoch"),
                        "value": value,
                        "rule": RULES[flag],
                    }
                    self.flags.append(found)
                    raised.append(found)
            self.latest[name] = row
            grad, ratio = row.get("grad_norm"), row.get("update_ratio")
            if grad is not None and math.isfinite(grad):
                self._remember(name, grad)
            if ratio is not None and math.isfinite(ratio):
                self.ratio_history[name].append(ratio)
        return raised

    def _remember(self, name: str, grad: float) -> None:
        """Append to the bounded history and its sorted copy (the oldest value leaves both when full)."""
        history, ordered = self.grad_history[name], self.grad_sorted[name]
        if len(history) == history.maxlen:
            del ordered[bisect.bisect_left(ordered, history[0])]
        history.append(grad)
        bisect.insort(ordered, grad)

    def _flags_of(self, name: str, row: Dict[str, Optional[float]]) -> Sequence[tuple]:
        grad, ratio, nonfinite = row.get("grad_norm"), row.get("update_ratio"), row.get("nonfinite")
        history = self.grad_history[name]
        # the commonest row, no rule holding, told at once (NaN fails every comparison: the rules below then)
        if (
            nonfinite == 0
            and grad is not None
            and VANISH_FLOOR <= grad < _INF
            and ratio is not None
            and STALL_RATIO <= ratio < _INF
            and (len(history) < EXPLODE_MIN_SAMPLES or grad <= EXPLODE_K * _median(self.grad_sorted[name]))
        ):
            self.stall_run[name] = 0
            return ()
        out = []
        if (nonfinite is not None and nonfinite > 0) or (grad is not None and not math.isfinite(grad)):
            out.append(("non-finite", nonfinite))
        if grad is not None and math.isfinite(grad):
            if len(history) >= EXPLODE_MIN_SAMPLES and grad > EXPLODE_K * _median(self.grad_sorted[name]):
                out.append(("exploding", grad))
            if grad < VANISH_FLOOR:
                out.append(("vanishing", grad))
        if ratio is not None and math.isfinite(ratio) and ratio < STALL_RATIO:
            self.stall_run[name] += 1
            if self.stall_run[name] >= STALL_SAMPLES:
                out.append(("stalled", ratio))
        else:
            self.stall_run[name] = 0
        return out

    def summary(self) -> Dict[str, Any]:
        """What the session record keeps: names, sample count, the thinned series, the flags and their rules."""
        return {
            "names": list(self.names),
            "samples": self.count,
            "skipped": self.skipped,
            "stride": self.stride,
            "series": list(self.series),
            "flags": list(self.flags),
            "flag_samples": dict(self.flag_counts),
            "rules": RULES,
            "ratio_rule": RATIO_RULE,
        }

    def first(self, flag: str) -> Optional[Dict[str, Any]]:
        """The earliest sample at which `flag` held for any parameter."""
        found = [f for f in self.flags if f["flag"] == flag]
        return min(found, key=lambda f: f["global_step"] if isinstance(f["global_step"], int) else 0) if found else None

    def param_flags(self, name: str) -> List[str]:
        """The flags raised so far for one parameter, in FLAG_ORDER."""
        held = {f["flag"] for f in self.flags if f["param"] == name}
        return [flag for flag in FLAG_ORDER if flag in held]


def describe(flag: Dict[str, Any]) -> str:
    """'exploding: 3.weight at global step 412 (gradient norm 57.1)'."""
    what = {"exploding": "gradient norm", "vanishing": "gradient norm", "stalled": "update ratio"}.get(
        flag["flag"], "non-finite share"
    )
    value = flag.get("value")
    shown = "%.3g" % value if isinstance(value, (int, float)) else str(value)
    return "%s: %s at global step %s (%s %s)" % (flag["flag"], flag["param"], flag.get("global_step"), what, shown)
