"""The export's fold handed to the screen renderer: the events files are not read again, and nothing is lost."""

import io
import json
from pathlib import Path

from screens.screenshots import render_in_child, shooter
from tests.support.sessions import copy_real
from workbench.events.protocol import encode
from workbench.fold.handoff import FoldedSession, tail_events
from workbench.fold.stream import fold_session
from workbench.fold.tracker import JobTracker
from workbench.record.manifest import SessionFiles
from workbench.record.write import handoff
from workbench.session.store import SessionStore


def _line(seq, message="m"):
    return encode({"v": 1, "seq": seq, "t": 0.0, "type": "log", "level": "info", "message": message})


def test_tail_events_drop_a_cut_first_line_a_torn_last_line_and_damaged_lines():
    body = b"".join(_line(i).encode() for i in range(3)) + b"not json\n" + _line(3).encode() + b'{"v":1,"se'
    assert [e["seq"] for e in tail_events(body, cut=False)] == [0, 1, 2, 3]
    assert [e["seq"] for e in tail_events(body[5:], cut=True)] == [1, 2, 3]  # line 0 was cut: left out
    assert tail_events(b"", cut=False) == [] and tail_events(b'{"v":1', cut=True) == []


def test_a_folded_session_survives_the_pipe_without_its_step_spool(tmp_path):
    root = tmp_path / "sessions"
    sid = copy_real(root)
    model = fold_session(root / sid)
    train = next(r for r in model.records.values() if r.kind == "train")
    buf = io.BytesIO()
    FoldedSession(records=dict(model.records), tails={}).dump(buf)
    buf.seek(0)
    back = FoldedSession.load(buf).records[train.jid]
    assert back.epochs == train.epochs and list(back.steps.loss) == list(train.steps.loss)
    assert back.step_table is None and back.events == train.events and back.status.state == train.status.state


def test_adopting_a_fold_reads_no_events_file(tmp_path):
    """Each job's events.jsonl is replaced after the fold: what the tracker holds is still the fold's."""
    root = tmp_path / "sessions"
    sid = copy_real(root)
    session = root / sid
    files = SessionFiles.snapshot(session, exclude=("export",))
    folds = dict(fold_session(session).records)
    folded = handoff(files, folds)
    for job in (session / "jobs").iterdir():
        if (job / "events.jsonl").exists():
            (job / "events.jsonl").write_text(_line(0, "written after the fold") * 3)
    tracker = JobTracker(SessionStore(root), sid)
    batch = tracker.adopt(folded)
    assert set(tracker.jobs) == set(folds) and tracker.caught_up
    for jid, job in tracker.jobs.items():
        assert job.record is folds[jid] and job.drained and job.events == folds[jid].events
    shown = [ev.get("message") for _, evs in batch.events for ev in evs]
    assert shown and "written after the fold" not in shown  # the tails are the snapshot's, not the file's now
    assert tracker.poll(1e9).count == 0  # and nothing is read later either


def test_a_job_that_appears_after_the_fold_is_left_out(tmp_path):
    root = tmp_path / "sessions"
    sid = copy_real(root)
    session = root / sid
    folded = handoff(SessionFiles.snapshot(session, exclude=("export",)), dict(fold_session(session).records))
    late = session / "jobs" / "drill-099"
    late.mkdir()
    (late / "job.json").write_text(json.dumps({"jid": "drill-099", "kind": "drill", "created": 1e10}))
    (late / "events.jsonl").write_text(_line(0))
    tracker = JobTracker(SessionStore(root), sid)
    tracker.adopt(folded)
    assert "drill-099" not in tracker.jobs
    assert "drill-099" not in tracker.poll(1e9).new_jobs and "drill-099" not in tracker.jobs


def test_pictures_from_the_fold_are_the_pictures_drawn_by_reading_the_session(tmp_path):
    """The same six screens, byte for byte, whether the renderer reads the session or is handed its fold (after
    building its screens on none, then taking it: render_svgs.shoot_handed; sharing CSS parses and restyling the app
    alone on a new screen: render_svgs._cheaper_restyling; no whole-screen restyle when a screen is shown:
    render_svgs._no_resume_restyle). The reading renderer is Textual as it comes: the reference."""
    root = tmp_path / "sessions"
    sid = copy_real(root)
    session = root / sid
    read = render_in_child(root, sid, tmp_path / "read")
    draw = shooter(root, sid)
    try:
        folded = handoff(SessionFiles.snapshot(session, exclude=("export",)), dict(fold_session(session).records))
        handed = draw(tmp_path / "handed", folded)
    finally:
        draw.close()
    assert read["error"] is None and handed["error"] is None, (read, handed)
    assert sorted(read["files"]) == sorted(handed["files"]) and len(read["files"]) == 6
    for name in read["files"]:
        assert Path(tmp_path / "handed" / name).read_bytes() == Path(tmp_path / "read" / name).read_bytes(), name
