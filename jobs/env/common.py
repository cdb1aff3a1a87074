"""Text helpers the env checks share: the end of a long output, a file that may be missing."""

from __future__ import annotations

from pathlib import Path

RAW_TAIL_CHARS = 4000


def tail(text: str, limit: int = RAW_TAIL_CHARS) -> str:
    """The end of a long text (where the error is)."""
    return text if len(text) <= limit else "...\n" + text[-limit:]


def read_text(path: Path) -> str:
    """A file's text, or '' when missing."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
