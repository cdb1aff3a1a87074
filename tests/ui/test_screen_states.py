"""Every screen at 80×24 and 120×36 in its idle, running, done and failed states, from recorded runs.

One recorded session per state holds a job of every kind, so each state is built once and every screen
is drawn from it. The done session also holds a test-set evaluation (the Training screen shows its
result) and the Export screen shows its default source (the newest training that ended ok).
"""

from __future__ import annotations

import pytest

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.screen_states import KEYS, SCREENS, SID, FrozenClock, state_config, state_session
from workbench.session.store import SessionStore


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """One recorded session per state (each under its own root, all with the same id), shared by every screen."""
    roots = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
        for state in ("idle", "running", "done", "failed"):
            roots[state] = tmp_path_factory.mktemp(state)
            state_session(roots[state], state)
    return roots


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
@pytest.mark.parametrize("state", ["idle", "running", "done", "failed"])
@pytest.mark.parametrize("screen", SCREENS)
def test_snapshot(snap_compare, sessions, monkeypatch, screen, state, size):
    monkeypatch.setattr("workbench.session.store.time", FrozenClock)
    # The state's root is the default one, so the printed commands carry no --sessions naming a tmp folder.
    monkeypatch.setenv("MS_WORKBENCH_SESSIONS", str(sessions[state]))
    app = WorkbenchApp(SessionStore(sessions[state]), SID, state_config())

    async def show(pilot):
        await settled(pilot)
        await pilot.press(KEYS[screen])
        await until(pilot, lambda: app.current_mode == screen, what="the %s screen" % screen)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=show)
