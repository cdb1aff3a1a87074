"""Only the visible screen is built before the first paint; the others are built when first shown."""

from __future__ import annotations

from typing import List

from screens.app import WorkbenchApp
from tests.ui.conftest import settled
from workbench.config import defaults
from workbench.session import SessionStore

BUILT: List[str] = []


def _counted(mode: str, make):
    def build():
        BUILT.append(mode)
        return make()
    return build


class CountingApp(WorkbenchApp):
    """The real app whose mode constructors note when they run."""

    MODES = {mode: _counted(mode, make) for mode, make in WorkbenchApp.MODES.items()}


async def test_first_paint_builds_only_the_visible_screen_and_a_key_builds_the_next(tmp_path):
    del BUILT[:]
    app = CountingApp(SessionStore(tmp_path), None, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await settled(pilot)
        assert BUILT == [app.current_mode] == [WorkbenchApp.DEFAULT_MODE]
        await pilot.press("3")
        await settled(pilot)
        assert BUILT == [WorkbenchApp.DEFAULT_MODE, "training"]
        await pilot.press("1")
        await settled(pilot)
        assert BUILT == [WorkbenchApp.DEFAULT_MODE, "training"]  # built once, kept
