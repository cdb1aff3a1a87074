"""New-distribution results read once: the heat map (sets × severity), the worst drop per set, the scope of use.

The `shift` job writes per set and severity the candidate's accuracy, macro-F1 and its drop from the
same test images unshifted; the TUI and the record both read them through these functions.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

# name -> (family, what a user should not expect of the candidate when this set breaks it)
SETS: Dict[str, Tuple[str, str]] = {
    "brightness": ("lighting", "brightly lit or over-exposed photos"),
    "contrast": ("lighting", "flat, low-contrast lighting"),
    "gamma": ("lighting", "dark, under-exposed photos"),
    "light_background": ("background", "garments on a grey or light backdrop"),
    "inverted": ("background", "photos on light backgrounds without inversion"),
    "scale": ("framing", "garments small in the frame"),
    "translate": ("framing", "garments off-centre"),
    "crop_resize": ("framing", "tightly cropped garments"),
    "rotate": ("geometry", "rotated garments"),
    "shear": ("geometry", "photos taken at an angle"),
    "motion_blur": ("blur", "photos with camera shake"),
    "defocus_blur": ("blur", "out-of-focus photos"),
    "shot_noise": ("noise", "noisy low-light photos"),
    "impulse_noise": ("noise", "images with dead or hot pixels"),
    "flip": ("flips", "mirrored, upside-down or turned images"),
}
OWN = "own"


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def rows(result: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The result's set rows that carry a set name, an integer severity and a numeric macro-F1 (others skipped)."""
    found = result.get("sets") if isinstance(result, Mapping) else None
    return [
        r
        for r in (found if isinstance(found, list) else [])
        if isinstance(r, dict)
        and isinstance(r.get("set"), str)
        and type(r.get("severity")) is int
        and _number(r.get("macro_f1")) is not None
    ]


def heat_map(result: Mapping[str, Any]) -> Tuple[List[str], List[int], List[List[Optional[float]]]]:
    """(set names, severities, macro-F1 per set and severity; None where a pair was not evaluated)."""
    shifted = [r for r in rows(result) if r["set"] != OWN]
    names = list(dict.fromkeys(r["set"] for r in shifted))
    severities = sorted({r["severity"] for r in shifted})
    cell = {(r["set"], r["severity"]): r["macro_f1"] for r in shifted}
    return names, severities, [[cell.get((n, s)) for s in severities] for n in names]


def worst(result: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per set (own images included), the row with the largest macro-F1 drop from the clean images."""
    out: Dict[str, Dict[str, Any]] = {}
    for row in rows(result):
        name = row["set"]
        if _number(row.get("drop")) is None:
            continue
        if name not in out or row["drop"] > out[name]["drop"]:
            out[name] = row
    return out


def _first_breaking(result: Mapping[str, Any], name: str, tolerance: float) -> Optional[Dict[str, Any]]:
    mine = sorted((r for r in rows(result) if r["set"] == name), key=lambda r: r["severity"])
    return next((r for r in mine if _number(r.get("drop")) is not None and r["drop"] > tolerance), None)


def scope(result: Mapping[str, Any]) -> Dict[str, List[str]]:
    """Where the candidate holds (drop within the tolerance at every severity) and where it does not, in sentences."""
    tolerance = _number(result.get("tolerance")) or 0.0
    clean_part = result.get("clean")
    clean = _number(clean_part.get("macro_f1")) if isinstance(clean_part, dict) else None
    holds: List[str] = []
    breaks: List[str] = []
    for name, row in worst(result).items():
        what = SETS.get(name, (name, "images like the user's own set"))[1]
        if row["drop"] <= tolerance:
            every = "" if name == OWN else " at every severity evaluated"
            holds.append("%s: macro-F1 within %.2f of the clean images%s" % (name.replace("_", " "), tolerance, every))
            continue
        first = _first_breaking(result, name, tolerance) or row
        at = "" if name == OWN else " from severity %d (%s)" % (first["severity"], first.get("shift", "?"))
        breaks.append(
            "%s: macro-F1 %s → %s%s — not for %s"
            % (name.replace("_", " "), _num(clean), _num(first.get("macro_f1")), at, what)
        )
    return {"holds": holds, "breaks": breaks}


def _num(value: Any) -> str:
    if isinstance(value, float):
        return "%.2f" % value if abs(value) >= 0.01 or value == 0 else "%.3g" % value
    return "-" if value is None else str(value)


def drop_limits(value: Union[None, float, Mapping[str, Any]], names: List[str]) -> Dict[str, float]:
    """acceptance.max_shift_drop as {set: largest allowed macro-F1 drop}: one number for every set, or per set."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): float(v) for k, v in value.items()}
    return {name: float(value) for name in names}


def judge(result: Mapping[str, Any], limits: Mapping[str, float]) -> Tuple[bool, List[str]]:
    """(every limited set within its limit at its worst severity, one line per limited set with drop vs limit)."""
    found = worst(result)
    ok, lines = True, []
    for name, limit in sorted(limits.items()):
        row = found.get(name)
        if row is None:
            ok = False
            lines.append("%s: not evaluated (limit %.3f)" % (name, limit))
            continue
        within = row["drop"] <= limit
        ok = ok and within
        lines.append(
            "%s: worst drop %.3f at severity %s %s limit %.3f"
            % (name, row["drop"], row.get("severity"), "within" if within else "over", limit)
        )
    return ok, lines
