"""The sessions of tests/fixtures/sessions: copy one into a test's sessions root, plant secrets in it.

SID is the hand-written session (build_fixture.py); recorded/ holds the one session recorded
from the real jobs (record_real.py), whose id changes with each recording.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

SID = "20250314-101500-a1b2"
FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / SID
REAL_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "recorded"
SECRET = "hunter2"
API_KEY = "AK-planted-7f3e9c1d"


def copy_recorded(root: Path) -> str:
    """Copy the recorded session under `root`; return its id."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(str(FIXTURE_DIR), str(root / SID))
    return SID


def real_sid() -> str:
    """Id of the session recorded from the real jobs (record_real.py keeps exactly one)."""
    (sid,) = [p.name for p in REAL_DIR.iterdir() if (p / "session.json").is_file()]  # not a __pycache__ beside it
    return sid


def set_interpreter(session_dir: Path, interpreter: str = sys.executable) -> None:
    """Point each job of a recorded session at `interpreter` (this test's own by default).

    A recording names its job interpreter by its path on the machine that recorded it, which no other
    machine has: every JSON string that is exactly that path, in job.json and in every event (the job's
    `python`, its command's first word, the `started` event, the env job's `executable`), is rewritten, so
    no reader runs or shows a path of the recording machine. Every other value, the recorded package
    paths in details and evidence included, is kept as recorded.
    """
    for job in sorted((Path(session_dir) / "jobs").iterdir()):
        events = job / "events.jsonl"
        first, _, rest = events.read_text(encoding="utf-8").partition("\n")
        started = json.loads(first) if first.strip() else {}
        recorded = started.get("python") if started.get("type") == "started" else None
        if not isinstance(recorded, str):
            continue
        value = re.compile(r"(?<=[:\[,])(\s*)%s(?=\s*[,\]}])" % re.escape(json.dumps(recorded)))
        to = r"\g<1>" + json.dumps(interpreter).replace("\\", "\\\\")
        for path in (events, job / "job.json"):
            path.write_text(value.sub(to, path.read_text(encoding="utf-8")), encoding="utf-8")


def copy_real(root: Path, interpreter: str = sys.executable) -> str:
    """Copy the session recorded from the real jobs under `root`, its jobs pointed at `interpreter`; its id."""
    sid = real_sid()
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(str(REAL_DIR / sid), str(root / sid))
    set_interpreter(root / sid, interpreter)
    return sid


def plant_secrets(session_dir: Path) -> None:
    """Put MS_SECRET_TOKEN=hunter2 and ASCEND_API_KEY into the env job's events, job.json env and stderr."""
    job = session_dir / "jobs" / "env-001"
    spec = json.loads((job / "job.json").read_text())
    spec["env"].update({"MS_SECRET_TOKEN": SECRET, "ASCEND_API_KEY": API_KEY})
    (job / "job.json").write_text(json.dumps(spec, indent=2) + "\n")
    lines = (job / "events.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        ev = json.loads(line)
        if ev["type"] == "result":
            ev["summary"]["environment"].update({"MS_SECRET_TOKEN": SECRET, "ASCEND_API_KEY": API_KEY})
        if ev["type"] == "check" and ev["id"] == "ms-role":
            ev["evidence"]["env"] = {"MS_ROLE": None, "MS_SECRET_TOKEN": SECRET}
            ev["detail"] = "MS_ROLE not set; MS_SECRET_TOKEN=%s is set" % SECRET
        out.append(json.dumps(ev, separators=(",", ":")))
    (job / "events.jsonl").write_text("\n".join(out) + "\n")
    (job / "stderr.log").write_text(
        "[WARNING] env: MS_SECRET_TOKEN=%s\nusing key %s for the registry\n" % (SECRET, API_KEY)
    )
