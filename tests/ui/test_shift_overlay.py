"""The new-distribution overlay on the Training screen (`n`), from a recorded real shift job."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from screens.app import WorkbenchApp
from screens.shift_overlay import ShiftOverlay
from screens.widgets.pixels import HalfBlockImage
from tests.support.pilot import until
from tests.support.sessions import set_interpreter
from workbench.analysis import shift as shiftmod
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "shift"
SID = next(p.name for p in FIXTURE.iterdir() if (p / "session.json").is_file())  # not a __pycache__ beside it


def _app(tmp_path, with_shift: bool = True) -> WorkbenchApp:
    root = tmp_path / "sessions"
    shutil.copytree(str(FIXTURE / SID), str(root / SID))
    set_interpreter(root / SID)  # the recording machine's interpreter path is not this one
    if not with_shift:
        for job in (root / SID / "jobs").glob("shift-*"):
            shutil.rmtree(str(job))
    return WorkbenchApp(SessionStore(root), SID, defaults())


async def open_overlay(pilot, app, drawn: bool = True) -> ShiftOverlay:
    """Training screen, `n`, wait until the newest shift job's result is drawn."""
    await pilot.press("3")
    await pilot.press("n")
    await until(pilot, lambda: isinstance(app.screen, ShiftOverlay), what="the overlay")
    if drawn:
        await until(pilot, lambda: bool(app.views["shift"].summary), what="the shift result to be read")
    await until(pilot, lambda: app.screen.drawn == app.views["shift"].version, what="the overlay to draw it")
    await pilot.pause()
    return app.screen


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
def test_snapshot(snap_compare, tmp_path, size):
    app = _app(tmp_path)

    async def show(pilot):
        await open_overlay(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=show)


async def test_the_overlay_says_the_scope_and_shows_each_sets_failures(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        overlay = await open_overlay(pilot, app)
        result = app.views["shift"].summary
        scope = shiftmod.scope(result)
        shown = str(overlay.query_one("#sh-scope").render())
        for line in scope["breaks"] + scope["holds"]:
            assert line in shown
        names = shiftmod.heat_map(result)[0]
        first = str(overlay.query_one("#sh-set").render())
        assert "%s: most confident failures (set 1/%d" % (names[0], len(names)) in first
        assert (
            overlay.query_one("#sh-img-0", HalfBlockImage).render_line(3).text.strip()
        )  # a thumbnail from failures.npz
        await pilot.press("right")
        await until(
            pilot,
            lambda: "%s: most confident failures (set 2/" % names[1] in str(overlay.query_one("#sh-set").render()),
        )
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ShiftOverlay), what="the overlay to close")


async def test_without_a_shift_job_the_overlay_says_how_to_get_one(tmp_path):
    app = _app(tmp_path, with_shift=False)
    async with app.run_test(size=(80, 24)) as pilot:
        overlay = await open_overlay(pilot, app, drawn=False)
        head = str(overlay.query_one("#sh-head").render())
        assert "No new-distribution evaluation in this session yet. Press r" in head
        assert "Holds" not in str(overlay.query_one("#sh-scope").render())
