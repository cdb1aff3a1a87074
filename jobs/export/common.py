"""Constants and small formatters every part of the export job shares."""

from __future__ import annotations

from typing import Any

from jobs.common.msdevice import short_error
from workbench.analysis.tensordiff import DEFAULT_TOLERANCES

EXPORT_MODE = "graph"  # graph mode is the path a board runs a delivered model in; the loaders use it too
TOLERANCE = DEFAULT_TOLERANCES["float32"]
DEVICE_CONTEXT_NOTE = (
    "a loader that does not return may be starved by this job's own device context "
    "(seen on a 310B board: a child doing device work while the parent holds the "
    "device does not return)"
)


def short(exc: BaseException) -> str:
    """An exception as 'Type: message', MindSpore's C++ stack cut, bounded for a check's detail."""
    return short_error(exc, limit=1500)


def fmt(value: Any, pattern: str = "%.4f") -> str:
    """A number with `pattern`, anything else (None, text) as it is."""
    return pattern % value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
