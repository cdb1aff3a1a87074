"""The train job's batched `steps` lines (jobs.train.timing.EventPipe) and every reader of step events.

The same steps written one line each and batched must read the same through the fold, the text log
(`watch`), the record's step table and metrics/steps.csv.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from jobs.train.timing import EventPipe
from tests.support.events import assert_events_valid
from workbench.config.layers import defaults
from workbench.events.protocol import encode, read_all
from workbench.events.steps import expand_steps
from workbench.events.text import format_event
from workbench.fold.record import JobRecord
from workbench.jobkit.context import JobContext
from workbench.record.metrics_csv import steps_csv
from workbench.system.atomic import write_json

STEPS = [
    (1, 1, 1, 2.5, 40.0, 64, "compile"),
    (1, 2, 2, 2.25, 3.0, 64, "warmup"),
    (1, 3, 3, 2.0, 2.5, 64, "steady"),
    (1, 4, 4, float("nan"), 2.75, 16, "recompile"),
    (2, 1, 5, 1.5, 2.5, 64, "steady"),
    (2, 2, 6, 1.25, 2.5, 64, "steady"),
]


def make_ctx(root: Path) -> JobContext:
    """A real job folder: <root>/sessions/<sid>/jobs/train-001."""
    job_dir = root / "sessions" / "20260101-000000-abcd" / "jobs" / "train-001"
    job_dir.mkdir(parents=True)
    write_json(job_dir / "config.json", defaults())
    write_json(
        job_dir / "job.json",
        {
            "jid": "train-001",
            "kind": "train",
            "session": "20260101-000000-abcd",
            "created": 0,
            "device": {"requested": "CPU", "resolved": "CPU"},
            "argv": [],
            "command": [],
        },
    )
    return JobContext(job_dir)


def batched_events(root: Path) -> List[Dict[str, Any]]:
    """STEPS through the job's EventPipe (a progress event in the middle), as written."""
    ctx = make_ctx(root)
    pipe = EventPipe(ctx)
    pipe.FLUSH_EVERY_S = 1e9  # one write at close: the lines' shape must not depend on timing
    for i, (epoch, step, global_step, loss, ms, size, phase) in enumerate(STEPS):
        if i == 2:
            pipe.put("progress", done=2, total=6, unit="step")
        pipe.step(epoch, step, global_step, loss, ms, size, phase)
    pipe.close()
    ctx.events.close()
    assert_events_valid(ctx.dir)
    return read_all(str(ctx.dir / "events.jsonl"))


def single_events() -> List[Dict[str, Any]]:
    """STEPS as one `step` line each (the older form), with the same progress event."""
    out: List[Dict[str, Any]] = []
    for i, (epoch, step, global_step, loss, ms, size, phase) in enumerate(STEPS):
        if i == 2:
            out.append({"type": "progress", "done": 2, "total": 6, "unit": "step"})
        out.append(
            {
                "type": "step",
                "epoch": epoch,
                "step": step,
                "global_step": global_step,
                "loss": loss,
                "step_ms": ms,
                "batch_size": size,
                "phase": phase,
            }
        )
    return [dict(ev, v=1, seq=n, t=1.7e9 + n) for n, ev in enumerate(out)]


def folded(events: List[Dict[str, Any]]) -> JobRecord:
    rec = JobRecord("train-001", "train", config={}, keep_steps=True)
    rec.ingest_lines(encode(ev).encode("utf-8").rstrip(b"\n") for ev in events)
    return rec


def test_the_pipe_writes_one_steps_line_per_run_of_consecutive_steps(tmp_path):
    evs = batched_events(tmp_path)
    assert [e["type"] for e in evs] == ["steps", "progress", "steps", "steps"]  # epoch 2 starts a new line
    first, middle, last = evs[0], evs[2], evs[3]
    assert (first["epoch"], first["first_step"], first["global_step"]) == (1, 1, 1)
    assert first["loss"] == [2.5, 2.25] and first["batch_size"] == 64 and first["phase"] == ["compile", "warmup"]
    assert middle["loss"] == [2.0, "nan"] and middle["batch_size"] == [64, 16]
    assert last["phase"] == "steady" and last["first_step"] == 1 and last["global_step"] == 5


