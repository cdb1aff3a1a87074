"""collect() turns a session folder into the report dict, generically by event type and job kind."""

import csv
import hashlib
import io
import json

from tests.support.job_folders import event, write_job
from tests.support.sessions import SID, copy_recorded
from workbench.record import metrics_csv
from workbench.record.collect import FORMULA, collect
from workbench.record.markdown import report as markdown
from workbench.session.store import SessionStore

SECTIONS = [
    "format",
    "generated",
    "session",
    "still_running",
    "environment",
    "data",
    "training",
    "performance",
    "alignment",
    "export",
    "new_distribution",
    "other_jobs",
    "checks",
    "jobs_not_ok",
    "jobs",
    "not_verified",
    "limitations",
    "acceptance",
]


def _recorded(tmp_path):
    store = SessionStore(tmp_path / "sessions")
    copy_recorded(store.root)
    return store, collect(store, SID)


def test_sections_come_in_the_report_order_and_the_dict_is_json(tmp_path):
    _, report = _recorded(tmp_path)
    assert list(report) == SECTIONS
    assert json.loads(json.dumps(report, allow_nan=False))["session"]["id"] == SID


def test_recorded_session_reads_back_every_job_by_kind(tmp_path):
    _, r = _recorded(tmp_path)
    assert [j["jid"] for j in r["session"]["jobs"]] == [
        "env-001",
        "data-001",
        "train-001",
        "test-001",
        "align-001",
        "export-001",
        "drill-001",
    ]
    assert r["session"]["host"] == "devboard-01" and r["session"]["user"] == "dev"
    assert r["session"]["commands"][2]["command_line"].startswith("ms-workbench run train --session %s" % SID)
    (env,) = r["environment"]
    assert {c["status"] for c in env["checks"]} == {"observed-pass", "blocked", "not-run"}
    (data,) = r["data"]
    assert data["split"]["seed"] == 37 and data["split"]["n_train"] == 1800 and data["synthetic"] is True
    assert [a["on_disk"] for a in data["artifacts"]] == ["matches", "matches"]
    (run,) = r["training"]["runs"]
    assert [e["epoch"] for e in run["epochs"]] == [1, 2]
    assert run["best_epoch"]["epoch"] == 2
    assert len(run["best_epoch"]["val"]["confusion"]) == 10
    assert r["training"]["test_evaluations"] == 1 and r["training"]["tests"][0]["from"] == "train-001"
    assert [p["scope"] for p in r["performance"]] == ["epoch 1", "epoch 2", "run"]
    assert r["performance"][-1]["batch_size"] == 64 and r["performance"][-1]["sync"] == "loss.asnumpy() every step"
    (align,) = r["alignment"]["jobs"]
    assert r["alignment"]["formula"] == FORMULA
    assert align["failed"] == ["grad.fc2.weight"] and align["passed"] == 3
    assert align["reference"] == "CPU pynative fp32"
    (export,) = r["export"]
    assert {a["kind"] for a in export["artifacts"]} == {"checkpoint", "mindir"}


def test_failures_are_listed_with_reasons_and_the_crash_with_its_label(tmp_path):
    _, r = _recorded(tmp_path)
    assert r["checks"]["counts"] == {"observed-pass": 14, "observed-fail": 2, "blocked": 2, "not-run": 2}
    reasons = {(c["jid"], c["id"]): c["reason"] for c in r["checks"]["not_passed"]}
    assert reasons[("env-001", "npu-smi")] == "npu-smi is not on PATH"
    assert reasons[("export-001", "mindir-b1")].startswith("exported with a fixed batch of 64")
    assert r["jobs_not_ok"] == [
        {"jid": "drill-001", "kind": "drill", "state": "crashed", "label": "crashed: SIGSEGV after 41 s", "error": None}
    ]
    joined = " ".join(r["not_verified"])
    assert "Ascend" in joined and "Synthetic data" in joined and "grad.fc2.weight" in joined
    assert "No env job" not in joined  # it has one


