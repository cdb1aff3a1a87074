"""The backlog folded in a child process: the UI follows on where it ended with what it would have read itself,
and a child that fails, is killed or sends damage leaves the UI to read the files itself."""

import io
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.scale_sessions import SID, build_session
from tests.support.cli import cli_env
from tests.support.fold_state import record_state
from tests.support.waiting import poll_until
from workbench.fold.backlog import Backlog, decode, fold_backlog
from workbench.fold.handoff import FoldedSession
from workbench.fold.tracker import JobTracker
from workbench.session.store import SessionStore
from workbench.views.session import RECENT_EVENTS, SessionView, listed

DAMAGED = "damaged line "
SETTINGS = dict(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read_here(store, sid):
    """What the UI's tracker reads of the session by itself (small slices), and its Session view."""
    tracker = JobTracker(store, sid, slice_bytes=4096)
    view = SessionView(tracker.model)
    _drain(tracker, view)
    return tracker, view


def _drain(tracker, view):
    for _ in range(10_000):
        batch = tracker.poll()
        for job, events in batch.events:
            view.ingest(job, events)
        if not tracker.behind() and not batch.events:
            return
    raise AssertionError("never caught up")


def _followed_on(store, sid, folded):
    """The UI taking `folded`, then following on in small slices."""
    tracker = JobTracker(store, sid, slice_bytes=4096)
    view = SessionView(tracker.model)
    tracker.discover()
    batch, left = tracker.take(folded)
    for job, events in batch.events:
        view.ingest(job, events)
    _drain(tracker, view)
    return tracker, view, left


def _same(a, b):
    (ta, va), (tb, vb) = a, b
    assert sorted(ta.jobs) == sorted(tb.jobs)
    for jid in ta.jobs:
        assert record_state(ta.jobs[jid].record) == record_state(tb.jobs[jid].record)
        assert ta.jobs[jid].record.epochs == tb.jobs[jid].record.epochs
        assert ta.jobs[jid].events == tb.jobs[jid].events
        assert ta.jobs[jid].reader.offset == tb.jobs[jid].reader.offset
        assert va.rows[jid].events == vb.rows[jid].events
        # A damaged line's note follows the batch that held it (batches differ: slices here, one fold there)
        a, b = list(va.rows[jid].lines), list(vb.rows[jid].lines)
        fa, fb = [x for x in a if not x.startswith(DAMAGED)], [x for x in b if not x.startswith(DAMAGED)]
        n = min(len(fa), len(fb))
        assert fa[len(fa) - n :] == fb[len(fb) - n :]
        assert sorted(x for x in a if x.startswith(DAMAGED)) == sorted(x for x in b if x.startswith(DAMAGED))


def _damaged_session(tmp_path, mix):
    events = build_session(tmp_path, mix, 3000)
    body = events.read_bytes().split(b"\n")
    body.insert(len(body) // 2, b'{"v":1,"seq":"x","type":"log"}')  # a wrong type: listed, never passed on
    body.insert(len(body) // 3, b"not json at all")
    events.write_bytes(b"\n".join(body))
    return events


@settings(**SETTINGS)
@given(cut=st.floats(0.0, 1.0), mix=st.sampled_from(["train", "train-per-line"]))
def test_a_fold_cut_anywhere_while_the_job_writes_is_followed_on_to_what_the_ui_reads_itself(
    tmp_path_factory, cut, mix
):
    root = tmp_path_factory.mktemp("s")
    events = _damaged_session(root, mix)
    whole = events.read_bytes()
    at = int(len(whole) * cut)
    events.write_bytes(whole[:at])  # the job has written this much (maybe half a line) when the child reads
    store = SessionStore(root)
    folded = fold_backlog(store, SID, listed, RECENT_EVENTS)
    assert whole[: folded.offsets["train-001"]].endswith(b"\n") or folded.offsets["train-001"] == 0
    events.write_bytes(whole)  # the rest arrives before the UI follows on
    tracker, view, left = _followed_on(store, SID, decode(_piped(folded)))
    assert left == []
    _same((tracker, view), _read_here(store, SID))


def _piped(folded):
    buf = io.BytesIO()
    folded.dump(buf)
    return buf.getvalue()


def test_the_session_view_lists_the_same_lines_from_the_listed_events_as_from_all(tmp_path):
    events = build_session(tmp_path, "train-per-line", 30_000)  # 400 listed lines lie far back from the end
    store = SessionStore(tmp_path)
    folded = fold_backlog(store, SID, listed, RECENT_EVENTS)
    assert len(folded.tails["train-001"]) == RECENT_EVENTS
    tracker, view, _ = _followed_on(store, SID, folded)
    _same((tracker, view), _read_here(store, SID))
    assert len(view.rows["train-001"].lines) == RECENT_EVENTS and events.stat().st_size > 4 * 256 * 1024


def test_an_offset_that_ends_no_line_is_not_followed_on_from(tmp_path):
    events = build_session(tmp_path, "train", 300)
    store = SessionStore(tmp_path)
    folded = fold_backlog(store, SID, listed, RECENT_EVENTS)
    folded.offsets["train-001"] -= 3  # inside the last line (the file was rewritten since, say)
    tracker, view, left = _followed_on(store, SID, folded)
    assert left == ["train-001: offset %d does not end a line of its events file" % folded.offsets["train-001"]]
    _same((tracker, view), _read_here(store, SID))  # read here from the start instead
    assert tracker.jobs["train-001"].reader.offset == events.stat().st_size


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_cut_or_damaged_fold_is_refused_with_a_reason_never_taken_or_raised(data):
    good = _piped(FoldedSession(records={}, tails={}, offsets={}))
    record_pickle = _good_bytes()
    raw = data.draw(st.sampled_from([good, record_pickle]))
    cut = data.draw(st.integers(0, len(raw) - 1))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)), max_size=3))
    damaged = bytearray(raw[:cut] if not flips else raw)
    for at, value in flips:
        if at < len(damaged):
            damaged[at] = value
    try:
        folded = decode(bytes(damaged))
    except ValueError as exc:
        assert str(exc)
        return
    assert isinstance(folded, FoldedSession)  # a flip that left a valid fold: every job checked
    for jid, rec in folded.records.items():
        assert rec.jid == jid and type(folded.offsets[jid]) is int and folded.offsets[jid] >= 0


