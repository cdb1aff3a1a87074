"""Only the visible screen is built before the first paint (the default, or where the session opens); others when first shown."""

from __future__ import annotations

import json
import os
import time
from typing import List

from screens.app import WorkbenchApp
from tests.support.pilot import settled
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

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


async def test_attaching_to_a_running_training_job_builds_only_the_training_screen(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    job_dir = tmp_path / sid / "jobs" / "train-001"
    job_dir.mkdir(parents=True)
    (job_dir / "job.json").write_text(json.dumps({"jid": "train-001", "kind": "train", "created": time.time()}))
    (job_dir / "pids.json").write_text(json.dumps({"supervisor": os.getpid()}))  # alive: this process
    (job_dir / "events.jsonl").write_bytes(b"")
    del BUILT[:]
    app = CountingApp(store, sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await settled(pilot)
        assert BUILT == ["training"] and app.current_mode == "training"  # not the default screen first
    assert store.info(sid)["ui"]["last_screen"] == "training"  # remembered, as a switch there would have
