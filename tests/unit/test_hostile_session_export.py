"""Any file of a recorded session replaced by something hostile: `export` ends with a clear message within a bound.

The sibling of test_hostile_session (sessions, watch, accept); an export costs about 2 s, so this one
draws fewer examples (HOSTILE_EXPORT_EXAMPLES, default 30). A damaged exit.json must reach the
record as `damaged: exit.json …`; every other damage must end in an exit code and, when not 0, a
message naming what went wrong, never an exception or a hang.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import signal
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.hostile import KINDS, damage, exit_json_damaged, restore
from tests.support.sessions import SID, copy_recorded
from workbench.cli.main import main

BOUND_S = 60  # a hang guard, not a timing assertion
EXAMPLES = int(os.environ.get("HOSTILE_EXPORT_EXAMPLES", "30"))
SLOWEST = {"s": 0.0, "case": None}
_n = itertools.count()


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile-export")
    root = base / "sessions"
    copy_recorded(root)
    files = sorted(p.relative_to(root / SID).as_posix() for p in (root / SID).rglob("*") if p.is_file())
    yield root, files, base
    if SLOWEST["case"]:
        print("\nhostile export: slowest case %.2f s (%s)" % (SLOWEST["s"], SLOWEST["case"]))


def _alarm(signum, frame):
    raise TimeoutError("export of the damaged session did not end within %d s" % BOUND_S)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_export_of_a_damaged_session_ends_with_a_clear_message(session, data):
    root, files, base = session
    rel = data.draw(st.sampled_from(files), label="file")
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    path = root / SID / rel
    original = damage(path, kind)
    out_dir = base / ("record-%d" % next(_n))
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BOUND_S)
    started = time.monotonic()
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--sessions", str(root), "export", SID, "--no-screenshots", "--out", str(out_dir)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        restore(path, original)
    took = time.monotonic() - started
    if took > SLOWEST["s"]:
        SLOWEST.update(s=took, case="%s %s" % (kind, rel))
    assert code in (0, 1, 2), (rel, kind, code)
    if code != 0:
        assert err.getvalue().startswith("error: "), (rel, kind, err.getvalue())
    if exit_json_damaged(rel, kind):
        jid = rel.split("/")[1]
        report = (out_dir / "report.md").read_text(encoding="utf-8")
        assert code == 0 and ("%s | " % jid) in report and "damaged: exit.json" in report, (rel, kind)
