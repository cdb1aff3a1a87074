"""Markdown building blocks shared by report.md and its appendix files: cells, tables, evidence in words."""

from __future__ import annotations

import json
from typing import Any, Iterable, List, Sequence

from workbench.render import humanize as h

MAX_CELL_CHARS = 240


def num(value: Any, digits: int = 4) -> str:
    """A number for a table cell: '-' for missing, grouped integers, significant digits for floats."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return h.grouped(value) if abs(value) >= 10000 else str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        if abs(value) >= 1000:
            return h.grouped(value)
        if value != 0 and abs(value) < 1e-3:
            return "%.2g" % value
        return "%.*g" % (digits, value)
    return str(value)


def cell(value: Any, max_chars: int = MAX_CELL_CHARS) -> str:
    """Text safe inside a Markdown table cell, cut to `max_chars`."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    elif isinstance(value, float):
        text = num(value, 6)
    else:
        text = "-" if value is None or value == "" else str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], max_chars: int = MAX_CELL_CHARS) -> List[str]:
    """A Markdown table (header, separator, rows), followed by a blank line."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(cell(v, max_chars) for v in row) + " |")
    return lines + [""]


def in_words(evidence: Any, limit: int = 6) -> str:
    """Evidence data as 'key value; key value' with people's numbers (nested parts named, long lists counted)."""
    if not isinstance(evidence, dict) or not evidence:
        return "-" if not evidence else cell(evidence)
    parts = []
    for key, value in list(evidence.items())[:limit]:
        if isinstance(value, dict):
            inner = ", ".join("%s %s" % (k, _short(v)) for k, v in list(value.items())[:4])
            parts.append("%s: %s%s" % (key, inner, "…" if len(value) > 4 else ""))
        else:
            parts.append("%s %s" % (key, _short(value)))
    if len(evidence) > limit:
        parts.append("%d more keys in report.json" % (len(evidence) - limit))
    return "; ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, list):
        if len(value) <= 4 and all(not isinstance(v, (dict, list)) for v in value):
            return "[%s]" % ", ".join(_short(v) for v in value)
        return "(%d items)" % len(value)
    if isinstance(value, dict):
        return "(%d keys)" % len(value)
    if isinstance(value, float):
        return num(value)
    text = "-" if value is None else str(value)
    return text if len(text) <= 60 else text[:59] + "…"
