"""The compare overlay on the Training screen, from two recorded real runs (differing only in train.lr)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from screens.app import WorkbenchApp
from screens.compare_overlay import CompareOverlay, RunPicker, curve_chart
from tests.ui.recorded import until, wait_ingested
from workbench.config import defaults
from workbench.session import SessionStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "compare"
SID = "20261201-141656-3875"


def _app(tmp_path) -> WorkbenchApp:
    root = tmp_path / "sessions"
    shutil.copytree(str(FIXTURE / SID), str(root / SID))
    return WorkbenchApp(SessionStore(root), SID, defaults())


async def open_overlay(pilot, app) -> CompareOverlay:
    """Training screen, `c`, pick the other run, wait until the comparison is drawn."""
    await pilot.press("3")
    await wait_ingested(pilot, app)
    await pilot.press("c")
    await until(pilot, lambda: isinstance(app.screen, RunPicker), what="the run picker")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, CompareOverlay) and app.screen.result is not None,
                what="the comparison")
    await pilot.pause(0.2)
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
        await pilot.press("w")
        await until(pilot, lambda: overlay.result["a"]["jid"] == "train-001", what="swapped runs")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CompareOverlay), what="the overlay to close")


def test_curve_chart_marks_both_series_and_their_overlap():
    text = curve_chart({"a": {"x": [0.0, 1.0], "y": [1.0, 0.0]}, "b": {"x": [0.0, 1.0], "y": [1.0, 0.5]}},
                       width=30, rows=5, plain=True).plain
    assert "#" in text and "a" in text.split("\n")[-2] and "b" in text
    assert "epoch 0" in text and text.splitlines()[0].strip().startswith("1.000")