def test_batched_and_single_lines_fold_to_the_same_record(tmp_path):
    batched, single = folded(batched_events(tmp_path)), folded(single_events())
    assert batched.steps_seen == single.steps_seen == len(STEPS)
    assert batched.damaged_count == single.damaged_count == 0
    for column in ("epoch", "step", "step_ms", "batch_size", "phase"):
        assert batched.step_table.columns[column] == single.step_table.columns[column], column
    assert batched.step_table.columns["loss"] == single.step_table.columns["loss"]  # NaN is written "nan" in both
    assert batched.steps.count == single.steps.count


def test_the_text_log_and_the_steps_csv_read_both_forms(tmp_path):
    batched, single = batched_events(tmp_path), single_events()
    text_b = [line for ev in batched for line in (format_event(ev, verbose_steps=1) or "").splitlines()]
    text_s = [line for ev in single for line in (format_event(ev, verbose_steps=1) or "").splitlines()]
    assert text_b == text_s and len(text_b) == len(STEPS)
    csv_b = steps_csv([{"jid": "train-001", "steps": folded(batched).step_table.as_dict()}])
    csv_s = steps_csv([{"jid": "train-001", "steps": folded(single).step_table.as_dict()}])
    assert csv_b.splitlines()[1:4] == csv_s.splitlines()[1:4] and len(csv_b.splitlines()) == 1 + len(STEPS)


def test_a_batched_step_costs_a_fraction_of_a_step_line(tmp_path):
    ctx = make_ctx(tmp_path)
    pipe = EventPipe(ctx)
    pipe.FLUSH_EVERY_S = 1e9
    losses = [2.0 / (1.0 + i / 7.0) for i in range(50)]  # full-precision floats, as a real loss is
    for i, loss in enumerate(losses):
        pipe.step(1, i + 1, i + 1, loss, 2.0 + i / 3.0, 64, "steady")
    pipe.close()
    ctx.events.close()
    batched = (ctx.dir / "events.jsonl").stat().st_size
    single = sum(
        len(
            encode(
                {
                    "v": 1,
                    "seq": i,
                    "t": 1764600000.123456,
                    "type": "step",
                    "epoch": 1,
                    "step": i + 1,
                    "global_step": i + 1,
                    "loss": loss,
                    "step_ms": 2.0 + i / 3.0,
                    "batch_size": 64,
                    "phase": "steady",
                }
            )
        )
        for i, loss in enumerate(losses)
    )
    assert batched < single / 3, (batched, single)
    steps = [s for ev in read_all(str(ctx.dir / "events.jsonl")) for s in expand_steps(ev)]
    assert [s["loss"] for s in steps] == losses and [s["global_step"] for s in steps] == list(range(1, 51))


def test_a_steps_line_ends_at_a_write_an_other_event_or_a_gap_in_the_steps(tmp_path):
    ctx = make_ctx(tmp_path)
    pipe = EventPipe(ctx)
    pipe.FLUSH_EVERY_S = 1e9
    for step in (1, 2):
        pipe.step(1, step, step, 1.0, 2.0, 64, "steady")
    pipe.drain()
    pipe.step(1, 3, 3, 1.0, 2.0, 64, "steady")
    pipe.step(1, 5, 5, 1.0, 2.0, 64, "steady")  # step 4 missing: a new line
    pipe.put("progress", done=5, total=9, unit="step")
    pipe.step(1, 6, 6, 1.0, 2.0, 64, "steady")
    pipe.step(2, 7, 7, 1.0, 2.0, 64, "steady")  # next epoch: a new line
    pipe.close()
    ctx.events.close()
    lines = [
        (e["type"], e.get("first_step"), len(e["loss"]) if e["type"] == "steps" else 0)
        for e in read_all(str(ctx.dir / "events.jsonl"))
    ]
    assert lines == [
        ("steps", 1, 2),
        ("steps", 3, 1),
        ("steps", 5, 1),
        ("progress", None, 0),
        ("steps", 6, 1),
        ("steps", 7, 1),
    ]
