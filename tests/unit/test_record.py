"""The one fold (JobRecord, SessionModel): typed lines are folded once, damaged ones listed with their line."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from workbench.events.protocol import FIELD_TYPES, REQUIRED, Evidence, encode, type_problem, validate
from workbench.events.steps import expand_steps
from workbench.events.text import format_event
from workbench.fold.record import JobRecord, SessionModel
from workbench.record.collect import collect
from workbench.record.markdown import report as markdown
from workbench.session.store import SessionStore
from workbench.system.atomic import write_json


def ev(seq, type_, **fields):
    return dict({"v": 1, "seq": seq, "t": 1000.0 + seq, "type": type_}, **fields)


def step(seq, **extra):
    return ev(seq, "step", **dict({"epoch": 1, "step": seq, "loss": 0.5, "step_ms": 2.0, "batch_size": 8}, **extra))


def epoch(seq, n, accuracy, is_best):
    return ev(
        seq,
        "epoch",
        epoch=n,
        train_loss=0.5,
        samples=8,
        is_best=is_best,
        epoch_s=1.0,
        val={"accuracy": accuracy, "macro_f1": accuracy, "per_class": [], "confusion": []},
    )


def test_the_required_fields_are_the_ones_the_field_table_marks():
    assert set(FIELD_TYPES) == set(REQUIRED)
    assert REQUIRED["epoch"] == ("epoch", "train_loss", "samples", "val", "is_best", "epoch_s")
    assert REQUIRED["device"] == () and "global_step" not in REQUIRED["step"]
    for kind, fields in FIELD_TYPES.items():
        assert REQUIRED[kind] == tuple(name for name, ft in fields.items() if ft.required), kind
        missing = validate({"v": 1, "seq": 0, "t": 1.0, "type": kind})
        assert missing == ["%s event lacks %r" % (kind, name) for name in REQUIRED[kind]], kind


def test_wrong_types_are_named_where_a_number_or_an_object_belongs():
    assert type_problem(epoch(0, "2", 0.5, True)) == "epoch epoch: an int expected, got a string '2'"
    bad_val = dict(epoch(0, 2, 0.5, True), val="notadict")
    assert "val: an object expected" in type_problem(bad_val)
    assert "loss: a number or null expected, got a string 'abc'" in type_problem(step(0, loss="abc"))
    nested = dict(epoch(0, 1, 0.5, True), val={"per_class": [{"f1": [1]}]})
    assert type_problem(nested) == "epoch val: per_class: [0]: f1: a number or null expected, got a list [1]"
    assert type_problem(step(0, loss="nan")) is None  # how the encoder writes a diverged loss
    assert "status" in type_problem(ev(0, "check", id="a", title="A", status="observed-pas"))


def test_a_wrong_typed_line_is_flagged_with_its_line_and_skipped():
    rec = JobRecord("train-001", "train", config={})
    kept = rec.ingest([step(0), step(1, loss="abc"), dict(epoch(2, 1, 0.5, True), val="notadict"), step(3)])
    assert [e["seq"] for e in kept] == [0, 3]
    assert [(d["line"], d["what"]) for d in rec.damaged] == [(2, "wrong type"), (3, "wrong type")]
    assert rec.steps.count == 2 and rec.epochs == [] and rec.missing_seq == []


def test_torn_merged_and_missing_lines_are_listed():
    rec = JobRecord("train-001", "train", config={})
    torn = encode(step(1))[:20]
    data = (encode(step(0)) + torn + encode(step(2)) + encode(step(5)) + encode(step(6))[:10]).encode()
    lines = data.split(b"\n")
    tail = lines.pop()
    rec.ingest_lines(lines)
    rec.note_torn_tail(len(tail))
    assert [(d["line"], d["what"]) for d in rec.damaged] == [(2, "merged"), (4, "torn")]
    assert rec.missing_seq == [{"rank": None, "first": 1, "last": 4}]


def test_batched_steps_fold_like_single_steps():
    batch = ev(
        0,
        "steps",
        epoch=1,
        first_step=1,
        loss=[2.0, 1.0, 0.5],
        step_ms=[900.0, 5.0, 4.0],
        batch_size=8,
        phase=["compile", "steady", "steady"],
        rank=0,
    )
    assert validate(batch) == []
    assert [s["step"] for s in expand_steps(batch)] == [1, 2, 3]
    one = JobRecord("train-001", "train", config={})
    one.ingest([batch])
    many = JobRecord("train-002", "train", config={})
    many.ingest([dict(s, v=1, seq=i, t=1.0) for i, s in enumerate(expand_steps(batch))])
    for rec in (one, many):
        assert rec.steps.compile_ms == [900.0] and list(rec.steps.step_ms) == [5.0, 4.0]
        assert rec.steps.min_loss == 0.5 and rec.ranks == [0]
    assert "epoch 1 step 2 loss 1" in format_event(batch, verbose_steps=1)


def test_checks_by_id_carry_their_level_and_the_device_observed_on():
    rec = JobRecord("env-001", "env", config={})
    rec.ingest(
        [
            ev(
                0,
                "started",
                kind="env",
                pid=1,
                python="p",
                argv=[],
                version="0",
                device={"requested": "auto", "resolved": "Ascend", "id": 0, "why": "npu-smi"},
            ),
            ev(1, "check", id="probe-add", title="add", status=Evidence.PASS),
            ev(0, "check", id="probe-add", title="add", status=Evidence.FAIL, rank=1),
        ]
    )
    (fact,) = rec.check_facts()
    assert fact["status"] == Evidence.PASS and fact["device"] == "Ascend"
    assert list(rec.rank_checks) == ["probe-add@r1"]


def test_best_epoch_is_the_marked_one_else_the_most_accurate():
    rec = JobRecord("train-001", "train", config={})
    rec.ingest([epoch(0, 1, 0.7, False), epoch(1, 2, 0.9, False), epoch(2, 3, 0.8, False)])
    assert rec.best_epoch["epoch"] == 2
    rec.ingest([epoch(3, 4, 0.6, True)])
    assert rec.best_epoch["epoch"] == 4


def test_the_newest_job_of_a_kind_is_by_creation_then_id():
    session = SessionModel()
    for jid, created in (("train-002", 5.0), ("train-001", 1.0), ("train-003", 5.0), ("test-001", 9.0)):
        session.ingest(
            SimpleNamespace(jid=jid, kind=jid.split("-")[0], spec={"created": created}, dir=None),
            [ev(0, "result", summary={"from": "train-003", "accuracy": 0.9})],
        )
    assert session.newest("train").jid == "train-003"
    assert [r.jid for r in session.of_kind("train")] == ["train-001", "train-002", "train-003"]
    assert session.test_evaluations("train-003") == [{"from": "train-003", "accuracy": 0.9, "jid": "test-001"}]
    assert session.test_evaluations("train-001") == []


def test_report_md_names_damaged_lines_and_missing_seq_numbers(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    job = store.root / sid / "jobs" / "train-001"
    job.mkdir(parents=True)
    write_json(
        job / "job.json",
        {
            "jid": "train-001",
            "kind": "train",
            "created": 1.0,
            "command": ["x"],
            "device": {"resolved": "CPU", "id": 0},
            "env": {},
        },
    )
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0})
    lines = [
        encode(step(0)),
        encode(step(1))[:15] + encode(step(2)),
        encode(step(3, loss="abc")),
        encode(dict(epoch(4, "2", 0.5, True), val="notadict")),
        encode(step(5)),
        encode(step(6))[:12],
    ]
    (job / "events.jsonl").write_text("".join(lines))
    report = collect(store, sid)
    (rec,) = report["jobs"]
    assert [(d["line"], d["what"]) for d in rec["damaged_lines"]] == [
        (2, "merged"),
        (3, "wrong type"),
        (4, "wrong type"),
        (6, "torn"),
    ]
    assert rec["missing_seq"] == [{"rank": None, "first": 1, "last": 2}]
    text = markdown.render(report)
    assert "### Damaged event lines and missing seq numbers" in text
    assert "| train-001 | events.jsonl | 2 | merged |" in text and "| train-001 | events.jsonl | 6 | torn |" in text
    assert "| train-001 | main | 1–2 |" in text
    json.dumps(report, allow_nan=False)


def test_watch_prints_a_damaged_line_and_goes_on(tmp_path):
    from workbench.cli.main import follow

    job = tmp_path / "train-001"
    job.mkdir()
    (job / "events.jsonl").write_text(
        "".join(
            [
                encode(step(0)),
                encode(dict(epoch(1, "2", 0.5, True), val="notadict")),
                encode(step(2, loss="abc")),
                encode(ev(3, "finished", status="ok", error=None)),
            ]
        )
    )
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0})
    out = io.StringIO()
    assert follow(job, out_json=False, stream=out, verbose_steps=1) == 0
    text = out.getvalue()
    assert text.count("damaged line skipped") == 2 and "finished ok" in text