_GOOD = []


def _good_bytes():
    if not _GOOD:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            build_session(Path(tmp), "train", 200)
            _GOOD.append(_piped(fold_backlog(SessionStore(Path(tmp)), SID, listed, RECENT_EVENTS)))
    return _GOOD[0]


def test_wrong_shapes_are_refused_naming_the_job():
    for payload, said in (
        ({"records": {"a": "no record"}, "tails": {}, "offsets": {"a": 0}}, "'a': not its record"),
        ({"records": 5, "tails": {}}, "not a fold"),
    ):
        try:
            decode(pickle.dumps(payload))
        except ValueError as exc:
            assert said in str(exc)
        else:
            raise AssertionError("taken: %r" % payload)


def test_a_child_folds_the_session_and_the_ui_takes_it(tmp_path):
    events = build_session(tmp_path, "train", 3000)
    store = SessionStore(tmp_path)
    backlog = Backlog.start(store, SID, listed, RECENT_EVENTS)
    try:
        folded = backlog.take()
    finally:
        backlog.close()
    assert folded is not None and backlog.problem is None
    assert backlog.read_bytes() == events.stat().st_size  # what the status bar showed as read meanwhile
    tracker, view, left = _followed_on(store, SID, folded)
    assert left == []
    _same((tracker, view), _read_here(store, SID))


def _killed():
    os.kill(os.getpid(), signal.SIGKILL)


def _fails():
    raise RuntimeError("no fold")


def _garbage():
    return _Garbage()


class _Garbage:
    def dump(self, fh):
        fh.write(b"\x80\x05 not a pickle")


def test_a_child_killed_failing_or_sending_garbage_is_said_and_sends_nothing_taken(tmp_path):
    build_session(tmp_path, "train", 300)
    store = SessionStore(tmp_path)
    for work, said in ((_killed, "killed by signal 9"), (_fails, "exit 1"), (_garbage, "not a fold")):
        backlog = Backlog.start(store, SID, listed, RECENT_EVENTS, work=work)
        try:
            assert backlog.take() is None
        finally:
            backlog.close()
        assert "sent no fold" in backlog.problem and said in backlog.problem, backlog.problem


def test_a_child_still_folding_when_the_ui_ends_is_stopped_and_reaped(tmp_path):
    build_session(tmp_path, "train", 300)
    store = SessionStore(tmp_path)
    backlog = Backlog.start(store, SID, listed, RECENT_EVENTS, work=lambda: signal.pause())
    pid = backlog.pid
    backlog.close()
    assert backlog.pid is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("child %d still there" % pid)


def test_while_a_child_folds_the_status_counts_what_it_has_read(tmp_path):
    events = build_session(tmp_path, "train", 300)
    tracker = JobTracker(SessionStore(tmp_path), SID)
    tracker.discover()
    size = events.stat().st_size
    assert tracker.reading() == 0.0
    tracker.read_elsewhere = lambda: size // 4
    assert tracker.reading() == (size // 4) / size
    tracker.read_elsewhere = None  # handed over: the readers say it from here
    assert tracker.reading() == 0.0


_UI_STAND_IN = """
import os, signal, sys
from workbench.fold.backlog import Backlog
from workbench.session.store import SessionStore
from workbench.views.session import RECENT_EVENTS, listed
backlog = Backlog.start(SessionStore(sys.argv[1]), sys.argv[2], listed, RECENT_EVENTS, work=lambda: signal.pause())
print(backlog.pid, flush=True)
signal.pause()  # until the test kills it
"""


def _running(pid):
    """False once the process is gone or a zombie (dead, not yet reaped by whoever adopted it)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_child_still_folding_when_the_ui_is_killed_dies_with_it(tmp_path):
    build_session(tmp_path, "train", 300)
    ui = subprocess.Popen(
        [sys.executable, "-c", _UI_STAND_IN, str(tmp_path), SID],
        stdout=subprocess.PIPE,
        env=cli_env(),
    )
    child = int(ui.stdout.readline())
    assert _running(child)
    ui.kill()  # SIGKILL: no handler of the UI's runs
    ui.wait()
    ui.stdout.close()
    if not poll_until(lambda: not _running(child), 30.0):
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the backlog child %d outlived its killed UI" % child)
