"""Event lines on disk: the encoder, the tolerant decoder, the appending writer and the following reader."""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from workbench.system.regular import open_regular

VERSION = 1


def _clean(value: Any) -> Any:
    """Make a value JSON-safe: non-finite floats become the strings 'nan', 'inf', '-inf'."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return value if _plain(value) else [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        return _clean(value.item())  # numpy scalar
    if hasattr(value, "tolist") and callable(value.tolist):
        return _clean(value.tolist())  # numpy array
    return value


def _plain(items: Any) -> bool:
    """True when a list holds only str and int, or only finite floats: JSON-safe as it is.

    The train job's `steps` lines carry four such lists of ~30-90 values; walking them value by value
    was most of the cost of writing them (about 240 us a line against about 40 us).
    """
    kinds = set(map(type, items))
    return kinds <= {str, int} or (kinds == {float} and all(map(math.isfinite, items)))


def encode(event: Dict[str, Any]) -> str:
    """Encode one event as a compact JSON line (with trailing newline)."""
    return json.dumps(_clean(event), separators=(",", ":"), allow_nan=False) + "\n"


def complete_lines(chunks: Iterable[bytes], tail: List[bytes]) -> Iterator[bytes]:
    """Complete lines (without newline) of a stream of byte chunks; what follows the last newline goes to `tail`."""
    rest = b""
    for chunk in chunks:
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        yield from parts
    tail.append(rest)


def line_blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Blocks of whole lines (each ending at a newline, the last maybe not) from a stream of chunks."""
    rest = b""
    for chunk in chunks:
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield data[:cut]
    if rest:
        yield rest


