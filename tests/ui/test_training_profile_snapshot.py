"""The Training screen after a recorded profiled run: the top-operator table and the evidence checks."""

from __future__ import annotations

import pytest
from rich.console import Console

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, wait_ingested
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

SID = "20240101-000000-7a7a"
EVENTS = FIXTURES / "train_profile.jsonl"  # recorded by record_train_profile_events.py


def _app(tmp_path, monkeypatch) -> WorkbenchApp:
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    sid = make_recorded_session(tmp_path, [("train-001", "train", EVENTS, OK_EXIT)])
    return WorkbenchApp(SessionStore(tmp_path), sid, defaults())


async def _show_profile(pilot) -> None:
    """Training mode, every event read, the result drawn, the profile table scrolled into view."""
    await pilot.press("3")
    await wait_ingested(pilot, pilot.app)
    view = pilot.app.views["training"]
    await until(
        pilot, lambda: view.result.get("profile") and pilot.app.screen.drawn_version == view.version, timeout_s=30
    )
    pilot.app.screen.query_one("#profile").scroll_visible(animate=False, top=True)
    await settled(pilot)


def _text(widget) -> str:
    console = Console(width=max(widget.size.width, 40), color_system=None)
    with console.capture() as captured:
        console.print(widget.content)
    return captured.get()


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
def test_snapshot(snap_compare, tmp_path, monkeypatch, size):
    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=size, run_before=_show_profile)


async def test_profile_table_lists_the_recorded_top_operators(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch)
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_profile(pilot)
        profile = app.views["training"].result["profile"]
        text = _text(app.screen.query_one("#profile"))
        assert "profiled window: 20 steps" in text
        for op in profile["top_ops"][:10]:
            assert op["name"][:40] in text and op["type"] in text
        assert "%.2f" % profile["top_ops"][0]["total_ms"] in text
        # The steady sparkline leaves the profiled steps out, like compile and warm-up steps.
        assert app.views["training"].profiled_seen == 20
