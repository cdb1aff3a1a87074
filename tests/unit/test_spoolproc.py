"""The steps.csv spool's second process (workbench.fold.spoolproc): the same rows as formatted in the export's own
process, whatever the lines; a process that fails never leaves a steps.csv that looks whole; its status line read
strictly."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.fold.record import JobRecord
from workbench.fold.spoolproc import SpoolProcess, parse_status
from workbench.fold.steptable import StepTable
from workbench.fold.stream import fold_stream

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _rows(data: bytes, block: int, tmp_path, name: str, process=None) -> bytes:
    """The spool's rows after folding `data` a block of `block` bytes at a time, as copy_rows writes them to a file."""
    table = StepTable(max_rows=5, spool=True, jid="train-001", spool_process=process)
    rec = JobRecord("train-001", "train", config={"train": {"warmup_steps": 2}}, keep_steps=table)
    fold_stream(rec, iter([data[i : i + block] for i in range(0, len(data), block)]), [], None, objects_only=True)
    out = tmp_path / name
    with open(str(out), "w", encoding="utf-8", newline="") as fh:
        fh.write("header\n")
        table.copy_rows(fh)
    return out.read_bytes()


def _batched(n_lines: int, per_line: int = 30, spaced: bool = False) -> bytes:
    """Lines as the train job writes them (compact), or with json.dumps' spaces, and odd lines among them."""
    lines = []
    for i in range(n_lines):
        ev = {
            "v": 1,
            "seq": i,
            "t": 1.0 + i,
            "type": "steps",
            "epoch": 1 + i // 50,
            "first_step": 1 + i * per_line,
            "loss": [2.3 / (1 + i * per_line + k) for k in range(per_line)],
            "step_ms": [1.0 + ((i + k) % 7) / 3.0 for k in range(per_line)],
            "batch_size": 64,
            "phase": "steady" if i else "compile",
        }
        if i % 97 == 5:
            ev["loss"][3] = float("nan")  # not plain: the process decodes the line again
        lines.append(json.dumps(ev) if spaced or i % 13 == 0 else json.dumps(ev, separators=(",", ":")))
        if i % 41 == 7:
            lines.append('{"v":1,"seq":%d,"type":"step","epoch":1,"step":1,"loss":0.5,"step_ms":1.0}' % i)
    return ("\n".join(lines) + "\n").encode()


def test_a_long_run_s_rows_are_the_same_formatted_by_the_process(tmp_path):
    """Thousands of batched lines over many blocks (and messages): byte for byte the rows formatted in-process."""
    data = _batched(3000)
    here = _rows(data, 1 << 16, tmp_path, "here.csv")
    there = _rows(data, 1 << 16, tmp_path, "there.csv", SpoolProcess)
    assert there == here
    assert here.count(b"\n") > 3000 * 30


floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e-300, 2.5])


@st.composite
def event_files(draw):
    """An events file's bytes: batched lines (compact or spaced, NaN, odd cells), step lines and garbage."""
    lines = []
    for i in range(draw(st.integers(0, 20))):
        n = draw(st.integers(1, 5))
        ev = {
            "v": 1,
            "seq": i,
            "t": 1.0,
            "type": "steps",
            "epoch": draw(st.integers(0, 2)),
            "first_step": draw(st.integers(0, 99)),
            "loss": draw(st.lists(floats, min_size=n, max_size=n)),
            "step_ms": draw(st.lists(floats | st.integers(0, 3), min_size=n, max_size=n)),
            "batch_size": draw(st.sampled_from([64, 1])),
            "phase": draw(st.sampled_from(["steady", "warmup", 'a,"b', "None"])),
        }
        kind = draw(st.integers(0, 5))
        if kind == 0:
            lines.append(b"not json")
        elif kind == 1:
            lines.append(b'{"v":1,"seq":%d,"type":"step","epoch":1,"step":3,"loss":0.5,"step_ms":1.0}' % i)
        try:
            text = json.dumps(ev) if draw(st.booleans()) else json.dumps(ev, separators=(",", ":"))
        except ValueError:
            text = "{bad"
        lines.append(text.encode())
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


@settings(max_examples=40, **SETTINGS)
@given(event_files(), st.integers(1, 400))
def test_any_events_file_gives_the_same_rows_through_the_process(data, block):
    """Whatever the lines (odd, mistyped, NaN, spaced, torn), the process writes what the fold would have written."""
    with tempfile.TemporaryDirectory(prefix="spoolproc-test-") as folder:
        tmp = Path(folder)
        assert _rows(data, block, tmp, "there.csv", SpoolProcess) == _rows(data, block, tmp, "here.csv")


def test_no_process_to_be_had_formats_in_process(tmp_path):
    """A process that cannot start (OSError) leaves the formatting here: the same rows."""

    def cannot():
        raise OSError("no more processes")

    data = _batched(40, spaced=True)
    assert _rows(data, 4096, tmp_path, "a.csv", cannot) == _rows(data, 4096, tmp_path, "b.csv")


def test_a_process_that_died_fails_the_copy_and_writes_no_rows(tmp_path):
    """Killed mid-run, its rows would be short: copy_rows raises OSError saying so, and writes none of its rows."""
    started = []

    def spool():
        started.append(SpoolProcess())
        return started[0]

    table = StepTable(max_rows=5, spool=True, jid="train-001", spool_process=spool)
    rec = JobRecord("train-001", "train", keep_steps=table)
    data = _batched(400)
    half = len(data) // 2
    half = data.rindex(b"\n", 0, half) + 1
    fold_stream(rec, iter([data[:half]]), [], None, objects_only=True)
    started[0].proc.kill()
    started[0].proc.wait()
    fold_stream(rec, iter([data[half:]]), [], None, objects_only=True)
    out = tmp_path / "steps.csv"
    with open(str(out), "w", encoding="utf-8", newline="") as fh:
        with pytest.raises(OSError, match="spool process failed"):
            table.copy_rows(fh)
    assert out.read_bytes() == b""
    table.close()
    assert started[0].rows.closed  # its file (nameless) dropped


def test_a_status_line_is_read_strictly():
    assert parse_status(b'noise\n{"messages": 3, "bytes": 120}\n') == {"messages": 3, "bytes": 120}
    for bad in (
        b"",
        b'{"messages": 3}',
        b'{"messages": 3, "bytes": -1}',
        b'{"messages": true, "bytes": 1}',
        b'{"messages": 1.0, "bytes": 1}',
        b'{"messages": 1, "bytes": 1, "more": 0}',
        b"[1, 2]",
        b"\xff\xfe",
    ):
        assert parse_status(bad) is None, bad


@given(st.binary(max_size=200))
def test_any_bytes_on_its_stdout_are_a_status_or_none(raw):
    got = parse_status(raw)
    assert got is None or (set(got) == {"messages", "bytes"} and all(type(v) is int and v >= 0 for v in got.values()))
