"""MindSpore <-> CANN pairing verdicts from the table in pairing.json.

Rows are marked "official" (MindSpore's own install guide, per release branch) or
"secondary" (deployment tools, release notes of other projects, third-party tables).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

PAIRING_PATH = Path(__file__).with_name("pairing.json")
SOURCES = ("official", "secondary")
_SUFFIX_RE = re.compile(r"\.(?:alpha|beta)\d*$", re.IGNORECASE)

_ROWS: Optional[List[Dict[str, Any]]] = None


def load_rows(path: Path = PAIRING_PATH) -> List[Dict[str, Any]]:
    """Read and validate the pairing rows; errors name the file, the row and the key."""
    with open(path, "r", encoding="utf-8") as fh:
        data = json.load(fh)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError("%s: expected an object with a 'rows' list" % path)
    for index, row in enumerate(rows):
        for key in ("mindspore", "cann", "source", "ref"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise ValueError("%s: row %d: key %r must be a non-empty string, got %r"
                                 % (path, index, key, row.get(key)))
        if row["source"] not in SOURCES:
            raise ValueError("%s: row %d: key 'source' must be one of %s, got %r"
                             % (path, index, SOURCES, row["source"]))
    return rows


def rows() -> List[Dict[str, Any]]:
    """All pairing rows (read once per process)."""
    global _ROWS
    if _ROWS is None:
        _ROWS = load_rows()
    return _ROWS


def normalize_mindspore(version: str) -> str:
    """'2.6.0-rc1' -> '2.6.0rc1'; local tags such as '+cpu' are dropped."""
    text = version.strip().lower().split("+")[0]
    return re.sub(r"[-_.]?(rc|a|b)(\d+)$", r"\1\2", text)


def normalize_cann(version: str) -> str:
    """Commercial CANN string: '8.0.RC3.beta1' -> '8.0.RC3', '8.0.rc3' -> '8.0.RC3'."""
    return _SUFFIX_RE.sub("", version.strip()).upper()


def rows_for(ms_version: str) -> List[Dict[str, Any]]:
    """Rows for this MindSpore version: rows for exactly it, plus its release-branch row (x.y)."""
    ms = normalize_mindspore(ms_version)
    branch = ".".join(ms.split(".")[:2])
    return [row for row in rows() if normalize_mindspore(row["mindspore"]) == ms
            or (row["mindspore"].count(".") == 1 and row["mindspore"] == branch)]


def _expected(found: List[Dict[str, Any]]) -> List[str]:
    """Distinct expected CANN versions, official rows first."""
    ordered = sorted(found, key=lambda row: SOURCES.index(row["source"]))
    result: List[str] = []
    for row in ordered:
        if row["cann"] not in result:
            result.append(row["cann"])
    return result


def pairing_verdict(ms_version: Optional[str], cann_version: Optional[str]) -> Dict[str, Any]:
    """{status, detail, expected_cann, source} for a MindSpore and a CANN version.

    not-run when either version is unknown or no row covers this MindSpore; a CANN matching
    only a secondary row passes with source "secondary" and says what the official row expects.
    """
    if not ms_version:
        return {"status": "not-run", "detail": "MindSpore version unknown", "expected_cann": [], "source": None}
    found = rows_for(ms_version)
    expected = _expected(found)
    if not found:
        return {"status": "not-run", "expected_cann": [], "source": None,
                "detail": "no pairing row for MindSpore %s in %s" % (ms_version, PAIRING_PATH.name)}
    if not cann_version:
        return {"status": "not-run", "expected_cann": expected, "source": found[0]["source"],
                "detail": "CANN version unknown; MindSpore %s expects CANN %s" % (ms_version, " or ".join(expected))}
    cann = normalize_cann(cann_version)
    matches = [row for row in found if normalize_cann(row["cann"]) == cann]
    official = [row["cann"] for row in found if row["source"] == "official"]
    if any(row["source"] == "official" for row in matches):
        return {"status": "observed-pass", "expected_cann": expected, "source": "official",
                "detail": "MindSpore %s pairs with CANN %s (MindSpore install guide)" % (ms_version, cann_version)}
    if matches:
        detail = "MindSpore %s with CANN %s: %s" % (ms_version, cann_version, matches[0]["ref"])
        if official:
            detail += "; MindSpore's own guide says CANN %s" % " or ".join(sorted(set(official)))
        return {"status": "observed-pass", "expected_cann": expected, "source": "secondary", "detail": detail}
    source = "official" if official else "secondary"
    return {"status": "observed-fail", "expected_cann": expected, "source": source,
            "detail": "MindSpore %s expects CANN %s (%s), found %s"
                      % (ms_version, " or ".join(expected), source, cann_version)}
