"""Driver and firmware compatibility, both ways.

The driver's version.info lists the firmware it accepts (`compatible_version_fw=[low,high],...`),
the firmware's lists the drivers it accepts (`compatible_version_drv=[...]`). A pair is
compatible only when each admits the other. Each direction is its own verdict (pass, fail, or
not-run with why); the pair passes only when both directions were checked and pass, so a
one-way check is never taken for the whole.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Optional, Tuple

from workbench.events.protocol import Evidence

_RANGE_RE = re.compile(r"\[([^,\]]+),([^\]]+)\]")
DRIVER_SIDE = "driver's compatible_version_fw"
FIRMWARE_SIDE = "firmware's compatible_version_drv"


def _release_key(text: str) -> Optional[Tuple[Tuple[int, int, str], ...]]:
    """Sort key of a driver/firmware release: 24.1.rc3 < 24.1.0 < 24.1.1 (rcN before the release); None when unreadable.

    A release starts with a number ('V7.5.0.1.129' is not read as one); later pieces are
    numbers, rcN, or build tags (alpha, T11, B218), which sort before the releases.
    """
    pieces = text.strip().lower().split(".")
    if not pieces or not pieces[0].isdigit():
        return None
    parts = []
    for piece in pieces:
        if piece.isdigit():
            parts.append((1, int(piece), ""))
        elif re.fullmatch(r"rc\d+", piece):
            parts.append((0, int(piece[2:]), ""))
        elif re.fullmatch(r"[a-z][a-z0-9]*", piece):
            parts.append((0, -1, piece))
        else:
            return None
    return tuple(parts)


def readable(version: Optional[str]) -> bool:
    """Can this check compare `version` at all?"""
    return _release_key(version or "") is not None


def in_ranges(version: Optional[str], ranges_text: Optional[str]) -> Optional[bool]:
    """Is `version` inside one of the `[low,high]` ranges of a version.info list? None when unknown.

    A high bound ending in a dot ("[24.1,24.1.]") is open-ended: every 24.1.x release.
    """
    ranges = _RANGE_RE.findall(ranges_text or "")
    key = _release_key(version or "")
    if not ranges or key is None:
        return None
    unreadable = False
    for low, high in ranges:
        lo, hi = _release_key(low), _release_key(high.strip().rstrip("."))
        if lo is None or hi is None:
            unreadable = True  # a bound it cannot read might have admitted the version
            continue
        if key < lo:
            continue
        if (key[: len(hi)] <= hi) if high.strip().endswith(".") else key <= hi:
            return True
    return None if unreadable else False


def firmware_in_driver_range(driver_fields: Mapping[str, str], firmware_version: Optional[str]) -> Optional[bool]:
    """Is the firmware inside the driver's `compatible_version_fw` ranges? None when unknown."""
    return in_ranges(firmware_version, driver_fields.get("compatible_version_fw"))


def driver_in_firmware_range(firmware_fields: Mapping[str, str], driver_version: Optional[str]) -> Optional[bool]:
    """Is the driver inside the firmware's `compatible_version_drv` ranges? None when unknown."""
    return in_ranges(driver_version, firmware_fields.get("compatible_version_drv"))


def _side(
    name: str, holder: Mapping[str, Any], key: str, other: str, other_version: Optional[str], other_from: Optional[str]
) -> Dict[str, Any]:
    """One direction: does `holder`'s `key` list admit the other part's version?"""
    own = name.split("'")[0]
    ranges = holder["fields"].get(key) if holder.get("found") else None
    fits = in_ranges(other_version, ranges)
    why = None
    if not holder.get("found"):
        why = "no %s version.info (looked at %s)" % (own, ", ".join(e["path"] for e in holder.get("looked_at", [])))
    elif not ranges:
        why = "the %s's version.info (%s) has no %s" % (own, holder.get("path"), key)
    elif other_version is None:
        why = "%s version unknown" % other
    elif not readable(other_version):
        why = "cannot read %s version %r" % (other, other_version)
    elif fits is None:
        why = "cannot read a bound of %r" % ranges
    said = "%s %s %s %s %s (its %s is %s)" % (
        own,
        holder.get("version"),
        "lists" if fits else "does not list",
        other,
        other_version,
        key,
        ranges,
    )
    return {
        "status": Evidence.NOT_RUN if fits is None else Evidence.PASS if fits else Evidence.FAIL,
        "detail": "not checked: " + str(why) if fits is None else said,
        "side": name,
        "file": holder.get("path"),
        "own_version": holder.get("version"),
        "ranges": ranges,
        "other": other,
        "other_version": other_version,
        "other_from": other_from,
        "fits": fits,
        "why_not": why,
    }


def compatibility_verdict(
    driver: Mapping[str, Any],
    firmware: Mapping[str, Any],
    driver_version: Optional[str] = None,
    firmware_version: Optional[str] = None,
) -> Dict[str, Any]:
    """{status, detail, hint, checked, sides} for a driver and a firmware (each a version.info read).

    Versions come from the files; `driver_version` / `firmware_version` (e.g. from npu-smi) stand
    in when a file is missing. observed-fail when either side excludes the other, observed-pass
    only when both sides were checked and admit each other, else not-run (each side says why).
    """
    drv_v = driver.get("version") or driver_version
    fw_v = firmware.get("version") or firmware_version
    drv_from = driver.get("path") if driver.get("version") else "npu-smi"
    fw_from = firmware.get("path") if firmware.get("version") else "npu-smi"
    sides = [
        _side(DRIVER_SIDE, driver, "compatible_version_fw", "firmware", fw_v, fw_from),
        _side(FIRMWARE_SIDE, firmware, "compatible_version_drv", "driver", drv_v, drv_from),
    ]
    checked = [s["side"] for s in sides if s["fits"] is not None]
    notes = [s["detail"] for s in sides if s["fits"] is not None]
    for s in sides:
        if s["other_from"] == "npu-smi" and s["other_version"] and s["fits"] is not None:
            notes.append("%s %s (from npu-smi)" % (s["other"], s["other_version"]))
    unchecked = ["%s %s" % (s["side"], s["detail"]) for s in sides if s["fits"] is None]
    out = {"checked": checked, "sides": sides, "driver": drv_v, "firmware": fw_v, "hint": None}
    if any(s["fits"] is False for s in sides):
        out.update(
            status=Evidence.FAIL,
            detail="; ".join(notes + unchecked),
            hint="install the driver and firmware packages released together (same HDK version); "
            "driver %s, firmware %s" % (drv_v, fw_v),
        )
    elif len(checked) == 2:
        out.update(
            status=Evidence.PASS,
            detail="driver %s and firmware %s list each other: %s" % (drv_v, fw_v, "; ".join(notes)),
        )
    elif checked:
        # One direction admits the other, the other direction is unknown: not established both ways.
        out.update(
            status=Evidence.NOT_RUN,
            detail="one way only: %s passes (%s); %s" % (checked[0], "; ".join(notes), "; ".join(unchecked)),
        )
    else:
        out.update(status=Evidence.NOT_RUN, detail="neither side checked: " + "; ".join(unchecked))
    return out
