"""The v1 event protocol: encoder, tolerant reader and validator."""

from __future__ import annotations

import json
import math

import numpy as np

from workbench.events.protocol import (
    EventReader,
    EventWriter,
    decode_line,
    encode,
    read_all,
    tail_events,
    validate,
    validate_file,
)
from workbench.events.text import format_event


def ev(seq, type_, **fields):
    """A minimal well-formed event."""
    out = {"v": 1, "seq": seq, "t": 1700000000.5, "type": type_}
    out.update(fields)
    return out


def step(seq, **extra):
    """A valid step event."""
    return ev(seq, "step", epoch=1, step=seq, loss=0.5, step_ms=1.0, batch_size=64, **extra)


def write_lines(path, events):
    """Write events as lines the way a job does."""
    with open(path, "w", encoding="utf-8") as fh:
        for e in events:
            fh.write(encode(e))


# --- encode / decode ---------------------------------------------------------------------------


def test_encode_decode_round_trip():
    event = ev(
        3,
        "check",
        id="mindspore.import",
        title="MindSpore imports — 导入",
        status="observed-pass",
        detail="",
        evidence={"version": "2.10.0", "dims": [1, 28, 28], "ok": True, "none": None},
        hint=None,
    )
    line = encode(event)
    assert line.endswith("\n") and line.count("\n") == 1
    assert decode_line(line.encode("utf-8")) == event


def test_encode_turns_non_finite_floats_into_strings():
    line = encode(
        ev(
            0,
            "step",
            epoch=1,
            step=1,
            loss=float("nan"),
            step_ms=float("inf"),
            batch_size=64,
            extra={"low": float("-inf"), "seq": [1.5, float("nan")]},
            np_scalar=np.float32("nan"),
            np_array=np.array([1.0, np.inf]),
        )
    )
    assert "NaN" not in line and "Infinity" not in line
    back = json.loads(line)  # strict JSON, readable by any parser
    assert back["loss"] == "nan" and back["step_ms"] == "inf"
    assert back["extra"] == {"low": "-inf", "seq": [1.5, "nan"]}
    assert back["np_scalar"] == "nan" and back["np_array"] == [1.0, "inf"]


def test_writer_emits_contiguous_seq_and_valid_file(tmp_path):
    path = tmp_path / "events.jsonl"
    writer = EventWriter(str(path), extra={"rank": 0})
    writer.emit("log", level="info", message="hello")
    writer.emit("step", epoch=1, step=1, loss=math.inf, step_ms=2.0, batch_size=8)
    writer.emit("finished", fsync=True, status="ok", error=None)
    writer.close()
    events = read_all(str(path))
    assert [e["seq"] for e in events] == [0, 1, 2]
    assert [e["type"] for e in events] == ["log", "step", "finished"]
    assert all(e["rank"] == 0 for e in events)
    assert events[1]["loss"] == "inf"
    assert validate_file(str(path)) == []


# --- tolerant reader ---------------------------------------------------------------------------


def test_torn_last_line_waits_for_its_newline(tmp_path):
    path = tmp_path / "events.jsonl"
    first, second = encode(step(0)), encode(step(1))
    cut = len(second) // 2
    path.write_text(first + second[:cut], encoding="utf-8")
    reader = EventReader(str(path))
    assert [e["seq"] for e in reader.read_new()] == [0]
    assert reader.pending_bytes == cut
    assert reader.read_new() == []  # nothing new: the torn line still waits
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(second[cut:])
    got = reader.read_new()
    assert got == [step(1)]
    assert reader.pending_bytes == 0


def test_torn_line_completed_byte_by_byte(tmp_path):
    path = tmp_path / "events.jsonl"
    line = encode(step(0)).encode()
    path.write_bytes(b"")
    reader = EventReader(str(path))
    seen = []
    for i in range(len(line)):
        with open(path, "ab") as fh:
            fh.write(line[i : i + 1])
        seen.extend(reader.read_new())
        if i < len(line) - 1:
            assert seen == []
    assert seen == [step(0)]


def test_garbage_line_becomes_a_log_event_with_the_raw_text(tmp_path):
    path = tmp_path / "events.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(encode(step(0)))
        fh.write("[W 12:00:00] GLOG noise, not json\n")
        fh.write("[1, 2, 3]\n")  # JSON, but not an event
        fh.write('{"no": "type"}\n')
        fh.write(encode(step(1)))
    events = EventReader(str(path)).read_new()
    assert [e["type"] for e in events] == ["step", "log", "log", "log", "step"]
    garbage = events[1:4]
    assert [g["message"] for g in garbage] == ["[W 12:00:00] GLOG noise, not json", "[1, 2, 3]", '{"no": "type"}']
    assert all(g["raw"] is True and g["level"] == "garbage" and g["seq"] is None for g in garbage)


def test_invalid_utf8_is_replaced_not_fatal():
    got = decode_line(b"\xff\xfe broken\n")
    assert got["type"] == "log" and "broken" in got["message"]