def test_empty_session_says_what_is_missing(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    r = collect(store, sid)
    assert r["jobs"] == [] and r["still_running"] == []
    for kind in ("env", "data", "train", "align", "export"):
        assert any(s.startswith("No %s job" % kind) for s in r["not_verified"]), kind
    text = markdown.render(r)
    assert "No environment job in this session." in text and "No job recorded a check." in text


def test_unknown_events_garbage_torn_tail_and_seq_gaps_are_kept_not_fatal(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    lines = [
        event(0, "started", kind="drill", pid=1, python="p", argv=[], version="0.1.0", device={}),
        event(1, "gpu_temperature", celsius=71),
        b"this is not json\n",
        event(3, "step", epoch=1, step=1, loss=0.5, step_ms=2.0, batch_size=8),
        b'{"v":1,"seq":4,"t":1004.0,"type":"st',
    ]
    write_job(store, sid, "drill-001", lines, {"returncode": 0, "signal": None, "duration_s": 1.0})
    (job,) = collect(store, sid)["jobs"]
    assert job["unknown"] == [{"seq": 1, "t": 1001.0, "celsius": 71, "type": "gpu_temperature"}]
    assert job["torn_tail_bytes"] == len(b'{"v":1,"seq":4,"t":1004.0,"type":"st')
    assert any("not a JSON event" in p for p in job["seq_problems"])
    assert any("seq 3, expected 2" in p for p in job["seq_problems"])
    assert job["steps"]["loss"] == [0.5]
    assert job["label"] == "failed: exited 0 without a finished event after 1.0 s"


def test_artifacts_are_checked_against_the_files_on_disk(tmp_path):
    store, _ = _recorded(tmp_path)
    art = store.root / SID / "jobs" / "export-001" / "artifacts"
    (art / "model.mindir").write_bytes(b"tampered")
    (art / "model.ckpt").unlink()
    r = collect(store, SID)
    on_disk = {a["path"]: a["on_disk"] for a in r["export"][0]["artifacts"]}
    assert on_disk == {"artifacts/model.ckpt": "missing", "artifacts/model.mindir": "differs"}
    assert any("artifacts/model.ckpt (missing)" in s for s in r["not_verified"])


def test_metrics_csvs_hold_every_step_epoch_and_class(tmp_path):
    _, r = _recorded(tmp_path)
    steps = list(csv.DictReader(io.StringIO(metrics_csv.steps_csv(r["jobs"]))))
    train_steps = [s for s in steps if s["job"] == "train-001"]
    assert len(train_steps) == 58 and len(steps) == 58 + 5
    assert list(steps[0])[:6] == ["job", "epoch", "step", "loss", "step_ms", "batch_size"]
    assert float(train_steps[0]["step_ms"]) == 1850.0
    epochs = list(csv.DictReader(io.StringIO(metrics_csv.epochs_csv(r["jobs"]))))
    assert [(e["job"], e["epoch"]) for e in epochs] == [("train-001", "1"), ("train-001", "2")]
    per_class = list(csv.DictReader(io.StringIO(metrics_csv.per_class_csv(r["jobs"], ["c%d" % i for i in range(10)]))))
    assert len(per_class) == 10 * 2 + 10
    test_rows = [p for p in per_class if p["epoch"] == "test"]
    assert [int(p["support"]) for p in test_rows] == [50] * 10


def test_a_running_job_is_reported_as_running(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    # No exit.json and created a moment ago: the runner's "starting" window.
    write_job(
        store,
        sid,
        "train-001",
        [event(0, "started", kind="train", pid=1, python="p", argv=[], version="0.1.0", device={})],
    )
    r = collect(store, sid)
    assert r["still_running"] == ["train-001"]
    assert r["jobs_not_ok"] == []
    assert r["not_verified"][0].startswith("Jobs still running when this record was written: train-001")
    assert "Written while jobs were still running" in markdown.render(r)


def test_a_file_written_again_is_checked_at_its_last_artifact_event(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    versions = (b"state after epoch 1", b"state after epoch 2")
    lines = [
        event(
            i, "artifact", path="artifacts/state.ckpt", kind="state", bytes=len(v), sha256=hashlib.sha256(v).hexdigest()
        )
        for i, v in enumerate(versions)
    ]
    job = write_job(store, sid, "train-001", lines)
    (job / "artifacts" / "state.ckpt").write_bytes(versions[-1])
    r = collect(store, sid)
    assert [a["on_disk"] for a in r["training"]["runs"][0]["artifacts"]] == ["superseded", "matches"]
    assert not any("state.ckpt" in s for s in r["not_verified"])
