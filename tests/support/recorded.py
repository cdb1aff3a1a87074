"""Build session folders from recorded event files, for pilot and snapshot tests; wait for and read the screens."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple

from rich.console import Console

from tests.support.pilot import read_everything, until  # noqa: F401  (until: imported from here by tests)
from workbench.config.layers import defaults
from workbench.session.store import SessionStore

OK_EXIT = {
    "returncode": 0,
    "signal": None,
    "duration_s": 1.0,
    "timed_out": False,
    "stalled": False,
    "cancelled": False,
    "refused": None,
    "started_at": 0.0,
    "ended_at": 1.0,
}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"


def make_recorded_session(
    root: Path, jobs: Iterable[Tuple[str, str, Any, Optional[Dict[str, Any]]]], cfg: Optional[Dict[str, Any]] = None
) -> str:
    """Create a session whose jobs replay recorded events: (jid, kind, events_path_or_lines, exit_or_None).

    exit None means "still running" is not representable (no live process): pass OK_EXIT or a failure.
    """
    store = SessionStore(Path(root))
    sid = store.create(["ms-workbench", "test"])
    for n, (jid, kind, events, exit_record) in enumerate(jobs):
        job_dir = store.root / sid / "jobs" / jid
        (job_dir / "artifacts").mkdir(parents=True)
        spec = {
            "jid": jid,
            "kind": kind,
            "session": sid,
            "created": 1_700_000_000.0 + n,
            "argv": [],
            "command": ["ms-workbench", "run", kind],
            "version": "0.1.0",
            "python": "python3",
            "device": {"requested": "auto", "resolved": "CPU", "id": 0, "why": "auto: recorded"},
        }
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


async def wait_ingested(pilot, app, timeout_s: float = 20.0) -> None:
    """Wait until the app has found every job and folded every complete event line on disk."""
    await until(pilot, lambda: read_everything(app), timeout_s, what="the app to read every event file")


def text_of(app, selector: str) -> str:
    """The plain text a Static shows, laid out at its width."""
    widget = app.screen.query_one(selector)
    console = Console(width=max(widget.size.width, 20), color_system=None)
    with console.capture() as captured:
        console.print(widget.content)
    return captured.get()
