"""Build session folders from recorded event files, for pilot and snapshot tests; wait for and read the screens."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple

from rich.console import Console

from workbench.config import defaults
from workbench.session import SessionStore

OK_EXIT = {"returncode": 0, "signal": None, "duration_s": 1.0, "timed_out": False, "stalled": False,
           "cancelled": False, "refused": None, "started_at": 0.0, "ended_at": 1.0}
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "events"


def make_recorded_session(root: Path, jobs: Iterable[Tuple[str, str, Any, Optional[Dict[str, Any]]]],
                          cfg: Optional[Dict[str, Any]] = None) -> str:
    """Create a session whose jobs replay recorded events: (jid, kind, events_path_or_lines, exit_or_None).

    exit None means "still running" is not representable (no live process): pass OK_EXIT or a failure.
    """
    store = SessionStore(Path(root))
    sid = store.create(["ms-workbench", "test"])
    for n, (jid, kind, events, exit_record) in enumerate(jobs):
        job_dir = store.root / sid / "jobs" / jid
        (job_dir / "artifacts").mkdir(parents=True)
        spec = {"jid": jid, "kind": kind, "session": sid, "created": 1_700_000_000.0 + n, "argv": [],
                "command": ["ms-workbench", "run", kind], "version": "0.1.0", "python": "python3",
                "device": {"requested": "auto", "resolved": "CPU", "id": 0, "why": "auto: recorded"}}
        (job_dir / "job.json").write_text(json.dumps(spec))
        (job_dir / "config.json").write_text(json.dumps(cfg or defaults()))
        if isinstance(events, (str, Path)):
            shutil.copyfile(str(events), str(job_dir / "events.jsonl"))
        else:
            (job_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        (job_dir / "stderr.log").write_text("")
        if exit_record is not None:
            (job_dir / "exit.json").write_text(json.dumps(exit_record))
    return sid


def mark_running(job_dir: Path) -> None:
    """Make a recorded job look alive (its supervisor pid is this test process), so appended events count."""
    (Path(job_dir) / "pids.json").write_text(json.dumps({"supervisor": os.getpid(), "job": os.getpid()}))


async def wait_ingested(pilot, app, settle_polls: int = 4, timeout_s: float = 20.0) -> None:
    """Wait until the app has read every event file (no new events over a few polls)."""
    deadline = time.monotonic() + timeout_s
    last, stable = -1, 0
    while stable < settle_polls:
        assert time.monotonic() < deadline, "events still arriving"
        await pilot.pause(0.1)
        now = app.events_ingested
        stable = stable + 1 if now == last else 0
        last = now


async def until(pilot, predicate, timeout_s: float = 15.0, what: Optional[str] = None) -> None:
    """Pause the pilot until predicate() holds; fail after timeout_s, naming what was awaited if given."""
    if what is None:
        message = "condition not met in time"
    else:
        message = "timed out after %.0f s waiting for %s" % (timeout_s, what)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, message
        await pilot.pause(0.05)


def text_of(app, selector: str) -> str:
    """The plain text a Static shows, laid out at its width."""
    widget = app.screen.query_one(selector)
    console = Console(width=max(widget.size.width, 20), color_system=None)
    with console.capture() as captured:
        console.print(widget.content)
    return captured.get()
