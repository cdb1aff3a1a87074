"""A job's own files damaged or replaced: the status says `damaged: <file>: <why>`, never a traceback or a hang."""

from __future__ import annotations

import json
import os

import pytest

from workbench.events.files import encode, last_finished
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json, write_json
from workbench.system.regular import NotRegular, read_regular


def _finished_job(store: SessionStore) -> os.PathLike[str]:
    sid = store.create()
    job = store.new_job_dir(sid, "drill")
    write_json(job / "job.json", {"jid": job.name, "kind": "drill", "created": 1.0})
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 4.0, "ended_at": 5.0})
    lines = [encode({"v": 1, "seq": i, "t": 1.0 + i, "type": "log", "message": "step %d" % i}) for i in range(3)]
    lines.append(encode({"v": 1, "seq": 3, "t": 4.0, "type": "finished", "status": "ok"}))
    (job / "events.jsonl").write_text("".join(lines))
    return job


@pytest.mark.parametrize("content", [b"", b'{"returncode": 0, "sig', b"[1, 2]", b"\xff\xfe"])
def test_an_empty_or_cut_exit_json_is_a_damaged_status_naming_it(tmp_path, content):
    job = _finished_job(SessionStore(tmp_path))
    (job / "exit.json").write_bytes(content)
    status = job_status(job)
    assert status.state == "damaged" and status.reason.startswith("exit.json: "), status
    assert status.done


def test_a_cut_job_json_still_lists_the_session(tmp_path):
    store = SessionStore(tmp_path)
    job = _finished_job(store)
    (job / "job.json").write_bytes(b'{"jid": "dri')
    assert store.jobs(store.sessions()[0]) == [job]
    assert job_status(job).state == "ok"  # the status comes from exit.json and the events


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev-zero"])
def test_events_replaced_by_a_fifo_a_folder_or_dev_zero_is_damaged_at_once(tmp_path, kind):
    job = _finished_job(SessionStore(tmp_path))
    events = job / "events.jsonl"
    events.unlink()
    if kind == "fifo":
        os.mkfifo(str(events))
    elif kind == "directory":
        events.mkdir()
    else:
        os.symlink("/dev/zero", str(events))
    status = job_status(job)
    assert status.state == "damaged" and status.reason.startswith("events.jsonl: "), status
    assert "not a regular file" in status.reason


def test_garbage_appended_after_a_true_finished_line_keeps_the_status_ok(tmp_path):
    job = _finished_job(SessionStore(tmp_path))
    with open(str(job / "events.jsonl"), "ab") as fh:
        for _ in range(50):
            fh.write(b"garbage " * 131072 + b"\n")  # 50 MB of lines after the finished event
        fh.write(b"a torn last line without its newline")
    assert job_status(job).state == "ok"
    assert last_finished(str(job / "events.jsonl"))["status"] == "ok"


def test_a_finished_line_cut_in_the_middle_is_not_taken(tmp_path):
    job = _finished_job(SessionStore(tmp_path))
    data = (job / "events.jsonl").read_bytes()
    (job / "events.jsonl").write_bytes(data[:-10])  # the finished line lost its end and newline
    assert last_finished(str(job / "events.jsonl")) is None
    assert job_status(job).label() == "failed: exited 0 without a finished event after 4.0 s"


def test_read_json_refuses_what_is_not_a_regular_file_before_reading(tmp_path):
    fifo = tmp_path / "exit.json"
    os.mkfifo(str(fifo))
    with pytest.raises(NotRegular, match="exit.json is a FIFO, not a regular file"):
        read_json(fifo)
    (tmp_path / "big.json").write_bytes(b" " * 100)
    with pytest.raises(NotRegular, match="larger than 10 bytes"):
        read_regular(tmp_path / "big.json", max_bytes=10)


def test_sessions_lists_a_session_with_a_damaged_job(tmp_path, capsys):
    from workbench.cli.main import main

    job = _finished_job(SessionStore(tmp_path))
    (job / "exit.json").write_bytes(b"")
    assert main(["--sessions", str(tmp_path), "sessions", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["jobs"][0]["status"] == "damaged" and row["jobs"][0]["reason"].startswith("exit.json: not valid JSON")


@pytest.mark.parametrize("content", [b"", b'{"jid": "dri', b"[1, 2]"])
def test_the_apps_tracker_lists_a_job_whose_job_json_is_damaged(tmp_path, content):
    """The TUI follows the same jobs `sessions` lists: a damaged job.json does not hide its job."""
    from workbench.fold.tracker import JobTracker

    store = SessionStore(tmp_path)
    job = _finished_job(store)
    (job / "job.json").write_bytes(content)
    found = JobTracker(store, store.sessions()[0]).discover()
    assert [j.jid for j in found.new_jobs] == [job.name] and found.new_jobs[0].kind == "drill"
    assert found.new_jobs[0].status.state == "ok", found.new_jobs[0].status
