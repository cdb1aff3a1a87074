"""The Alignment screen's model: the latest align job's two paths, checks, tensor diffs and flips."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from workbench.views.base import LatestJobView

SIDES = ("ref", "cand")
ROLE = {"ref": "reference", "cand": "candidate"}


def num(value: Any, digits: int = 3) -> str:
    """A number in short scientific-or-plain form; '—' for missing, 'nan'/'inf' kept as text."""
    if isinstance(value, bool) or value is None:
        return "—"
    if not isinstance(value, (int, float)):
        return str(value)
    number = float(value)
    if number == 0.0:
        return "0"
    if not math.isfinite(number):
        return str(number)
    if 1e-3 <= abs(number) < 1e4:
        return "%.*g" % (digits + 1, number)
    return "%.*e" % (max(digits - 1, 0), number)


def percent(ratio: Any) -> str:
    """A mismatch ratio as a percentage; '—' when the comparison never reached the numbers."""
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool):
        return "—"
    if ratio and ratio * 100 < 0.01:
        return "<0.01%"
    return "%.2f%%" % (ratio * 100)


def shape_text(shape: Any) -> str:
    """[8, 16] → '8×16'; a scalar → 'scalar'; a shape mismatch → 'ref 8×16 / cand 8×10'."""
    if isinstance(shape, dict):
        return "ref %s / cand %s" % (shape_text(shape.get("ref")), shape_text(shape.get("cand")))
    if not shape:
        return "scalar"
    return "×".join(str(d) for d in shape)


def dtype_text(dtype: Any) -> str:
    """'float32' when both sides agree, else 'float32 / float16'."""
    if not isinstance(dtype, dict):
        return str(dtype or "—")
    ref, cand = dtype.get("ref"), dtype.get("cand")
    return str(ref) if ref == cand else "%s / %s" % (ref or "absent", cand or "absent")


RULE_TEXT = "|cand − ref| ≤ atol + rtol·|ref|"


def formula_lines(diff: Dict[str, Any]) -> List[str]:
    """The match rule with the worst element's numbers filled in, and whether it holds there."""
    lines = ["rule  " + RULE_TEXT]
    atol, rtol = diff.get("atol"), diff.get("rtol")
    worst = diff.get("worst") or {}
    ref, cand = worst.get("ref"), worst.get("cand")
    if not worst:
        lines.append("no element compared: %s" % (diff.get("reason") or "nothing to compare"))
        return lines
    lines.append("worst element %s" % (diff.get("worst_index"),))
    lines.append("  ref %s   cand %s" % (num(ref, 7), num(cand, 7)))
    if ref is None or cand is None:  # a diff line whose worst element lacks a side (damaged or partial)
        lines.append("no value there for %s" % " and ".join(n for n, v in (("ref", ref), ("cand", cand)) if v is None))
        return lines
    if isinstance(ref, str) or isinstance(cand, str) or atol is None or rtol is None:
        lines.append("non-finite there: NaN never matches, Inf only the same Inf")
        return lines
    abs_diff = abs(float(cand) - float(ref))
    allowed = float(atol) + float(rtol) * abs(float(ref))
    lines.append("  |cand − ref| = %s" % num(abs_diff))
    lines.append(
        "  atol + rtol·|ref| = %s + %s·%s = %s" % (num(atol), num(rtol), num(abs(float(ref)), 3), num(allowed))
    )
    lines.append("  → %s" % ("within" if abs_diff <= allowed else "OUTSIDE"))
    return lines


def hist_rows(hist: Optional[Dict[str, Any]], width: int = 20) -> List[Tuple[str, int, str]]:
    """(range label, count, bar) rows of a |diff| histogram, zeros and non-finite first when present."""
    if not hist:
        return []
    rows: List[Tuple[str, int]] = []
    if hist.get("zeros"):
        rows.append(("= 0", int(hist["zeros"])))
    edges, counts = hist.get("edges") or [], hist.get("counts") or []
    for i, count in enumerate(counts):
        low, high = (edges[i] if i < len(edges) else None), (edges[i + 1] if i + 1 < len(edges) else None)
        rows.append(("%s–%s" % (num(low, 2), num(high, 2)), int(count)))
    if hist.get("nonfinite"):
        rows.append(("non-finite", int(hist["nonfinite"])))
    top = max([c for _, c in rows] or [0])
    return [
        (label, count, "█" * (int(round(width * count / top)) if top else 0) or ("▏" if count else ""))
        for label, count in rows
    ]


class AlignmentView(LatestJobView):
    """Folds `align` job events into what the Alignment screen draws."""

    kinds = ("align",)

    def reset(self, jid: Optional[str]) -> None:
        """A newer align job is followed: nothing selected in it yet."""
        self.selected: Optional[str] = None

    @property
    def sides(self) -> Dict[str, Dict[str, Any]]:
        """The `side.ref` and `side.cand` checks by side."""
        return {cid.split(".", 1)[1]: ev for cid, ev in self.checks.items() if cid.startswith("side.")}

    @property
    def matched(self) -> List[Dict[str, Any]]:
        """The `match.*` checks (settings both paths must share)."""
        return [ev for cid, ev in self.checks.items() if cid.startswith("match.")]

    @property
    def diffs(self) -> List[Dict[str, Any]]:
        """Every tensor_diff in the order the job compared them."""
        return self.record.tensor_diffs

    def label(self, side: str) -> str:
        """The path label of a side ('CPU/pynative/fp32'), from the started event or its check."""
        key = "reference" if side == "ref" else "candidate"
        if self.started.get(key):
            return str(self.started[key])
        evidence = (self.sides.get(side) or {}).get("evidence") or {}
        return str(evidence.get("label") or "?")

    def side_status(self, side: str) -> str:
        """The evidence level of a side: observed-pass, observed-fail, blocked, not-run (or '' before it ran)."""
        return str((self.sides.get(side) or {}).get("status") or "")

    @property
    def verdict(self) -> str:
        """The alignment verdict check's status, '' until it is known."""
        return str((self.checks.get("alignment") or {}).get("status") or "")

    @property
    def first_failure(self) -> Optional[int]:
        """Position in `diffs` of the first tensor that did not pass (forward order), or None."""
        for position, diff in enumerate(self.diffs):
            if not diff.get("passed"):
                return position
        return None

    @property
    def flips(self) -> Optional[Dict[str, Any]]:
        """The logits' class flips {n, count, pairs}, or None before the logits were compared."""
        for diff in self.diffs:
            if diff.get("name") == "logits" and isinstance(diff.get("flips"), dict):
                return diff["flips"]
        return None

    def diff(self, name: Optional[str]) -> Optional[Dict[str, Any]]:
        """The tensor_diff of one tensor by name."""
        for diff in self.diffs:
            if diff.get("name") == name:
                return diff
        return None

    def default_selection(self) -> Optional[str]:
        """The tensor to show first: the first failure, else the logits, else the first tensor."""
        first = self.first_failure
        if first is not None:
            return str(self.diffs[first].get("name"))
        if self.diff("logits") is not None:
            return "logits"
        return str(self.diffs[0].get("name")) if self.diffs else None

    def select(self, name: Optional[str]) -> None:
        """Choose the tensor whose details are shown."""
        if name != self.selected:
            self.selected = name
            self.version += 1
