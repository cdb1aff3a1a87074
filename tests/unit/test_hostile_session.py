"""Any file of a recorded session replaced by something hostile: every reader ends with a clear message.

Each example replaces one file of the recorded session by an empty file, cut JSON, a FIFO, a
directory, a symbolic link to /dev/zero or a huge line, then runs `sessions`, `watch` and `accept`
(and the status of every job); each must return an exit code, never raise, hang or read forever.
An alarm turns a hang into a failure instead of a stuck run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.hostile import KINDS, damage, exit_json_damaged, restore
from tests.support.sessions import SID, copy_recorded
from workbench.cli.main import main
from workbench.session.store import SessionStore, job_status

BOUND_S = 30  # a hang guard, not a timing assertion: a reader that blocks fails here instead of stalling CI
EXAMPLES = int(os.environ.get("HOSTILE_SESSION_EXAMPLES", "1000"))
SLOWEST = {"s": 0.0, "case": None}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile") / "sessions"
    copy_recorded(root)
    files = sorted(p.relative_to(root / SID).as_posix() for p in (root / SID).rglob("*") if p.is_file())
    yield root, files
    if SLOWEST["case"]:  # for the closing note: how long the slowest example took (pytest -s shows it)
        print("\nhostile session: slowest case %.2f s (%s)" % (SLOWEST["s"], SLOWEST["case"]))


def _alarm(signum, frame):
    raise TimeoutError("a reader of the damaged session did not end within %d s" % BOUND_S)


def _cli(*argv: str) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_reader_ends_with_a_clear_message(session, data):
    root, files = session
    rel = data.draw(st.sampled_from(files), label="file")
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    path = root / SID / rel
    original = damage(path, kind)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BOUND_S)
    started = time.monotonic()
    try:
        code, out, _ = _cli("--sessions", str(root), "sessions", "--json")
        assert code == 0
        listed = json.loads(out)
        jobs = {j["jid"]: j for row in listed for j in row["jobs"]}
        store = SessionStore(root)
        for job in store.jobs(SID):
            status = job_status(job)
            assert status.state and (status.state == "ok" or status.reason), (rel, kind, status)
        if exit_json_damaged(rel, kind):
            jid = rel.split("/")[1]
            assert jobs[jid]["status"] == "damaged" and "exit.json" in jobs[jid]["reason"], jobs[jid]
        if rel.endswith("/events.jsonl") and kind in ("fifo", "directory", "symlink-to-dev-zero"):
            jid = rel.split("/")[1]
            assert jobs[jid]["status"] == "damaged" and "events.jsonl" in jobs[jid]["reason"], jobs[jid]
        jid = rel.split("/")[1] if rel.startswith("jobs/") else "train-001"
        code, _, _ = _cli("--sessions", str(root), "watch", "%s/%s" % (SID, jid))
        assert code in (0, 1, 2)
        code, _, _ = _cli("--sessions", str(root), "accept", SID)
        assert code in (0, 1, 2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        restore(path, original)
    took = time.monotonic() - started
    if took > SLOWEST["s"]:
        SLOWEST.update(s=took, case="%s %s" % (kind, rel))
