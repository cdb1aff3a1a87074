"""Hostile replacements of one file of a session: empty, cut, a FIFO, a folder, a symlink to /dev/zero, a huge line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

KINDS = ["empty", "cut", "fifo", "directory", "symlink-to-dev-zero", "huge-line"]
HUGE_LINE_BYTES = 4 << 20


def damage(path: Path, kind: str) -> bytes:
    """Replace the file at `path` by a hostile `kind` of thing; return its bytes, for `restore`."""
    data = path.read_bytes()
    path.unlink()
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "fifo":
        os.mkfifo(str(path))
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink-to-dev-zero":
        os.symlink("/dev/zero", str(path))
    else:
        path.write_bytes(data + b"x" * HUGE_LINE_BYTES)
    return data


def restore(path: Path, data: bytes) -> None:
    """Put the original file back."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(str(path))
    else:
        path.unlink()
    path.write_bytes(data)


def exit_json_damaged(rel: str, kind: str) -> bool:
    """True when the damage makes a job's exit.json unreadable as JSON (a huge line after it is still read as cut)."""
    return rel.startswith("jobs/") and rel.endswith("/exit.json") and kind != "huge-line"
