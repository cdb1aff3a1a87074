"""The Training screen's candidate keys: f freezes the shown run after saying what that does; t asks before a second
use of the session's test set, saying what it costs."""

from __future__ import annotations

from screens.app import WorkbenchApp
from screens.dialogs import ConfirmScreen
from tests.support.pilot import until
from tests.support.recorded import wait_ingested
from tests.support.screen_states import state_config, state_session
from workbench.session import candidate
from workbench.session.store import SessionStore
from workbench.system.atomic import sha256_file, write_json


def _done(root):
    sid = state_session(root, "done")  # train-001 ended ok and was evaluated once on the test set (test-001)
    return WorkbenchApp(SessionStore(root), sid, state_config()), root / sid


def _question(app) -> str:
    return str(app.screen.query_one("#question").content)


async def test_a_second_test_evaluation_is_asked_first_saying_what_it_costs(tmp_path):
    app, session = _done(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        question = _question(app)
        assert "The test set of this session is spent: test-001 (train-001" in question
        assert "makes test-evaluations observed-fail" in question and "stays the reported one" in question
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert not (session / "jobs" / "test-002").exists()


async def test_f_freezes_the_shown_run_after_saying_what_it_does(tmp_path):
    app, session = _done(tmp_path)
    art = session / "jobs" / "train-001" / "artifacts"  # the best checkpoint a finished run leaves
    art.mkdir(exist_ok=True)
    (art / "best.ckpt").write_bytes(b"weights of train-001")
    write_json(
        art / "best.json", {"epoch": 1, "checkpoint": {"file": "best.ckpt", "sha256": sha256_file(art / "best.ckpt")}}
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        assert "Freeze train-001's best checkpoint as this session's candidate?" in _question(app)
        assert "the acceptance verdict is about it only" in _question(app)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert candidate.current(session) is None
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question again")
        await pilot.press("y")
        await until(pilot, lambda: candidate.current(session) is not None, what="the freeze")
        assert candidate.current(session).run == "train-001"
