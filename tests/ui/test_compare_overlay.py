"""The compare overlay on the Training screen, from two recorded real runs (differing only in train.lr)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from screens.app import WorkbenchApp
from screens.compare_overlay import CompareOverlay, RunPicker, curve_chart
from tests.support.pilot import until
from tests.support.recorded import wait_ingested
from tests.support.sessions import set_interpreter
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "compare"
SID = "20261201-141656-3875"


def _app(tmp_path) -> WorkbenchApp:
    root = tmp_path / "sessions"
    shutil.copytree(str(FIXTURE / SID), str(root / SID))
    set_interpreter(root / SID)  # the recording machine's interpreter path is not this one
    return WorkbenchApp(SessionStore(root), SID, defaults())


async def open_overlay(pilot, app) -> CompareOverlay:
    """Training screen, `c`, pick the other run, wait until the comparison is drawn."""
    await pilot.press("3")
    await wait_ingested(pilot, app)
    await pilot.press("c")
    await until(pilot, lambda: isinstance(app.screen, RunPicker), what="the run picker")
    await pilot.press("enter")
    await until(
        pilot, lambda: isinstance(app.screen, CompareOverlay) and app.screen.result is not None, what="the comparison"
    )
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()  # no delay: until the overlay has processed its pending messages (drawn)
    return app.screen


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
def test_snapshot(snap_compare, tmp_path, size):
    app = _app(tmp_path)

    async def show(pilot):
        await open_overlay(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=show)


async def test_overlay_compares_the_followed_run_with_the_picked_one(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        overlay = await open_overlay(pilot, app)
        result = overlay.result
        assert result["a"]["jid"] == "train-002" and result["b"]["jid"] == "train-001"  # followed = A
        assert [d["key"] for d in result["config_diff"]] == ["train.lr"]
        assert result["verdict"]["status"] == "observed-fail"  # the documented defaults, as in the CLI
        body = overlay.query_one("#cmp-body")
        await pilot.press("pagedown")  # at 80x24 the sections scroll under the fixed header and chart
        await until(pilot, lambda: body.scroll_y > 0, what="the sections to scroll")
        await pilot.press("w")
        await until(pilot, lambda: overlay.result["a"]["jid"] == "train-001", what="swapped runs")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CompareOverlay), what="the overlay to close")


def test_curve_chart_marks_both_series_and_their_overlap():
    text = curve_chart(
        {"a": {"x": [0.0, 1.0], "y": [1.0, 0.0]}, "b": {"x": [0.0, 1.0], "y": [1.0, 0.5]}}, width=30, rows=5, plain=True
    ).plain
    assert "#" in text and "a" in text.split("\n")[-2] and "b" in text
    assert "epoch 0" in text and text.splitlines()[0].strip().startswith("1.000")


def _with_imported_record(tmp_path) -> Path:
    """The compare fixture session, plus the recorded board session exported and imported beside it."""
    from tests.support.sessions import copy_recorded
    from workbench.record.importing import import_record
    from workbench.record.write import export_session

    source = tmp_path / "board"
    board_sid = copy_recorded(source)
    out = export_session(SessionStore(source), board_sid, None, screenshots=None)
    import_record(tmp_path / "sessions", out / ("%s.tar.gz" % board_sid))
    return tmp_path / "sessions"


async def test_an_imported_run_can_be_picked_and_its_session_is_marked(tmp_path):
    from screens.widgets.status_bar import StatusBar
    from tests.support.sessions import SID as BOARD_SID

    app = _app(tmp_path)
    _with_imported_record(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, RunPicker), what="the run picker")
        labels = [label for _, label in app.screen.candidates]
        assert labels[0].startswith("%s/train-001" % SID) and "(this session)" in labels[0]
        assert labels[1].startswith("%s/train-001" % BOARD_SID) and "imported from devboard-01" in labels[1]
        await pilot.press("down", "enter")
        await until(
            pilot,
            lambda: isinstance(app.screen, CompareOverlay) and app.screen.result is not None,
            what="the comparison",
        )
        assert app.screen.result["b"]["imported"] and app.screen.result["b"]["session"] == BOARD_SID

    board = WorkbenchApp(SessionStore(tmp_path / "sessions"), BOARD_SID, defaults())
    async with board.run_test(size=(120, 30)) as pilot:
        await pilot.press("6")
        await until(
            pilot,
            lambda: "imported from devboard-01" in str(board.screen.query_one(StatusBar)._text),
            what="the imported mark in the status bar",
        )
