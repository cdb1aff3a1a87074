"""The tracker reads every event a job wrote, including those just before it ended, then stops reading it."""

import json
import os

from workbench.events.protocol import encode
from workbench.fold.tracker import JobTracker
from workbench.session.store import SessionStore


def _job(store, sid, jid="drill-001"):
    job_dir = store.root / sid / "jobs" / jid
    job_dir.mkdir(parents=True)
    (job_dir / "job.json").write_text(json.dumps({"jid": jid, "kind": "drill", "created": 1.0}))
    (job_dir / "pids.json").write_text(json.dumps({"supervisor": os.getpid()}))  # alive: this process
    return job_dir


def _append(job_dir, seqs):
    with open(job_dir / "events.jsonl", "a") as fh:
        for seq in seqs:
            fh.write(encode({"v": 1, "seq": seq, "t": 0.0, "type": "log", "level": "info", "message": str(seq)}))


def _end(job_dir):
    (job_dir / "exit.json").write_text(json.dumps({"returncode": 0, "duration_s": 1.0}))


def test_events_written_just_before_the_end_are_read_and_then_the_file_is_left_alone(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    job_dir = _job(store, sid)
    tracker = JobTracker(store, sid)
    clock = 0.0
    batch = tracker.poll(clock)
    assert [j.jid for j in batch.new_jobs] == ["drill-001"] and tracker.jobs["drill-001"].status.state == "running"
    _append(job_dir, range(3))
    assert tracker.poll(clock + 0.1).count == 3
    _end(job_dir)  # the job ended ...
    clock += 1.0
    batch = tracker.poll(clock)  # ... this poll sees the end; the events below come "between" read and status
    assert tracker.jobs["drill-001"].status.done and batch.changed
    _append(job_dir, [3, 4])  # written by the job before its exit record landed, read after it
    assert tracker.poll(clock + 0.1).count == 2  # one more read after the end was seen: nothing is lost
    assert tracker.jobs["drill-001"].drained
    _append(job_dir, [5])
    assert tracker.poll(clock + 0.2).count == 0  # drained: the file is not read again
    assert tracker.jobs["drill-001"].events == 5


def test_each_poll_reads_only_what_is_new(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    job_dir = _job(store, sid)
    tracker = JobTracker(store, sid)
    tracker.poll(0.0)
    _append(job_dir, range(10))
    first = tracker.poll(0.05)
    assert [e["seq"] for _, evs in first.events for e in evs] == list(range(10))
    assert not tracker.poll(0.1)  # nothing new, no status change
    with open(job_dir / "events.jsonl", "a") as fh:
        fh.write('{"v":1,"seq":10,"t":0.0,"type":"log",')  # a torn line waits for its end
    assert tracker.poll(0.15).count == 0
    with open(job_dir / "events.jsonl", "a") as fh:
        fh.write('"level":"info","message":"10"}\n')
    assert [e["seq"] for _, evs in tracker.poll(0.2).events for e in evs] == [10]
