"""Any file of a recorded session replaced by something hostile: the TUI, attached to it, paints its Session screen.

The sibling of test_hostile_session for the app: each example damages one file of a fresh copy of
the recorded session, opens the workbench on it (as `attach SID` does) and switches to the Session
screen; the app must stay up and draw every job with a status, a damaged exit.json as `damaged: …`,
within a bound. An app start costs about a second, so fewer examples (HOSTILE_TUI_EXAMPLES, default 20).
Also: an imported record that carries a cut exit.json opens and shows that job as damaged.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.widgets import DataTable

from screens.app import WorkbenchApp
from tests.support.hostile import KINDS, damage, exit_json_damaged
from tests.support.pilot import drew_its_model, until
from tests.support.sessions import SID, copy_recorded
from workbench.cli.main import main
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

BOUND_S = 60  # a hang guard, not a timing assertion
EXAMPLES = int(os.environ.get("HOSTILE_TUI_EXAMPLES", "20"))
SLOWEST = {"s": 0.0, "case": None}
_n = itertools.count()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile-tui")
    copy_recorded(base / "pristine")
    files = sorted(p.relative_to(base / "pristine" / SID).as_posix() for p in (base / "pristine" / SID).rglob("*"))
    yield base, [f for f in files if (base / "pristine" / SID / f).is_file()]
    if SLOWEST["case"]:
        print("\nhostile TUI: slowest case %.2f s (%s)" % (SLOWEST["s"], SLOWEST["case"]))


def _alarm(signum, frame):
    raise TimeoutError("the app on the damaged session did not paint within %d s" % BOUND_S)


def _labels(app) -> dict:
    table = app.screen.query_one("#jobs", DataTable)
    return {str(key.value): str(table.get_row(key)[1]) for key in table.rows}


async def _paint_session_screen(root: Path, sid: str) -> dict:
    """Open the app on the session, switch to its Session screen, wait for a full paint; {jid: status cell}."""
    app = WorkbenchApp(SessionStore(root), sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await app.switch_mode("session")
        expected = {p.name for p in (root / sid / "jobs").iterdir() if (p / "job.json").is_file()}

        def painted() -> bool:
            screen = app.screen
            if getattr(screen, "view_name", None) != "session" or not drew_its_model(screen):
                return False
            return expected <= set(_labels(app))

        await until(pilot, painted, BOUND_S - 5, what="the Session screen to paint every job")
        labels = _labels(app)
        assert app.is_running
    return labels


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_tui_paints_a_damaged_session(pristine, data):
    base, files = pristine
    rel = data.draw(st.sampled_from(files), label="file")
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    root = base / ("sessions-%d" % next(_n))
    shutil.copytree(str(base / "pristine"), str(root))
    damage(root / SID / rel, kind)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BOUND_S)
    started = time.monotonic()
    try:
        labels = asyncio.run(_paint_session_screen(root, SID))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        shutil.rmtree(str(root), ignore_errors=True)
    took = time.monotonic() - started
    if took > SLOWEST["s"]:
        SLOWEST.update(s=took, case="%s %s" % (kind, rel))
    assert all(label.strip() for label in labels.values()), (rel, kind, labels)
    if exit_json_damaged(rel, kind):
        jid = rel.split("/")[1]
        assert labels[jid].startswith("damaged: exit.json"), (rel, kind, labels[jid])


def test_attach_to_an_imported_record_that_carries_a_cut_exit_json(tmp_path):
    """Exported with a cut exit.json, imported elsewhere: the app opens it and names the damage."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    copy_recorded(mine)
    cut = mine / SID / "jobs" / "train-001" / "exit.json"
    cut.write_bytes(cut.read_bytes()[:20])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["--sessions", str(mine), "export", SID, "--no-screenshots", "--out", str(tmp_path / "rec")]) == 0
        assert main(["--sessions", str(theirs), "import", str(tmp_path / "rec" / ("%s.tar.gz" % SID))]) == 0
    imported = (theirs / SID / "jobs" / "train-001" / "exit.json").read_bytes()
    assert imported == cut.read_bytes()
    labels = asyncio.run(_paint_session_screen(theirs, SID))
    assert labels["train-001"].startswith("damaged: exit.json"), labels
