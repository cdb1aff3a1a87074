"""Reads one events file of a session snapshot into a JobRecord, streamed in blocks (memory stays flat)."""

from __future__ import annotations

from typing import Any, List

from workbench.fold.record import JobRecord
from workbench.fold.stream import fold_stream


def read_events(rec: JobRecord, name: str, data: Any, transform: Any = None) -> None:
    """Fold one events file's complete lines into `rec` (the torn tail is noted, never folded).

    `data` is the file's bytes or an iterable of byte chunks (streamed: memory stays flat). Lines whose
    fields hold no mapping skip `transform` (the report's masking walk): the snapshot was already masked
    line by line (export.scrub_session), and cutting environment mappings only concerns mappings.
    """
    chunks = [data] if isinstance(data, bytes) else data
    tail: List[bytes] = []
    rec.begin_file(name)
    fold_stream(rec, chunks, tail, transform, objects_only=True)
    rec.note_torn_tail(len(tail[0]) if tail else 0)
