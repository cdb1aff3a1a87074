"""Atomic file writes and hashing (temp file + fsync + rename)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Union

from workbench.system.regular import read_regular

PathLike = Union[str, Path]


def write_bytes(path: PathLike, data: bytes) -> Path:
    """Write bytes to `path` atomically: readers see the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_text(path: PathLike, text: str) -> Path:
    """Write text (UTF-8) atomically."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: PathLike, obj: Any) -> Path:
    """Write JSON atomically, indented for people."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def read_json(path: PathLike) -> Any:
    """Read a JSON file: a regular file of bounded size only (NotRegular, an OSError, otherwise)."""
    return json.loads(read_regular(path).decode("utf-8"))


def sha256_file(path: PathLike, chunk_bytes: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file's bytes."""
    import hashlib  # here: most importers (the UI's start among them) never hash

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk_bytes)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()
