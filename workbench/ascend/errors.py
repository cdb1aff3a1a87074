"""Explain Ascend / MindSpore error texts with the table in errors.json.

Each entry: id, pattern (a regular expression matched against log text), cause (one line),
next_check (one line) and seen_in (where the verbatim text was collected).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ERRORS_PATH = Path(__file__).with_name("errors.json")
REQUIRED_KEYS = ("id", "pattern", "cause", "next_check")

_TABLE: Optional[List[Tuple[Dict[str, Any], re.Pattern[str]]]] = None


def load_table(path: Path = ERRORS_PATH) -> List[Tuple[Dict[str, Any], re.Pattern[str]]]:
    """Read and validate the error table; errors name the file, the entry and the key."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("%s: expected an object with an 'entries' list" % path)
    table = []
    seen = set()
    for index, entry in enumerate(entries):
        where = "%s: entry %d (%s)" % (path, index, entry.get("id") if isinstance(entry, dict) else entry)
        if not isinstance(entry, dict):
            raise ValueError("%s: expected an object" % where)
        for key in REQUIRED_KEYS:
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ValueError("%s: key %r must be a non-empty string, got %r" % (where, key, entry.get(key)))
        if entry["id"] in seen:
            raise ValueError("%s: duplicate id %r" % (where, entry["id"]))
        seen.add(entry["id"])
        try:
            compiled = re.compile(entry["pattern"], re.MULTILINE)
        except re.error as exc:
            raise ValueError(
                "%s: key 'pattern' is not a valid regular expression (%s): %r" % (where, exc, entry["pattern"])
            ) from None
        table.append((entry, compiled))
    return table


def entries() -> List[Dict[str, Any]]:
    """All table entries (copies), in table order."""
    return [dict(entry) for entry, _ in _table()]


def _table() -> List[Tuple[Dict[str, Any], re.Pattern[str]]]:
    """The validated table, read once per process."""
    global _TABLE
    if _TABLE is None:
        _TABLE = load_table()
    return _TABLE


def explain(text: str) -> List[Dict[str, Any]]:
    """Every entry whose pattern occurs in `text`, ordered by where it first occurs.

    Each result is the entry plus `match` (the matched text) and `offset`.
    """
    found = []
    for order, (entry, pattern) in enumerate(_table()):
        m = pattern.search(text or "")
        if m:
            result = dict(entry)
            result["match"] = m.group(0)
            result["offset"] = m.start()
            found.append((m.start(), order, result))
    found.sort(key=lambda item: (item[0], item[1]))
    return [result for _, _, result in found]
