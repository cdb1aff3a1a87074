"""The record's per-step table of one job, bounded: a thinned table for figures, every row spooled for steps.csv.

A long run has millions of steps; the record shows curves (a few thousand points are more than a
figure's pixels) and the CSV holds every step. So the table keeps every `every`-th row (doubling
`every` whenever it is full, the first row always kept), and, when asked, every row goes to a
temporary CSV spool on disk as it is read (the export hands the batched lines' rows to a second process
that formats them from the lines' text: workbench.fold.spoolproc). Memory stays flat in the number of steps.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from collections import Counter
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

from workbench.events.files import SCAN_OBJECT

COLUMNS = ("rank", "epoch", "step", "loss", "step_ms", "batch_size", "phase")
MAX_ROWS = 4000
SPOOL_BATCH = 4096  # rows formatted at a time
SPOOL_CHARS = 1 << 20  # formatted rows written to the spool at a time


ROW = ",".join(["%s"] * (len(COLUMNS) + 1)) + "\n"  # jid and the step's values, as metrics/steps.csv orders them


def _cell_safe(text: str) -> bool:
    """A cell csv writes as it is (no quoting) and str() writes the same way (never "None", csv's empty cell)."""
    return not any(c in text for c in ',"\r\n') and text != "None"


def _float_parts(jid: str, epoch: Any, size: Any, rank: Any, phase: Any) -> Optional[Tuple[str, str, str]]:
    """The fixed text of a batched line's rows around step, loss and step time; None when a cell needs csv.

    (before, between, after): a row is before + "step,loss,ms" + after, and after + before without their
    outer commas is `between`, so rows join as before + ",".join(step, loss, ms, between, step, ...) + after.
    """
    if epoch is None or not all(_cell_safe(str(c)) for c in (jid, epoch, size, rank, phase)):
        return None
    before, after = "%s,%s," % (jid, epoch), ",%s,%s,%s\n" % (size, rank, phase)
    return before, after[1:] + before[:-1], after


def _rows_text(parts: Tuple[str, str, str], first: int, losses: List[str], times: List[str]) -> str:
    """The CSV rows of steps first, first + 1, ... whose loss and step time cells are given as text."""
    before, between, after = parts
    n = len(losses)
    flat = [between] * (4 * n - 1)
    flat[0::4] = map(str, range(first, first + n))  # what csv and "%d" write for an int
    flat[1::4] = losses
    flat[2::4] = times
    return before + ",".join(flat) + after


_JSON_BLANK = " \t\r\n"


def line_number_texts(
    text: str, start: int, end: int, losses: List[float], times: List[float]
) -> Optional[Tuple[List[str], List[str]]]:
    """The numbers of the lists under "loss" and "step_ms" in the JSON object text[start:end], as the line wrote them.

    Only for a plain line (no backslash, no nested object) where each key occurs once, its numbers all finite;
    None for any other line, which keeps the repr path.
    """
    return _number_texts(text, start, end, len(losses), losses[0], losses[-1], times[0], times[-1])


def _number_texts(
    text: str, start: int, end: int, n: int, loss0: float, loss1: float, ms0: float, ms1: float
) -> Optional[Tuple[List[str], List[str]]]:
    """line_number_texts given the lists' length and end values (what the spool process is sent)."""
    # No backslash: every quote in the line delimits a string, so a `"key"` followed by ":" is that key spelled
    # as is. No "{" after the first character: no nested object, so it is the top-level object's key, and the
    # only one (a second would be a second `"key"`).
    if text.find("\\", start, end) >= 0 or text.find("{", start + 1, end) >= 0:
        return None
    loss_text = _list_text(text, start, end, "loss", n, loss0, loss1)
    if loss_text is None:
        return None
    ms_text = _list_text(text, start, end, "step_ms", n, ms0, ms1)
    return None if ms_text is None else (loss_text, ms_text)


def _list_text(text: str, start: int, end: int, key: str, n: int, first: float, last: float) -> Optional[List[str]]:
    """The list under `key` as written (n numbers, from `first` to `last`), in a line known plain."""
    quoted = '"%s"' % key
    at = text.find(quoted, start, end)
    if at < 0 or text.find(quoted, at + 1, end) >= 0:
        return None
    i = at + len(quoted)
    if text.startswith(":[", i):  # compact JSON, what the jobs write
        i += 2
    else:
        while i < end and text[i] in _JSON_BLANK:
            i += 1
        if i >= end or text[i] != ":":
            return None
        i += 1
        while i < end and text[i] in _JSON_BLANK:
            i += 1
        if i >= end or text[i] != "[":
            return None
        i += 1
    close = text.find("]", i, end)
    if close < 0:
        return None
    inner = text[i:close]
    if "N" in inner or "I" in inner:  # NaN, Infinity: csv writes float's nan and inf, as the per-step path does
        return None
    tokens = inner.split(",")
    if len(tokens) != n:
        return None
    if " " in inner or "\t" in inner or "\r" in inner or "\n" in inner:
        tokens = [t.strip(_JSON_BLANK) for t in tokens]
    # Its list's text is what json decoded into the values, with float() of each number: the same doubles bit for
    # bit (the ends are checked as well).
    try:
        same = _same_double(float(tokens[0]), first) and _same_double(float(tokens[-1]), last)
    except ValueError:  # not a list of numbers after all
        return None
    return tokens if same else None


def span_rows(item: tuple) -> str:
    """The CSV rows of one batched line sent as a span (StepTable.add_floats): its numbers' text as written, or
    their repr where the line is not plain (decoded again from its text, the same scan that folded it)."""
    text, start, end, first, n, parts, loss0, loss1, ms0, ms1 = item
    texts = _number_texts(text, start, end, n, loss0, loss1, ms0, ms1)
    if texts is None:
        ev = SCAN_OBJECT(text, start)[0]
        texts = (list(map(repr, ev["loss"])), list(map(repr, ev["step_ms"])))
    return _rows_text(parts, first, texts[0], texts[1])


def _same_double(a: float, b: float) -> bool:
    """The same double bit for bit, NaN aside: equal, and for a zero the same sign."""
    return a == b and (a != 0.0 or repr(a) == repr(b))


class StepTable:
    """Steps of one job as read: thinned columns (plus `x`, the main rank's step number), counts, the CSV spool."""

    def __init__(
        self,
        max_rows: Optional[int] = MAX_ROWS,
        spool: bool = False,
        jid: str = "",
        spool_process: Optional[Callable[[], Any]] = None,
    ):
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
        spool_file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="") if spool else None
        self.spool: Optional[IO[str]] = spool_file
        self._writer = csv.writer(spool_file, lineterminator="\n") if spool_file is not None else None
        self._rows: Optional[List[tuple]] = [] if spool else None  # rows not yet written to the spool
        # rows already formatted (after those in _rows were), or spans for the spool process, not yet written
        self._text: List[Any] = []
        self._text_chars = 0
        self._format_of: Any = None  # the cells _parts were made for
        self._parts: Optional[Tuple[str, str, str]] = None
        # spool_process() starts a process that formats the batched lines' rows from their text (spoolproc): made
        # at the first such line; from then on every row goes to it, in order, and its file follows the spool's
        self._start_process = spool_process if spool else None
        self._process: Any = None
        self._block: Optional[str] = None  # the text the spans queued in _text lie in

    def add(self, step: Dict[str, Any]) -> None:
        """Take one step (an expanded `step` event)."""
        g = step.get
        self.add_row(g("rank"), g("epoch"), g("step"), g("loss"), g("step_ms"), g("batch_size"), g("phase"))

    def add_row(self, rank: Any, epoch: Any, step: Any, loss: Any, step_ms: Any, batch_size: Any, phase: Any) -> None:
        """Take one step by its values (the fold's path: no dict per step)."""
        main = rank in (None, 0)
        if main:
            self.main_count += 1
            if type(loss) in (float, int):
                loss_f = float(loss)
                if self.first_loss is None:
                    self.first_loss = self.min_loss = loss_f
                elif loss_f < self.min_loss:  # type: ignore[operator]  # min_loss is set whenever first_loss is
                    self.min_loss = loss_f
                self.last_loss = loss_f
        if rank is not None and isinstance(rank, int):
            self.ranks.add(rank)
        if batch_size is not None and (len(self.sizes) < 64 or batch_size in self.sizes):
            self.sizes[batch_size] += 1
        if self._rows is not None:  # None as "": the same empty cell for csv, and for "%s" (_flush)
            self._rows.append(
                (
                    self.jid,
                    epoch,
                    step,
                    "" if loss is None else loss,
                    "" if step_ms is None else step_ms,
                    "" if batch_size is None else batch_size,
                    "" if rank is None else rank,
                    "" if phase is None else phase,
                )
            )
            if len(self._rows) >= SPOOL_BATCH:
                self._flush()
        if self.count % self.every == 0:
            columns = self.columns
            for name, value in zip(COLUMNS, (rank, epoch, step, loss, step_ms, batch_size, phase)):
                columns[name].append(value)
            columns["x"].append(self.main_count if main else None)
            if self.max_rows is not None and len(columns["x"]) > self.max_rows:
                for name in columns:
                    columns[name] = columns[name][::2]
                self.every *= 2
        self.count += 1

    def add_floats(
        self,
        rank: Any,
        epoch: Any,
        first: int,
        losses: List[float],
        times: List[float],
        size: Any,
        phase: Any,
        span: Optional[Tuple[str, int, int]] = None,
    ) -> None:
        """Take a main-rank batched line's steps at once: every loss and step time a float, size and phase one value.

        `span`: (text, start, end), the line as written (one JSON object, what the fold scanned); its losses and
        step times as written are the CSV's cells then (line_number_texts). The same table, counts and spool rows
        as add_row called for each step in turn (property test), the loss and step time cells given as written:
        the same numbers bit for bit, the same text for json.dumps.
        """
        n = len(losses)
        if not n:
            return
        base = self.main_count
        self.main_count += n
        if self.first_loss is None:
            self.first_loss = losses[0]
            self.min_loss = min(losses)
        else:
            so_far: List[float] = [] if self.min_loss is None else [self.min_loss]
            self.min_loss = min(so_far + losses)  # min keeps the first of equals, as `<` does
        self.last_loss = losses[-1]
        if rank is not None and isinstance(rank, int):
            self.ranks.add(rank)
        if size is not None and (len(self.sizes) < 64 or size in self.sizes):
            self.sizes[size] += n
        if self._rows is not None:
            size_cell = "" if size is None else size
            rank_cell = "" if rank is None else rank
            phase_cell = "" if phase is None else phase
            key = (epoch, size_cell, rank_cell, phase_cell, type(epoch), type(size_cell), type(rank_cell))
            if key != self._format_of:  # the same for every line of a phase of an epoch
                self._format_of = key
                self._parts = _float_parts(self.jid, epoch, size_cell, rank_cell, phase_cell)
            if self._parts is None:  # a cell csv would quote or write otherwise: row by row, as add_row does
                self._rows.extend(
                    (self.jid, epoch, first + i, losses[i], times[i], size_cell, rank_cell, phase_cell)
                    for i in range(n)
                )
                if len(self._rows) >= SPOOL_BATCH:
                    self._flush()
            else:
                if self._rows:
                    self._format_rows()
                if span is not None and self._process is None and self._start_process is not None:
                    self._process_start()
                if span is not None and self._process is not None:  # formatted there, from the line's text
                    if span[0] is not self._block:
                        self._write_text()  # one block of text per message
                        self._block = span[0]
                    self._text.append(
                        (*span, first, n, self._parts, losses[0], losses[-1], times[0], times[-1])  # span_rows
                    )
                else:
                    # the numbers' text costs a split where repr (what csv writes for a float, and "%r") costs a
                    # shortest round-trip conversion per float
                    texts = line_number_texts(*span, losses, times) if span is not None else None
                    if texts is None:
                        texts = (list(map(repr, losses)), list(map(repr, times)))
                    text = _rows_text(self._parts, first, texts[0], texts[1])
                    self._text.append(text)
                    self._text_chars += len(text)
                    if self._text_chars >= SPOOL_CHARS:
                        self._flush()
        columns, count = self.columns, self.count
        i = (-count) % self.every
        while i < n:
            for name, value in zip(COLUMNS, (rank, epoch, first + i, losses[i], times[i], size, phase)):
                columns[name].append(value)
            columns["x"].append(base + i + 1)
            if self.max_rows is not None and len(columns["x"]) > self.max_rows:
                for name in columns:
                    columns[name] = columns[name][::2]
                self.every *= 2
            i += 1
            i += (-(count + i)) % self.every
        self.count += n

    def _format_rows(self) -> None:
        """Format the rows in _rows onto _text (or write them, and what came before, through csv)."""
        rows, writer = self._rows, self._writer
        if not rows or writer is None:
            return
        # csv.writer writes str(value) (a float's repr) and quotes a value holding a comma, a quote or a newline.
        # Formatted in one go (csv's cost per float is about twice this), then checked: no value held one, and
        # no None was left to format (an epoch or step number left out; a string "None" goes to csv as well).
        text = "".join([ROW % row for row in rows])
        n = len(rows)
        if (
            text.count("\n") == n
            and text.count(",") == len(COLUMNS) * n
            and '"' not in text
            and "\r" not in text
            and "None" not in text
        ):
            self._text.append(text)
            self._text_chars += len(text)
        elif self._process is not None:  # the process writes what it is sent, in order
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            self._text.append(buf.getvalue())
        else:
            self._write_text()
            writer.writerows(rows)
        rows.clear()

    def _process_start(self) -> None:
        """Start the spool process (what is formatted so far goes to the spool first); stay in this one if it fails."""
        self._flush()
        try:
            self._process = self._start_process() if self._start_process is not None else None
        except OSError:  # no process to be had (a full process table, no interpreter): formatted here, the same rows
            self._process = None
        self._start_process = None

    def _write_text(self) -> None:
        if self._text and self._process is not None:
            self._process.send(self._text)
            self._text = []
            self._block = None
        elif self._text and self.spool is not None:
            self.spool.write("".join(self._text))
        self._text.clear()
        self._text_chars = 0

    def _flush(self) -> None:
        """Write every row taken so far to the spool."""
        if self.spool is None:  # rows are kept only while there is a spool
            return
        self._format_rows()
        self._write_text()

    def as_dict(self) -> Dict[str, Any]:
        """The thinned table: each column a list, with `recorded` (steps read) and `every` (thinning)."""
        out: Dict[str, Any] = {k: list(v) for k, v in self.columns.items()}
        out.update(recorded=self.count, every=self.every)
        return out

    def copy_rows(self, out: IO[str]) -> None:
        """Write the spooled CSV rows (every step, without a header) to `out`, then drop the spool.

        Raises OSError when the spool process failed (its rows would be missing: no steps.csv is written short)."""
        if self.spool is None:
            return
        self._flush()
        written = self._process.finish() if self._process is not None else None  # its rows' file, at its start
        self.spool.flush()
        sources: List[IO[bytes]] = [self.spool.buffer]  # type: ignore[attr-defined]  # a text file: its bytes
        if written is not None:
            sources.append(written)
        target = getattr(out, "buffer", None)
        out.flush()
        for raw in sources:
            raw.seek(0)
            if target is not None:
                shutil.copyfileobj(raw, target, 1 << 20)
            else:  # an in-memory `out` holds every row anyway
                out.write(raw.read().decode("utf-8"))
        if target is not None:
            target.flush()
        self.close()

    def close(self) -> None:
        """Remove the spool file (and stop the spool process, removing its file)."""
        if self._process is not None:
            self._process.close()
            self._process = None
        if self.spool is not None:
            self.spool.close()
            self.spool, self._writer, self._rows = None, None, None
            self._text.clear()
