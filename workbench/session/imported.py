"""Which sessions are imported records: the mark `ms-workbench import` leaves, and how it is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from workbench.system.atomic import read_json

IMPORT_MARK = "imported.json"


def imported_mark(session_dir: Path) -> Optional[Dict[str, Any]]:
    """The import mark of a session folder, or None for a session made here."""
    path = Path(session_dir) / IMPORT_MARK
    if not path.is_file():
        return None
    try:
        mark = read_json(path)
    except (OSError, ValueError):
        return {"id": Path(session_dir).name, "damaged": True}
    return mark if isinstance(mark, dict) else {"id": Path(session_dir).name, "damaged": True}


def imported_summary(session_dir: Path) -> Optional[Dict[str, Any]]:
    """What `sessions` shows of an imported session (None for one made here)."""
    mark = imported_mark(session_dir)
    if mark is None:
        return None
    return {
        "host": mark.get("host"),
        "revision": mark.get("revision"),
        "imported_at": mark.get("imported_at"),
        "source": mark.get("source"),
        "files_verified": mark.get("files_verified"),
    }


def imported_label(summary: Optional[Dict[str, Any]]) -> str:
    """'  imported from board-01 (revision abc123)' or ''."""
    if summary is None:
        return ""
    rev = " (revision %s)" % summary["revision"] if summary.get("revision") else ""
    return "  imported from %s%s, read-only" % (summary.get("host") or "an unknown host", rev)


def imported_session_of(path: Path) -> Optional[Path]:
    """The imported session folder that holds `path`, or None when it lies in no imported session."""
    path = Path(path).resolve()
    for folder in [path] + list(path.parents):
        if (folder / IMPORT_MARK).is_file() and (folder / "session.json").is_file():
            return folder
    return None
