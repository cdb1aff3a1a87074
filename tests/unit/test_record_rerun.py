"""The re-run of a record's lineage: job references, the comparisons and the sizes they name, finding the record."""

from __future__ import annotations

import pytest

from tests.support.sessions import copy_real
from workbench.record import rerun
from workbench.session.store import SessionStore


def test_references_to_lineage_jobs_follow_the_re_runs_and_others_are_refused():
    cfg = {
        "python": "/old/box/python",
        "data": {"from": "data-001"},
        "test": {"from": None},
        "export": {"from": "init"},
    }
    out = rerun.rewrite_refs(cfg, "train-002", {"data-001": "data-001", "train-002": "train-001"})
    assert out["data"]["from"] == "data-001" and out["export"]["from"] == "init" and "python" not in out
    assert cfg["python"] == "/old/box/python"  # the record's config is not changed
    with pytest.raises(rerun.RecordError, match="train-003 ran with train.resume_from=train-001, a job outside"):
        rerun.rewrite_refs({"train": {"resume_from": "train-001"}}, "train-003", {"data-001": "data-002"})


def test_losses_pass_within_the_stated_tolerance_and_name_the_epoch_and_size_otherwise():
    same = rerun.compare_losses([2.5, 1.25], [2.5, 1.25])
    assert same.status == rerun.PASS and "max |Δ| 0 (bit-identical" in same.detail
    near = rerun.compare_losses([2.5], [2.5 + 1e-7])
    assert near.status == rerun.PASS and "within tolerance" in near.detail
    far = rerun.compare_losses([2.5, 1.25], [2.5, 1.2501])
    assert far.status == rerun.FAIL and far.detail.startswith("epoch 2: recorded 1.25, reproduced 1.2501, |Δ| 0.0001")
    assert rerun.compare_losses([2.5], [2.5, 1.0]).detail == "1 epochs recorded, 2 reproduced"


def test_checkpoint_names_the_record_file_that_changed_and_the_bytes_that_differ(tmp_path):
    import hashlib

    held, new = tmp_path / "model.ckpt", tmp_path / "best.ckpt"
    new.write_bytes(b"weights!")
    sha = hashlib.sha256(b"weights!").hexdigest()
    held.write_bytes(b"weights!")
    assert rerun.compare_checkpoint(sha, held, new).status == rerun.PASS
    held.write_bytes(b"weightz!")
    bad = rerun.compare_checkpoint(sha, held, new)
    assert bad.status == rerun.FAIL and "the record's model.ckpt has SHA-256" in bad.detail
    assert bad.detail.endswith("1 of 8 bytes differ")
    held.write_bytes(b"weights!")
    new.write_bytes(b"weights!!")
    other = rerun.compare_checkpoint(sha, held, new)
    assert other.status == rerun.FAIL and other.detail.endswith("8 bytes against 9 bytes")


def test_test_metrics_must_be_equal():
    assert (
        rerun.compare_test({"accuracy": 0.5, "macro_f1": 0.4}, {"accuracy": 0.5, "macro_f1": 0.4}).status
        == "observed-pass"
    )
    diff = rerun.compare_test({"accuracy": 0.5, "macro_f1": 0.4}, {"accuracy": 0.5001, "macro_f1": 0.4})
    assert diff.status == rerun.FAIL and diff.detail == "accuracy recorded 0.5, reproduced 0.5001"
    assert rerun.compare_test(None, None).status == rerun.NOT_RUN


def test_a_session_id_without_a_record_names_the_export_command(tmp_path):
    root = tmp_path / "sessions"
    sid = copy_real(root)
    with pytest.raises(
        rerun.RecordError, match="session %s has no record .*: write it with `ms-workbench export %s" % (sid, sid)
    ):
        rerun.find_record(sid, SessionStore(root))
    (tmp_path / "empty").mkdir()
    with pytest.raises(rerun.RecordError, match="holds no report.json"):
        rerun.find_record(str(tmp_path / "empty"), SessionStore(root))


def test_conditions_name_the_mindspore_version_and_the_device():
    started = {"mindspore": {"version": "2.10.0"}, "device": {"target": "auto", "resolved": "CPU"}}
    assert rerun.conditions(started) == "MindSpore 2.10.0 on CPU"
    assert rerun.conditions(None) == "MindSpore ? on ?"


def test_the_last_line_names_the_first_difference_a_failed_re_run_or_what_blocked():
    ok = rerun.Comparison("split hash", rerun.PASS, "identical")
    ckpt = rerun.Comparison("checkpoint hash", rerun.FAIL, "recorded a, reproduced b: 3 of 9 bytes differ")
    assert rerun.verdict_line(True, [ok], "S") == "observed-pass: reproduced (session S)"
    assert rerun.verdict_line(False, [ok, ckpt], "S") == (
        "observed-fail: checkpoint hash differs: recorded a, reproduced b: 3 of 9 bytes differ (session S)"
    )
    failed = rerun.Comparison("train re-run", rerun.FAIL, "train-001 (recorded train-002) ended failed: diverged")
    assert rerun.verdict_line(False, [failed], "S").startswith("observed-fail: train re-run failed: train-001")
    refused = rerun.Comparison("train re-run", rerun.BLOCKED, "train-001 (recorded train-002) ended refused: held")
    assert rerun.verdict_line(False, [refused], "S").startswith("blocked: train re-run: train-001")


def test_a_record_folder_or_an_unpacked_session_folder_is_found(tmp_path):
    unpacked = tmp_path / "20261202-010340-c69b"
    (unpacked / "export").mkdir(parents=True)
    (unpacked / "export" / "report.json").write_text("{}")
    store = SessionStore(tmp_path / "sessions")
    assert rerun.find_record(str(unpacked), store) == (unpacked / "export").resolve()
    assert rerun.find_record(str(unpacked / "export"), store) == (unpacked / "export").resolve()
    with pytest.raises(rerun.RecordError, match="report.json names no frozen candidate"):
        rerun.read_record(unpacked / "export")