def test_unknown_types_are_kept_and_shown(tmp_path):
    future = ev(0, "quantum_state", qubits=3, note="from a newer job")
    path = tmp_path / "events.jsonl"
    write_lines(path, [future, step(1)])
    events = read_all(str(path))
    assert events[0] == future
    assert "unknown type 'quantum_state'" in validate(future)
    line = format_event(events[0])
    assert "quantum_state" in line and "qubits" in line


def test_tail_events_drops_a_cut_first_line(tmp_path):
    path = tmp_path / "events.jsonl"
    events = [step(i) for i in range(200)] + [ev(200, "finished", status="ok", error=None)]
    write_lines(path, events)
    tail = tail_events(str(path), max_bytes=1000)
    assert tail and tail[-1]["type"] == "finished"
    assert all(e["type"] != "log" for e in tail), "a cut line leaked out as garbage"
    assert [e["seq"] for e in tail] == list(range(tail[0]["seq"], 201))


# --- validator ---------------------------------------------------------------------------------


def test_validator_accepts_every_known_type():
    good = [
        ev(
            0,
            "started",
            kind="drill",
            pid=1,
            python="/usr/bin/python3",
            argv=[],
            version="0.1.0",
            device={"requested": "auto", "resolved": "CPU", "why": "x"},
        ),
        ev(1, "log", level="info", message="m"),
        ev(2, "check", id="a", title="A", status="blocked"),
        ev(3, "progress", done=1, total=2, unit="files"),
        step(4),
        ev(5, "epoch", epoch=1, train_loss=0.3, samples=10, val={}, is_best=True, epoch_s=1.0),
        ev(6, "perf", first_step_s=1.0, warmup_steps=2, steady={}, peak_host_rss_mb=1.0, peak_device_mb=None, sync="x"),
        ev(7, "tensor_diff", name="w", shape=[2], atol=0.0, rtol=0.0, max_abs=0.0, passed=True),
        ev(8, "artifact", path="a.ckpt", kind="ckpt", bytes=1, sha256="0" * 64),
        ev(9, "result", summary={}),
        ev(10, "finished", status="cancelled", error=None),
    ]
    for e in good:
        assert validate(e) == [], e["type"]


def test_validator_catches_missing_fields_and_envelope():
    bad = step(0)
    del bad["loss"]
    assert validate(bad) == ["step event lacks 'loss'"]
    no_env = {"type": "log", "level": "info", "message": "m"}
    problems = validate(no_env)
    assert any(p.startswith("v must be 1") for p in problems)
    assert any(p.startswith("seq must be") for p in problems)
    assert any(p.startswith("t must be") for p in problems)
    assert any("seq must be" in p for p in validate(dict(step(0), seq=-1)))
    assert validate(dict(step(0), rank="0")) == ["step rank: an int expected, got a string '0'"]


def test_validator_catches_bad_statuses():
    for status in ("observed-pass", "observed-fail", "blocked", "not-run"):
        assert validate(ev(0, "check", id="a", title="A", status=status)) == []
    assert validate(ev(0, "check", id="a", title="A", status="pass")) == [
        "check status: one of observed-pass, observed-fail, blocked, not-run expected, got a string 'pass'"
    ]
    assert any(
        "finished status: one of ok, failed, cancelled expected, got a string 'success'" in p
        for p in validate(ev(0, "finished", status="success", error=None))
    )
    assert any(
        "passed: a bool expected, got a string 'yes'" in p
        for p in validate(ev(0, "tensor_diff", name="w", shape=[1], atol=0, rtol=0, max_abs=0, passed="yes"))
    )


def test_validate_file_catches_seq_gaps_and_bad_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    write_lines(path, [step(0), step(1), step(3), step(4)])
    assert validate_file(str(path)) == ["line 3: seq 3, expected 2"]

    write_lines(path, [step(1)])
    assert validate_file(str(path)) == ["line 1: seq 1, expected 0"]

    with open(path, "w", encoding="utf-8") as fh:
        fh.write(encode(step(0)) + "not json\n" + encode(step(1)) + encode(step(2))[:-10])
    problems = validate_file(str(path))
    assert problems[0].startswith("line 2: not a JSON event")
    assert problems[1] == "line 4: torn (no newline)"
    assert len(problems) == 2


def test_validate_file_counts_seq_per_rank(tmp_path):
    path = tmp_path / "events.jsonl"
    interleaved = [step(0, rank=0), step(0, rank=1), step(1, rank=1), step(1, rank=0), step(2, rank=0), step(2, rank=1)]
    write_lines(path, interleaved)
    assert validate_file(str(path)) == []

    write_lines(path, [step(0, rank=0), step(0, rank=1), step(1, rank=0), step(2, rank=1)])
    assert validate_file(str(path)) == ["line 4: seq 2, expected 1"]

    # A global seq across ranks is wrong: each rank counts from 0.
    write_lines(path, [step(0, rank=0), step(1, rank=1)])
    assert validate_file(str(path)) == ["line 2: seq 1, expected 0"]
