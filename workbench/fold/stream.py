"""Folds a whole events file into a JobRecord a block at a time: each block decoded once, no event kept.

Memory stays flat (one block of about 1 MB at a time), and a long file costs little more than
decoding its lines: a block that is valid UTF-8 is decoded to text once and each line is scanned
where it lies; lines that are anything but one JSON object take decode_text, as ingest_lines would.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional

from workbench.events.files import SCAN_OBJECT, decode_line, decode_text, line_blocks
from workbench.fold.record import JobRecord

BLANK = " \t\n\r\x0b\x0c"  # what bytes.strip() strips: a line of only these is skipped, as ingest_lines does


def has_object(ev: Dict[str, Any]) -> bool:
    """True when one of the event's top-level values is an object."""
    for value in ev.values():
        if isinstance(value, dict):
            return True
    return False


def fold_stream(
    rec: JobRecord,
    chunks: Iterable[bytes],
    tail: List[bytes],
    transform: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None,
    objects_only: bool = False,
) -> None:
    """Fold the complete lines of a stream of byte chunks into `rec`; what follows the last newline goes to `tail`.

    The same outcome as rec.ingest_lines(complete_lines(chunks, tail), transform, keep=False).
    objects_only=True calls `transform` only for events with an object among their top-level values.
    """
    rest = b""
    for block in line_blocks(chunks):
        if block.endswith(b"\n"):
            _fold_block(rec, block, transform, objects_only)
        else:
            rest = block  # only the last block can lack its newline
    tail.append(rest)
    rec.version += 1


def _fold_block(rec: JobRecord, block: bytes, transform: Any, objects_only: bool) -> None:
    """Lines of one block ending in a newline."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:  # decode_line replaces bad bytes line by line
        for raw in block[:-1].split(b"\n"):
            rec.lines += 1
            if raw.strip():
                ev = decode_line(raw)
                if transform is not None and (not objects_only or (raw.find(b"{", 1) > 0 and has_object(ev))):
                    ev = transform(ev)
                rec._fold(ev, rec.lines)
        return
    scan, fold, find = SCAN_OBJECT, rec._fold, text.find  # the record's own per-line fold, as ingest_lines calls it
    idx, end_all = 0, len(text)
    while idx < end_all:
        nl = find("\n", idx)
        rec.lines += 1
        ev = None
        if text[idx] == "{" and text[nl - 1] == "}":  # one object filling the line: scanned where it lies
            try:
                ev, end = scan(text, idx)
            except (StopIteration, ValueError):
                end = -1
            if end != nl or "type" not in ev:
                ev = None
        if ev is None:
            line = text[idx:nl]
            if not line.strip(BLANK):
                idx = nl + 1
                continue
            ev = decode_text(line)
        # a line with no "{" after its first character holds no nested object: most lines, told without a walk
        if transform is not None and (not objects_only or (find("{", idx + 1, nl) > 0 and has_object(ev))):
            ev = transform(ev)
        fold(ev, rec.lines)
        idx = nl + 1
