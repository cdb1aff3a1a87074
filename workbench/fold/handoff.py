"""A session's fold handed to another process (the record's screen renderer), so it never reads the events again."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Dict, Iterable, List

from workbench.events.files import decode_line
from workbench.events.protocol import steps_line_ok, type_problem
from workbench.fold.record import JobRecord

TAIL_BYTES = 128 << 10  # the end of each events file: enough lines for the Session screen's log of a job


@dataclass
class FoldedSession:
    """Every job's record as folded once, and the last events of each job's events.jsonl (its recent lines)."""

    records: Dict[str, JobRecord] = field(default_factory=dict)
    tails: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    # where each job's fold of its events.jsonl ended (after a newline): a fold that is followed on from there
    offsets: Dict[str, int] = field(default_factory=dict)

    def dump(self, fh: BinaryIO) -> None:
        """Write it to a pipe or file (the records without their step spools, which stay with the export)."""
        records = {}
        for jid, rec in self.records.items():
            light = copy.copy(rec)
            light.step_table = None  # an open spool file; the pictures need only the bounded series
            records[jid] = light
        pickle.dump(
            {"records": records, "tails": self.tails, "offsets": self.offsets}, fh, protocol=pickle.HIGHEST_PROTOCOL
        )

    @classmethod
    def load(cls, fh: BinaryIO) -> FoldedSession:
        """Read what `dump` wrote (this program's own processes only: it is a pickle)."""
        data = pickle.load(fh)
        return cls(records=dict(data["records"]), tails=dict(data["tails"]), offsets=dict(data.get("offsets") or {}))


def tail_events(end: bytes, cut: bool) -> List[Dict[str, Any]]:
    """The complete events in `end`, the last bytes of a file; cut=True when it starts inside a line."""
    lines: Iterable[bytes] = end.split(b"\n")[:-1]  # what follows the last newline is torn, never shown
    if cut:
        lines = list(lines)[1:]
    out = []
    for raw in lines:
        if raw.strip():
            ev = decode_line(raw)
            if ev.get("raw") or (
                type_problem(ev) is not None and not (ev.get("type") == "steps" and steps_line_ok(ev))
            ):
                continue  # damaged lines are listed from the record: the live fold passes none on either
            out.append(ev)
    return out
