"""Waiting inside a Pilot test: on a condition, on the app having read and drawn every event on disk."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Callable, Optional

POLL_S = 0.05  # how often `until` re-checks its condition; not a delay anything depends on


async def until(pilot, predicate: Callable[[], Any], timeout_s: float = 15.0, what: Optional[str] = None) -> None:
    """Let the app run until predicate() holds; fail after timeout_s, naming what was awaited if given."""
    if what is None:
        message = "condition not met in time"
    else:
        message = "timed out after %.0f s waiting for %s" % (timeout_s, what)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, message
        await asyncio.sleep(POLL_S)  # the poll interval of this condition wait (the app runs meanwhile)


def _complete_events(path: Path) -> int:
    """Events in a file as the app counts them: complete, non-blank lines."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    return sum(1 for line in data.split(b"\n")[:-1] if line.strip())


def read_everything(app) -> bool:
    """True when the app has found every job of its session and folded every complete event line on disk."""
    if app.sid is None:
        return True
    jobs = [p for p in (app.store.root / app.sid / "jobs").glob("*") if (p / "job.json").exists()]
    if len(app.tracker.jobs) < len(jobs):
        return False
    return app.events_ingested >= sum(_complete_events(p / "events.jsonl") for p in jobs)


def drew_its_model(screen) -> bool:
    """True when a workbench screen has drawn its model's current version (other screens: always)."""
    drawn = getattr(screen, "drawn_version", None)
    return drawn is None or drawn == screen.view.version


async def settled(pilot, timeout_s: float = 20.0) -> None:
    """Wait until the app read every event on disk and the visible screen drew what its model holds."""
    app = pilot.app
    await until(
        pilot,
        lambda: read_everything(app) and drew_its_model(app.screen),
        timeout_s,
        what="the %s screen to draw every event on disk" % getattr(app, "current_mode", "current"),
    )
    await pilot.wait_for_scheduled_animations()
