"""`sessions --prune KEEP_DAYS`: old finished sessions go after a yes; running or recent ones stay."""

from __future__ import annotations

import io
import subprocess
import time

import pytest

from tests.support.cli import cli_argv, cli_env
from tests.support.prune_sessions import DAY_S, aged_session
from workbench.config.layers import defaults
from workbench.run.runner import JobRunner
from workbench.session.prune import candidates, prune
from workbench.session.store import SessionStore
from workbench.system.atomic import read_json, write_json


def test_only_old_finished_sessions_are_candidates(tmp_path):
    store = SessionStore(tmp_path)
    old, old_empty, recent = aged_session(store, 10), aged_session(store, 9, with_job=False), aged_session(store, 0.5)
    assert sorted(c.sid for c in candidates(store, 7)) == sorted([old, old_empty])
    assert [c.sid for c in candidates(store, 9.5)] == [old]
    assert candidates(store, 30) == []
    assert recent in store.sessions()


def test_a_late_job_keeps_an_old_session(tmp_path):
    store = SessionStore(tmp_path)
    sid = aged_session(store, 10)
    job = store.new_job_dir(sid, "env")
    write_json(job / "job.json", {"jid": job.name, "kind": "env", "created": time.time() - DAY_S})
    write_json(job / "exit.json", {"returncode": 0, "ended_at": time.time() - DAY_S})
    assert candidates(store, 7) == []


def test_prune_asks_and_deletes_only_on_yes(tmp_path):
    store = SessionStore(tmp_path)
    old, recent = aged_session(store, 10), aged_session(store, 1)
    out = io.StringIO()
    assert prune(store, 7, stdin=io.StringIO("n\n"), stdout=out) == 1
    assert "delete these 1 sessions" in out.getvalue() and "nothing deleted" in out.getvalue()
    assert prune(store, 7, stdin=io.StringIO(""), stdout=io.StringIO()) == 1  # no answer is a no
    assert sorted(store.sessions()) == sorted([old, recent])
    out = io.StringIO()
    assert prune(store, 7, stdin=io.StringIO("y\n"), stdout=out) == 0
    assert "deleted 1 sessions" in out.getvalue()
    assert store.sessions() == [recent]


def test_prune_never_deletes_a_session_with_a_running_job(tmp_path, wait_for):
    store = SessionStore(tmp_path)
    sid = aged_session(store, 10)
    cfg = defaults()
    cfg["drill"].update(steps=3000, rate=100)
    job = JobRunner(store).start(sid, "drill", cfg)
    try:
        wait_for(lambda: (job / "pids.json").exists(), 15, what="the job to start")
        spec = read_json(job / "job.json")
        write_json(job / "job.json", dict(spec, created=time.time() - 10 * DAY_S))  # old, yet running
        out = io.StringIO()
        assert prune(store, 7, assume_yes=True, stdout=out) == 0
        assert store.sessions() == [sid]
        assert "nothing to prune" in out.getvalue()
    finally:
        JobRunner.cancel(job)
        JobRunner.wait(job, timeout_s=30)


def test_cli_prune_reads_the_answer_from_stdin(tmp_path):
    store = SessionStore(tmp_path)
    old = aged_session(store, 10)
    argv = cli_argv("sessions", "--sessions", tmp_path, "--prune", "7")
    declined = subprocess.run(argv, input="n\n", capture_output=True, text=True, env=cli_env(), timeout=60)
    assert declined.returncode == 1 and store.sessions() == [old]
    assert "[y/N]" in declined.stdout
    accepted = subprocess.run(argv, input="y\n", capture_output=True, text=True, env=cli_env(), timeout=60)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert store.sessions() == []
    old = aged_session(store, 10)
    forced = subprocess.run(
        argv + ["--yes"], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=cli_env(), timeout=60
    )
    assert forced.returncode == 0 and store.sessions() == []


@pytest.mark.parametrize("keep", [float("nan"), float("inf"), float("-inf"), "7", None, True])
def test_prune_refuses_a_keep_that_is_not_a_finite_number(tmp_path, keep):
    store = SessionStore(tmp_path)
    old, new = aged_session(store, 10), aged_session(store, 0.01)
    out = io.StringIO()
    assert prune(store, keep, assume_yes=True, stdout=out) == 2
    assert "nothing deleted" in out.getvalue()
    assert sorted(store.sessions()) == sorted([old, new])


@pytest.mark.parametrize("created", [float("nan"), float("inf"), float("-inf"), "yesterday", None, [1]])
def test_a_session_whose_dates_are_not_dates_is_kept(tmp_path, created):
    store = SessionStore(tmp_path)
    sid = aged_session(store, 10)
    info = read_json(store.root / sid / "session.json")
    write_json(store.root / sid / "session.json", dict(info, created=created))
    assert candidates(store, 0) == []
    assert prune(store, 0, assume_yes=True, stdout=io.StringIO()) == 0
    assert store.sessions() == [sid]


def test_a_job_date_that_is_not_finite_keeps_the_session(tmp_path):
    store = SessionStore(tmp_path)
    sid = aged_session(store, 10)
    job = store.jobs(sid)[0]
    (job / "exit.json").write_text('{"returncode": 0, "ended_at": NaN}')
    assert candidates(store, 0) == []


def test_a_session_dated_after_the_clock_is_kept_and_named(tmp_path):
    store = SessionStore(tmp_path)
    sid = aged_session(store, -365)  # made while the clock ran a year ahead, or the clock was set back since
    out = io.StringIO()
    assert prune(store, 0, assume_yes=True, stdout=out) == 0
    assert store.sessions() == [sid]
    assert "kept %s" % sid in out.getvalue() and "after this machine's clock" in out.getvalue()
