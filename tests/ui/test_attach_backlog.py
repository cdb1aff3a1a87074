"""Attaching to a big session: the screen paints before the backlog is read, then reads it in slices to the
one-shot record; a screen drawn before its events were read ends up drawn as one built after."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections import deque
from pathlib import Path
from typing import List, Optional

import pytest
import textual.timer

from bench.scale_sessions import SID, build_session
from screens.app import WorkbenchApp
from screens.widgets.status_bar import StatusBar
from tests.support.pilot import drew_its_model, settled, until
from tests.support.screen_states import KEYS, SCREENS, FrozenClock, state_config, state_session
from workbench.config.layers import defaults
from workbench.events.protocol import EventReader, decode_line
from workbench.events.text import format_event
from workbench.fold.backlog import Backlog
from workbench.fold.record import JobRecord
from workbench.session.store import SessionStore
from workbench.views.session import RECENT_EVENTS, listed

SLICE_BYTES = 64 * 1024
EVENTS = 20_000  # about 3.8 MB of the recorded training job's lines: some 60 slices
LOADED_S = 60.0  # the condition waits' limit: a loaded machine (parallel workers, 2 cores) draws slowly


class GatedApp(WorkbenchApp):
    """The real app with a small slice; it notes what it had read when it painted, and after every poll.

    Its polls wait for the test to open the gate, so the catching-up state can be looked at before
    any event is read (the real app starts reading right after its first paint).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tracker.slice_bytes = SLICE_BYTES
        self.gate_open = False
        self.read_at_paint: Optional[int] = None
        self.read_after_poll: List[int] = []

    def _first_painted(self) -> None:
        self.read_at_paint = self.tracker.backlog()[0]
        super()._first_painted()

    def poll_jobs(self) -> bool:
        if not self.gate_open:
            return False
        got = super().poll_jobs()
        self.read_after_poll.append(self.tracker.backlog()[0])
        return got


def _status(app: WorkbenchApp) -> str:
    return str(getattr(app.screen.query_one(StatusBar), "_text", ""))


def _one_shot(job_dir: Path) -> JobRecord:
    """The job's record folded from the whole file in one call (what export and accept do)."""
    record = JobRecord(job_dir.name, "train", 0.0, job_dir)
    reader = EventReader(str(job_dir / "events.jsonl"))
    record.ingest_lines(reader.read_lines(), keep=False)
    record.note_torn_tail(reader.pending_bytes)
    return record


def _facts(record: JobRecord) -> dict:
    return {
        "events": record.events,
        "lines": record.lines,
        "types": dict(record.type_counts),
        "steps_seen": record.steps_seen,
        "main_steps": record.steps.count,
        "loss": list(record.steps.loss),
        "epochs": record.epochs,
        "checks": record.check_facts(),
        "results": record.results,
        "finished": record.finished,
        "perf": record.perf,
        "artifacts": record.artifacts,
        "last_t": record.last_t,
        "damaged": record.damaged,
        "seq_problems": record.seq_problems,
    }


async def test_the_screen_paints_before_a_big_backlog_is_read_then_catches_up_to_the_one_shot_record(tmp_path):
    events = build_session(tmp_path, "train-per-line", EVENTS)
    size = events.stat().st_size
    assert size > 40 * SLICE_BYTES
    app = GatedApp(SessionStore(tmp_path), SID, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.painted, timeout_s=LOADED_S, what="the first paint")
        assert app.read_at_paint == 0 and app.tracker.jobs["train-001"].reader.offset == 0 < size
        assert app.tracker.jobs["train-001"].status.state == "ok"  # the job's status came from its files
        await until(
            pilot, lambda: "reading events 0 %" in _status(app), LOADED_S, what="the status bar to say it is reading"
        )
        assert not app.tracker.caught_up

        app.gate_open = True
        await until(pilot, lambda: app.tracker.caught_up, timeout_s=2 * LOADED_S, what="the backlog to be read")
        await settled(pilot, LOADED_S)
        await until(pilot, lambda: "reading events" not in _status(app), LOADED_S, what="the reading note to go")

    reads = app.read_after_poll
    assert reads[0] <= SLICE_BYTES  # the first poll read one slice, not the file
    assert all(0 <= b - a <= SLICE_BYTES for a, b in zip(reads, reads[1:]))
    assert len(reads) >= size // SLICE_BYTES and reads[-1] == size

    job_dir = events.parent
    followed = app.tracker.jobs["train-001"].record
    assert _facts(followed) == _facts(_one_shot(job_dir))
    assert followed.steps_seen >= EVENTS - 100  # the mix is mostly steps: the comparison covers them

    row = app.views["session"].rows["train-001"]
    every = [format_event(decode_line(raw), verbose_steps=50) for raw in events.read_bytes().split(b"\n") if raw]
    assert row.events == EVENTS
    assert list(row.lines) == list(deque((line for line in every if line), maxlen=RECENT_EVENTS))


def _screen_text(app: WorkbenchApp) -> str:
    """The visible screen as an SVG without its run-unique ids (two apps drawing the same thing give the same text)."""
    return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


