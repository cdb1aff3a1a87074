"""The newest session (and job) is the one made last, whatever the clock said; prune does not guess past a wrong clock."""

from __future__ import annotations

import io
import time

from tests.support.cli import cli_argv, cli_env
from workbench.session.prune import prune
from workbench.session.store import SessionStore
from workbench.system import monotonic
from workbench.system.atomic import read_json, write_json

DAY_S = 86400.0
YEAR_S = 365 * DAY_S


def test_a_session_made_while_the_clock_was_behind_is_still_the_newest(tmp_path):
    now = time.time()
    first = SessionStore(tmp_path, clock=lambda: now).create()
    behind = SessionStore(tmp_path, clock=lambda: now - YEAR_S).create()  # the clock a year behind
    store = SessionStore(tmp_path)
    assert store.sessions() == [first, behind]
    assert store.named_or_newest(None) == behind


def test_a_job_made_while_the_clock_was_behind_is_still_the_newest(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    first = store.new_job_dir(sid, "drill")
    write_json(first / "job.json", {"jid": first.name, "seq": store.next_job_seq(sid), "created": time.time()})
    second = store.new_job_dir(sid, "env")  # numbered as the runner numbers it, then dated by a clock a year behind
    write_json(
        second / "job.json", {"jid": second.name, "seq": store.next_job_seq(sid), "created": time.time() - YEAR_S}
    )
    assert store.jobs(sid) == [first, second]
    assert [read_json(j / "job.json")["seq"] for j in (first, second)] == [1, 2]


def test_watch_and_export_without_an_id_take_the_session_made_last(tmp_path):
    import subprocess

    now = time.time()
    SessionStore(tmp_path, clock=lambda: now).create()
    behind = SessionStore(tmp_path, clock=lambda: now - YEAR_S).create()
    proc = subprocess.run(
        cli_argv("watch", "--sessions", tmp_path), capture_output=True, text=True, env=cli_env(), timeout=60
    )
    assert proc.returncode == 2 and "session %s has no jobs" % behind in proc.stderr, proc.stderr


def test_sessions_this_root_did_not_number_come_first_by_date(tmp_path):
    store = SessionStore(tmp_path)
    old, later = store.create(), store.create()
    info = read_json(tmp_path / old / "session.json")
    del info["seq"]  # as an older workbench made it
    write_json(tmp_path / old / "session.json", dict(info, created=time.time() + DAY_S))
    imported = store.create()
    (tmp_path / imported / "imported.json").write_text("{}")  # an import keeps the other root's numbers: not ours
    assert store.sessions() == [imported, old, later]  # the two not numbered here by their dates
    assert store.named_or_newest(None) == later


def test_prune_keeps_a_session_made_a_minute_ago_with_the_clock_a_year_behind(tmp_path):
    behind = SessionStore(tmp_path, clock=lambda: time.time() - YEAR_S).create()
    out = io.StringIO()
    assert prune(SessionStore(tmp_path), 30, assume_yes=True, stdout=out) == 0
    assert (tmp_path / behind / "session.json").is_file(), out.getvalue()
    assert "kept %s: its dates say" % behind in out.getvalue() and "monotonic clock" in out.getvalue()


def test_prune_keeps_a_session_dated_before_one_made_earlier_when_there_is_no_monotonic_stamp(tmp_path):
    """Stamps of another boot do not compare; the creation order still tells the clock was behind."""
    now = time.time()
    first = SessionStore(tmp_path, clock=lambda: now - DAY_S).create()
    behind = SessionStore(tmp_path, clock=lambda: now - YEAR_S).create()
    for sid in (first, behind):
        info = read_json(tmp_path / sid / "session.json")
        write_json(tmp_path / sid / "session.json", dict(info, created_monotonic={"boot": "another", "t": 1.0}))
    out = io.StringIO()
    assert prune(SessionStore(tmp_path), 30, assume_yes=True, stdout=out) == 0
    assert (tmp_path / behind).is_dir(), out.getvalue()
    assert "kept %s: it was made after a session dated" % behind in out.getvalue(), out.getvalue()


def test_a_truly_old_session_is_still_pruned(tmp_path):
    """The doubt needs evidence: dates, stamps and order that agree on an old session let it go."""
    store = SessionStore(tmp_path)
    sid = store.create()
    stamp = monotonic.stamp()
    stamp["t"] -= 40 * DAY_S
    info = read_json(tmp_path / sid / "session.json")
    write_json(tmp_path / sid / "session.json", dict(info, created=time.time() - 40 * DAY_S, created_monotonic=stamp))
    out = io.StringIO()
    assert prune(store, 30, assume_yes=True, stdout=out) == 0
    assert not (tmp_path / sid).exists() and "deleted 1 sessions" in out.getvalue(), out.getvalue()
