"""MindSpore <-> CANN pairing verdicts from the table in pairing.json.

Rows are marked "official" (MindSpore's own install guide, per release branch) or
"secondary" (deployment tools, release notes of other projects, third-party tables).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

from workbench.events.protocol import Evidence

PAIRING_PATH = Path(__file__).with_name("pairing.json")
SOURCES = ("official", "secondary")
_SUFFIX_RE = re.compile(r"\.(?:alpha|beta)\d*$", re.IGNORECASE)

_ROWS: Optional[List[Dict[str, Any]]] = None


def load_rows(path: Path = PAIRING_PATH) -> List[Dict[str, Any]]:
    """Read and validate the pairing rows; errors name the file, the row and the key."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError("%s: expected an object with a 'rows' list" % path)
    for index, row in enumerate(rows):
        for key in ("mindspore", "cann", "source", "ref"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise ValueError(
                    "%s: row %d: key %r must be a non-empty string, got %r" % (path, index, key, row.get(key))
                )
        if row["source"] not in SOURCES:
            raise ValueError(
                "%s: row %d: key 'source' must be one of %s, got %r" % (path, index, SOURCES, row["source"])
            )
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
    return [
        row
        for row in rows()
        if normalize_mindspore(row["mindspore"]) == ms
        or (row["mindspore"].count(".") == 1 and row["mindspore"] == branch)
    ]


def _versions(found: List[Dict[str, Any]]) -> List[str]:
    """Distinct CANN versions of these rows, in table order."""
    result: List[str] = []
    for row in found:
        if row["cann"] not in result:
            result.append(row["cann"])
    return result


def _refs(found: List[Dict[str, Any]]) -> str:
    """The rows' references, each once."""
    refs: List[str] = []
    for row in found:
        if row["ref"] not in refs:
            refs.append(row["ref"])
    return "; ".join(refs)


def _secondary_text(found: List[Dict[str, Any]]) -> str:
    """'8.2.RC1 (secondary: <ref>)' for each version the rows name, so no version is attributed to the guide."""
    return ", ".join(
        "%s (secondary: %s)" % (version, _refs([r for r in found if r["cann"] == version]))
        for version in _versions(found)
    )


def pairing_verdict(ms_version: Optional[str], cann_version: Optional[str]) -> Dict[str, Any]:
    """{status, detail, expected_cann, official_cann, secondary_cann, source, inferred} for a MindSpore and a CANN.

    The official rows (MindSpore's install guide) decide whenever they cover this MindSpore:
    a CANN that only a secondary row names, contradicted by the guide, is observed-fail with
    `inferred` true and both sources in the detail. Secondary rows decide only where the guide
    has no row, and the detail says so. not-run when either version is unknown or no row covers it.
    """
    out: Dict[str, Any] = {
        "expected_cann": [],
        "official_cann": [],
        "secondary_cann": [],
        "source": None,
        "inferred": False,
    }
    if not ms_version:
        return dict(out, status=Evidence.NOT_RUN, detail="MindSpore version unknown")
    found = rows_for(ms_version)
    official = [row for row in found if row["source"] == "official"]
    secondary = [row for row in found if row["source"] == "secondary"]
    out.update(
        expected_cann=_versions(official) or _versions(secondary),
        official_cann=_versions(official),
        secondary_cann=_versions(secondary),
        source="official" if official else "secondary" if found else None,
    )
    if not found:
        return dict(
            out,
            status=Evidence.NOT_RUN,
            detail="no pairing row for MindSpore %s in %s" % (ms_version, PAIRING_PATH.name),
        )
    guide = "MindSpore install guide: %s" % _refs(official)
    expects = "MindSpore %s expects CANN %s (%s)" % (
        ms_version,
        " or ".join(out["expected_cann"]),
        guide if official else "secondary: %s" % _refs(secondary),
    )
    if not cann_version:
        return dict(out, status=Evidence.NOT_RUN, detail="CANN version unknown; " + expects)
    cann = normalize_cann(cann_version)
    if any(normalize_cann(row["cann"]) == cann for row in official):
        detail = "MindSpore %s pairs with CANN %s (%s)" % (ms_version, cann_version, guide)
        others = [row for row in secondary if normalize_cann(row["cann"]) != cann]
        if others:
            detail += "; secondary sources that say otherwise: " + _secondary_text(others)
        return dict(out, status=Evidence.PASS, source="official", detail=detail)
    supporting = [row for row in secondary if normalize_cann(row["cann"]) == cann]
    if supporting and official:
        return dict(
            out,
            status=Evidence.FAIL,
            source="official",
            inferred=True,
            detail=(
                "MindSpore %s with CANN %s: inferred from a secondary source (%s) contradicted by MindSpore's install "
                "guide, which says CANN %s (%s)"
                % (ms_version, cann_version, _refs(supporting), " or ".join(out["official_cann"]), _refs(official))
            ),
        )
    if supporting:
        return dict(
            out,
            status=Evidence.PASS,
            source="secondary",
            detail=(
                "MindSpore %s with CANN %s: from a secondary source (%s); MindSpore's install guide has no row for "
                "this version" % (ms_version, cann_version, _refs(supporting))
            ),
        )
    detail = "%s, found %s" % (expects, cann_version)
    named_elsewhere = [row for row in secondary if row["cann"] not in out["official_cann"]] if official else []
    if named_elsewhere:
        detail += "; secondary sources name " + _secondary_text(named_elsewhere)
    return dict(out, status=Evidence.FAIL, detail=detail)
