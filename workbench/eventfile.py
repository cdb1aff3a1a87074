"""Event lines on disk: the encoder, the tolerant decoder, the appending writer and the following reader."""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Dict, List, Optional

VERSION = 1


def _clean(value: Any) -> Any:
    """Make a value JSON-safe: non-finite floats become the strings 'nan', 'inf', '-inf'."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        return _clean(value.item())  # numpy scalar
    if hasattr(value, "tolist") and callable(value.tolist):
        return _clean(value.tolist())  # numpy array
    return value


def encode(event: Dict[str, Any]) -> str:
    """Encode one event as a compact JSON line (with trailing newline)."""
    return json.dumps(_clean(event), separators=(",", ":"), allow_nan=False) + "\n"


def decode_line(raw: bytes) -> Dict[str, Any]:
    """Decode one complete line; garbage becomes a `log` event carrying the raw text."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    try:
        event = json.loads(text)
    except ValueError:
        event = None
    if not isinstance(event, dict) or "type" not in event:
        return {"v": VERSION, "seq": None, "t": None, "type": "log", "level": "garbage",
                "message": text, "raw": True}
    return event


class EventWriter:
    """Appends events to a job's events.jsonl with contiguous seq; each line goes out whole.

    The file is opened with O_APPEND and every line is written by one os.write, so the
    ranks of a data-parallel job can share one events.jsonl: on Linux an appending write
    to a regular file is not interleaved with another process's (seq is counted per
    writer, hence per rank).
    """

    def __init__(self, path: str, extra: Optional[Dict[str, Any]] = None):
        self.path = path
        self.seq = 0
        self.extra = dict(extra or {})
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, type_: str, fsync: bool = False, **fields: Any) -> Dict[str, Any]:
        """Write one event; fsync when `fsync` (epoch ends, finished). Any field name is free, `sync` too."""
        if self._fd < 0:
            raise ValueError("%s: event writer is closed" % self.path)
        event = {"v": VERSION, "seq": self.seq, "t": round(time.time(), 6), "type": type_}
        event.update(self.extra)
        event.update(fields)
        data = encode(event).encode("utf-8")
        written = os.write(self._fd, data)
        while written < len(data):  # regular files take a line at once; finish a short write anyway
            written += os.write(self._fd, data[written:])
        if fsync:
            os.fsync(self._fd)
        self.seq += 1
        return event

    def emit_many(self, items: List[Any]) -> None:
        """Write several (type, fields) events with one write call (the hot loop's batches)."""
        if not items:
            return
        if self._fd < 0:
            raise ValueError("%s: event writer is closed" % self.path)
        now = round(time.time(), 6)
        chunks = []
        for type_, fields in items:
            event = {"v": VERSION, "seq": self.seq, "t": fields.pop("t", now), "type": type_}
            event.update(self.extra)
            event.update(fields)
            chunks.append(encode(event))
            self.seq += 1
        data = "".join(chunks).encode("utf-8")
        written = os.write(self._fd, data)
        while written < len(data):
            written += os.write(self._fd, data[written:])

    def close(self) -> None:
        """Fsync and close the file."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


class EventReader:
    """Follows an events file from a byte offset; parses complete lines only."""

    def __init__(self, path: str, offset: int = 0):
        self.path = path
        self.offset = offset
        self._tail = b""

    def read_new(self, max_bytes: int = -1) -> List[Dict[str, Any]]:
        """Return the events completed since the last call (a torn last line waits)."""
        return [decode_line(line) for line in self.read_lines(max_bytes) if line.strip()]

    def read_lines(self, max_bytes: int = -1) -> List[bytes]:
        """Return the raw complete lines (without newline) since the last call."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(max_bytes)
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        self.offset += len(chunk)
        data = self._tail + chunk
        lines = data.split(b"\n")
        self._tail = lines.pop()
        return lines

    @property
    def pending_bytes(self) -> int:
        """Bytes of a torn last line still waiting for its newline."""
        return len(self._tail)


def read_all(path: str) -> List[Dict[str, Any]]:
    """Read every complete event of a file."""
    return EventReader(path).read_new()


def tail_events(path: str, max_bytes: int = 65536) -> List[Dict[str, Any]]:
    """The complete events in the last `max_bytes` of a file (cheap status checks)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return []
    reader = EventReader(path, offset=max(0, size - max_bytes))
    lines = reader.read_lines()
    if reader.offset - len(b"".join(lines)) > 0 and size > max_bytes and lines:
        lines = lines[1:]  # the first line may be cut
    return [decode_line(line) for line in lines if line.strip()]
