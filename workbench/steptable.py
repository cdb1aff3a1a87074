"""The record's per-step table of one job, bounded: a thinned table for figures, every row spooled for steps.csv.

A long run has millions of steps; the record shows curves (a few thousand points are more than a
figure's pixels) and the CSV holds every step. So the table keeps every `every`-th row (doubling
`every` whenever it is full, the first row always kept), and, when asked, every row goes to a
temporary CSV spool on disk as it is read. Memory stays flat in the number of steps.
"""

from __future__ import annotations

import csv
import tempfile
from collections import Counter
from typing import IO, Any, Dict, List, Optional

COLUMNS = ("rank", "epoch", "step", "loss", "step_ms", "batch_size", "phase")
MAX_ROWS = 4000


def _number(value: Any) -> Optional[float]:
    return float(value) if type(value) in (int, float) else None


class StepTable:
    """Steps of one job as read: thinned columns (plus `x`, the main rank's step number), counts, the CSV spool."""

    def __init__(self, max_rows: Optional[int] = MAX_ROWS, spool: bool = False, jid: str = ""):
        self.max_rows = max_rows
        self.columns: Dict[str, List[Any]] = {c: [] for c in COLUMNS + ("x",)}
        self.every = 1  # one kept row per `every` steps read
        self.count = 0  # steps read, every rank
        self.main_count = 0
        self.first_loss: Optional[float] = None
        self.last_loss: Optional[float] = None
        self.min_loss: Optional[float] = None
        self.ranks: set = set()
        self.sizes: Counter = Counter()
        self.jid = jid
        self.spool: Optional[IO[str]] = tempfile.TemporaryFile("w+", encoding="utf-8", newline="") if spool else None
        self._writer = csv.writer(self.spool, lineterminator="\n") if spool else None

    def add(self, step: Dict[str, Any]) -> None:
        """Take one step (an expanded `step` event)."""
        rank = step.get("rank")
        main = rank in (None, 0)
        if main:
            self.main_count += 1
            loss = _number(step.get("loss"))
            if loss is not None:
                self.first_loss = loss if self.first_loss is None else self.first_loss
                self.last_loss = loss
                self.min_loss = loss if self.min_loss is None or loss < self.min_loss else self.min_loss
        if isinstance(rank, int):
            self.ranks.add(rank)
        size = step.get("batch_size")
        if size is not None and len(self.sizes) < 64:
            self.sizes[size] += 1
        elif size in self.sizes:
            self.sizes[size] += 1
        if self._writer is not None:
            self._writer.writerow(["" if v is None else v for v in (
                self.jid, step.get("epoch"), step.get("step"), step.get("loss"), step.get("step_ms"),
                step.get("batch_size"), rank, step.get("phase"))])
        if self.count % self.every == 0:
            for name in COLUMNS:
                self.columns[name].append(step.get(name))
            self.columns["x"].append(self.main_count if main else None)
            if self.max_rows is not None and len(self.columns["x"]) > self.max_rows:
                for name in self.columns:
                    self.columns[name] = self.columns[name][::2]
                self.every *= 2
        self.count += 1

    def as_dict(self) -> Dict[str, Any]:
        """The thinned table: each column a list, with `recorded` (steps read) and `every` (thinning)."""
        out: Dict[str, Any] = {k: list(v) for k, v in self.columns.items()}
        out.update(recorded=self.count, every=self.every)
        return out

    def copy_rows(self, out: IO[str]) -> None:
        """Write the spooled CSV rows (every step, without a header) to `out`, then drop the spool."""
        if self.spool is None:
            return
        self.spool.seek(0)
        while True:
            block = self.spool.read(1 << 20)
            if not block:
                break
            out.write(block)
        self.close()

    def close(self) -> None:
        """Remove the spool file."""
        if self.spool is not None:
            self.spool.close()
            self.spool, self._writer = None, None
