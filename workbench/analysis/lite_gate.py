"""MindSpore Lite's MindIR version gate: find it in Lite's output and say what it means.

Lite checks the MindIR format version before any backend runs. On a 310B4 board (MindSpore
2.4.10 exporting MindIR version 2, Lite 2.2.11) both the CPU and the Ascend build stopped at:

    Build] Catch exception: This software can only support the maximum mind ir version: 1,
    please install the latest version to support the mind ir version: 2

Such a stop says nothing about the backend or the device: the fix is a version pairing
(a MindSpore that exports a version Lite reads, or a Lite that reads this version), not a retry.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

# Lite's wording, tolerant of the line break and spacing between its two sentences
# ("mind ir" has also been seen written "mindir" and "MindIR").
_GATE = re.compile(
    r"can\s+only\s+support\s+the\s+maximum\s+mind\s*ir\s+version\s*:\s*(?P<max>\d+)"
    r"[\s\S]{0,200}?support\s+the\s+mind\s*ir\s+version\s*:\s*(?P<file>\d+)",
    re.IGNORECASE,
)

GATE_HINT = (
    "change the version pairing — a MindSpore that exports a MindIR version this Lite reads, or a "
    "Lite that reads this version — rather than retrying the same file; the backend was not reached"
)


def parse_lite_version_gate(text: str) -> Optional[Dict[str, Any]]:
    """{max_supported, file_version, message} when `text` holds Lite's MindIR version gate, else None."""
    if not text:
        return None
    found = _GATE.search(text)
    if found is None:
        return None
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    message = text[start : end if end >= 0 else len(text)].strip()
    return {
        "max_supported": int(found.group("max")),
        "file_version": int(found.group("file")),
        "message": message,
    }


def describe_gate(gate: Dict[str, Any], backend: str) -> str:
    """One sentence for a check's detail: where Lite stopped and why."""
    return (
        "MindSpore Lite (%s) stopped at its MindIR version gate: it reads MindIR up to version %d, "
        "this file needs version %d; the %s backend was not reached"
        % (backend, gate["max_supported"], gate["file_version"], backend)
    )