# What json.loads runs on a line, without its checks around it. typeshed leaves out JSONDecoder's scan_once,
# which CPython sets on every decoder (json/decoder.py); its call is (string, index) -> (value, end index).
SCAN_OBJECT: Callable[[str, int], Tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode_line(raw: bytes) -> Dict[str, Any]:
    """Decode one complete line; garbage becomes a `log` event carrying the raw text."""
    return decode_text(raw.decode("utf-8", errors="replace"))


def decode_text(text: str) -> Dict[str, Any]:
    """decode_line for a line already decoded to text."""
    text = text.rstrip("\r\n")
    event = None
    if text[:1] == "{" and text[-1:] == "}":  # the usual line: one object, nothing around it, scanned directly
        try:
            event, end = SCAN_OBJECT(text, 0)
        except (StopIteration, ValueError):
            end = -1
        if end != len(text):
            event = None
    if event is None:
        try:
            event = json.loads(text)
        except ValueError:
            event = None
    if not isinstance(event, dict) or "type" not in event:
        return {"v": VERSION, "seq": None, "t": None, "type": "log", "level": "garbage", "message": text, "raw": True}
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
        self._unsure = False  # a write failed or was interrupted: the file may end mid-line

    def emit(self, type_: str, fsync: bool = False, **fields: Any) -> Dict[str, Any]:
        """Write one event; fsync when `fsync` (epoch ends, finished). Any field name is free, `sync` too."""
        if self._fd < 0:
            raise ValueError("%s: event writer is closed" % self.path)
        event = {"v": VERSION, "seq": self.seq, "t": round(time.time(), 6), "type": type_}
        event.update(self.extra)
        event.update(fields)
        self._write(encode(event).encode("utf-8"))
        if fsync:
            os.fsync(self._fd)
        return event

    def emit_many(self, items: List[Any]) -> None:
        """Write several (type, fields) events with one write call (the hot loop's batches)."""
        if not items:
            return
        if self._fd < 0:
            raise ValueError("%s: event writer is closed" % self.path)
        now = round(time.time(), 6)
        chunks = []
        for i, (type_, fields) in enumerate(items):
            event = {"v": VERSION, "seq": self.seq + i, "t": fields.pop("t", now), "type": type_}
            event.update(self.extra)
            event.update(fields)
            chunks.append(encode(event))
        self._write("".join(chunks).encode("utf-8"))

    def _write(self, data: bytes) -> None:
        """Append whole lines and count them into seq; after a write cut short, the next line starts fresh.

        A regular file takes a line in one write, but a full disk (ENOSPC), a file size limit or
        a signal whose handler raises can stop it part-way. The torn part gets its newline at
        once when it can; otherwise, and whenever a write was interrupted before we could tell
        how far it got, the next write first looks at the file's last byte. Only lines that went
        out whole count in seq, so seq stays contiguous.
        """
        prefix = b"\n" if self._unsure and not self._ends_with_newline() else b""
        out = prefix + data
        written = 0
        self._unsure = True  # until the loop below is known to have finished
        try:
            while written < len(out):
                written += os.write(self._fd, out[written:])
        except BaseException:
            self.seq += out[len(prefix) : written].count(b"\n")
            if written and not out[:written].endswith(b"\n"):
                try:
                    os.write(self._fd, b"\n")
                except OSError:
                    pass
            raise
        self._unsure = False
        self.seq += out[len(prefix) :].count(b"\n")

    def _ends_with_newline(self) -> bool:
        """True when the events file is empty or its last byte is a newline (checked only after a failure)."""
        try:
            with open(self.path, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                if size == 0:
                    return True
                fh.seek(size - 1)
                return fh.read(1) == b"\n"
        except OSError:
            return False

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
        self.size = 0  # the file's size when it was last read or measured (0 before)
        self.capped = False  # the last read stopped at its max_bytes, not at the end of the file
        self.damaged = ""  # why the file cannot be read (a FIFO, a directory ...), once found

    def read_new(self, max_bytes: int = -1) -> List[Dict[str, Any]]:
        """Return the events completed since the last call (a torn last line waits)."""
        return [decode_line(line) for line in self.read_lines(max_bytes) if line.strip()]

    def read_lines(self, max_bytes: int = -1) -> List[bytes]:
        """Return the raw complete lines (without newline) since the last call."""
        try:
            with open_regular(self.path) as fh:
                fh.seek(self.offset)
                chunk = fh.read(max_bytes)
                self.size = os.fstat(fh.fileno()).st_size
        except FileNotFoundError:
            self.capped = False
            return []
        except OSError as exc:  # not a regular file, unreadable: no events, and the reason kept
            self.capped, self.damaged = False, str(exc)
            return []
        self.capped = 0 <= max_bytes == len(chunk)
        if not chunk:
            return []
        self.offset += len(chunk)
        data = self._tail + chunk
        lines = data.split(b"\n")
        self._tail = lines.pop()
        return lines

    def measure(self) -> int:
        """The file's size now (0 when it does not exist yet), without reading it."""
        try:
            self.size = os.path.getsize(self.path)
        except OSError:
            self.size = 0
        return self.size

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


FINISHED_SCAN_BYTES = 256 << 20  # how far back from the end the final status is looked for
BACK_BLOCK = 1 << 20
MAX_LINE_BYTES = 16 << 20


def last_finished(path: str, max_scan: int = FINISHED_SCAN_BYTES) -> Optional[Dict[str, Any]]:
    """The last complete `finished` event of rank 0 (or no rank), read back from the end in blocks.

    Garbage appended after the event (a job that went on printing, a damaged tail) does not hide
    it; the scan stops after `max_scan` bytes. NotRegular (an OSError) for a FIFO, device or folder.
    """
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        return None
    with fh:
        end = fh.seek(0, os.SEEK_END)
        carry = b""  # the end part of a line whose beginning lies further back
        pos = end
        skip_tail = True  # the file's last line counts only with its newline
        while pos > 0 and end - pos < max_scan:
            step = min(BACK_BLOCK, pos)
            pos -= step
            fh.seek(pos)
            lines = (fh.read(step) + carry).split(b"\n")
            if skip_tail:
                lines.pop()  # after the last newline: empty, or a torn line
                if not lines:
                    carry = b""
                    continue
                skip_tail = False
            carry = lines.pop(0) if pos > 0 else b""
            if len(carry) > MAX_LINE_BYTES:  # no finished event is that long: let the giant line go
                carry = b""
            for raw in reversed(lines):
                if b'"finished"' not in raw:
                    continue
                event = decode_line(raw)
                if event.get("type") == "finished" and event.get("rank") in (None, 0):
                    return event
    return None
