"""`test` warns when its checkpoint's training run did not end ok (issue 18.9)."""

from __future__ import annotations

from workbench.events.protocol import EventWriter
from workbench.session.checkpoint_origin import run_not_ok_warning
from workbench.system.atomic import write_json


def _train_job(tmp_path, status, exit_record):
    job = tmp_path / "train-001"
    job.mkdir()
    write_json(job / "job.json", {"jid": job.name, "kind": "train", "created": 0})
    writer = EventWriter(str(job / "events.jsonl"))
    writer.emit("started", kind="train")
    if status:
        writer.emit("finished", status=status, error=None)
    writer.close()
    write_json(job / "exit.json", dict({"returncode": 0, "signal": None, "duration_s": 3.0}, **exit_record))
    return job


def test_an_ok_run_gives_no_warning(tmp_path):
    assert run_not_ok_warning(_train_job(tmp_path, "ok", {})) is None


def test_a_run_that_ran_out_of_disk_is_named(tmp_path):
    job = _train_job(tmp_path, None, {"returncode": 1, "disk_full": {"error": "ENOSPC", "file": "artifacts/x.tmp"}})
    warning = run_not_ok_warning(job)
    assert warning.startswith("the checkpoint comes from train-001, which did not end ok (crashed: no space left")
    assert "artifacts/x.tmp" in warning


def test_a_cancelled_run_and_a_folder_that_is_no_job(tmp_path):
    assert "(cancelled: stopped on request" in run_not_ok_warning(
        _train_job(tmp_path, "cancelled", {"cancelled": True})
    )
    assert "is not a job folder" in run_not_ok_warning(tmp_path)