@pytest.mark.parametrize("state", ["done", "failed"])
@pytest.mark.parametrize("screen", SCREENS)
async def test_a_screen_drawn_before_its_events_were_read_ends_like_one_built_after(
    tmp_path, monkeypatch, screen, state
):
    monkeypatch.setattr("workbench.session.store.time", FrozenClock)
    sid = state_session(tmp_path, state)
    store = SessionStore(tmp_path)
    after = WorkbenchApp(
        store, sid, state_config()
    )  # lands on the default screen, reads everything, then shows `screen`
    async with after.run_test(size=(120, 36)) as pilot:
        await settled(pilot, LOADED_S)
        await pilot.press(KEYS[screen])
        await until(pilot, lambda: after.current_mode == screen, LOADED_S, what="the %s screen" % screen)
        await settled(pilot, LOADED_S)
        # The status bar redraws on the screen's timer: its reading note can outlive the last read by a tick.
        await until(pilot, lambda: "reading events" not in _status(after), LOADED_S, what="the reading note to go")
        expected = _screen_text(after)
    store.remember_ui(sid, last_screen=screen)
    before = GatedApp(store, sid, state_config())  # lands on `screen` and draws it before reading a line
    async with before.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: before.painted and drew_its_model(before.screen), LOADED_S, what="a first drawing")
        assert before.current_mode == screen and before.events_ingested == 0
        before.gate_open = True
        await settled(pilot, LOADED_S)
        await until(pilot, lambda: "reading events" not in _status(before), LOADED_S, what="the reading note to go")
        assert _screen_text(before) == expected


class _PausedClock:
    """Textual's timer clock as a one-shot timer sees it on a loaded machine: each look comes 50 ms after the last."""

    def __init__(self) -> None:
        self.calls = 0

    def get_time(self) -> float:
        task = asyncio.current_task()
        if task is None or not task.get_name().startswith("set_timer"):
            return time.monotonic()  # repeating timers keep the real clock
        self.calls += 1
        return time.monotonic() + 0.05 * self.calls


async def test_the_backlog_is_read_to_the_end_when_the_process_is_paused_between_slices(tmp_path, monkeypatch):
    # Textual's one-shot timer (skip=True) drops its only tick when its task starts later than its delay;
    # a poll chain re-armed through such timers stopped for good after a pause longer than 1 ms.
    events = build_session(tmp_path, "train", 3000)
    slice_bytes = 16 * 1024
    assert events.stat().st_size > 4 * slice_bytes
    monkeypatch.setattr(textual.timer, "_time", _PausedClock())
    app = WorkbenchApp(SessionStore(tmp_path), SID, defaults())
    app.tracker.slice_bytes = slice_bytes
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.tracker.caught_up, timeout_s=LOADED_S / 2, what="the backlog to be read")
        assert app.tracker.backlog()[0] == events.stat().st_size


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def _drawn(app: WorkbenchApp, screen: str) -> str:
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.tracker.caught_up, LOADED_S, what="the backlog to be read")
        await settled(pilot, LOADED_S)
        await pilot.press(KEYS[screen])
        await until(pilot, lambda: app.current_mode == screen, LOADED_S, what="the %s screen" % screen)
        await settled(pilot, LOADED_S)
        await until(pilot, lambda: "reading events" not in _status(app), LOADED_S, what="the reading note to go")
        return _screen_text(app)


@pytest.mark.parametrize(
    "screen,state", [(screen, "done") for screen in SCREENS] + [("session", "failed"), ("training", "failed")]
)
async def test_a_backlog_folded_in_a_child_draws_every_screen_as_reading_it_here(tmp_path, monkeypatch, screen, state):
    monkeypatch.setattr("workbench.session.store.time", FrozenClock)
    sid = state_session(tmp_path, state)
    store = SessionStore(tmp_path)
    expected = await _drawn(WorkbenchApp(store, sid, state_config()), screen)
    backlog = Backlog.start(store, sid, listed, RECENT_EVENTS)
    assert backlog is not None
    try:
        app = WorkbenchApp(store, sid, state_config(), backlog=backlog)
        assert await _drawn(app, screen) == expected
    finally:
        backlog.close()
    assert app.backlog is None and app.backlog_problem is None  # the child's fold was taken


async def test_a_killed_child_leaves_the_backlog_to_be_read_here_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr("workbench.session.store.time", FrozenClock)
    sid = state_session(tmp_path, "done")
    store = SessionStore(tmp_path)
    expected = await _drawn(WorkbenchApp(store, sid, state_config()), "session")
    backlog = Backlog.start(store, sid, listed, RECENT_EVENTS, work=_killed)
    assert backlog is not None
    try:
        app = WorkbenchApp(store, sid, state_config(), backlog=backlog)
        assert await _drawn(app, "session") == expected
    finally:
        backlog.close()
    assert "killed by signal 9" in app.backlog_problem and "read here instead" in app.backlog_problem


def test_the_attach_command_folds_the_backlog_in_a_child_and_follows_on_from_it(tmp_path):
    from bench.attach_probe import attach

    build_session(tmp_path, "train", 3000)
    got = attach(tmp_path, SID, timeout_s=LOADED_S)
    assert not got["timed_out"]
    assert got["handoff_s"] is not None  # the app took the child's fold (it marks that only then)
    whole = JobRecord("train-001", "train", 0.0, tmp_path / SID / "jobs" / "train-001")
    whole.ingest_lines((tmp_path / SID / "jobs" / "train-001" / "events.jsonl").read_bytes().split(b"\n")[:-1])
    assert got["caught_up_events"] == whole.events
    assert got["caught_up_read_bytes"] == (tmp_path / SID / "jobs" / "train-001" / "events.jsonl").stat().st_size
