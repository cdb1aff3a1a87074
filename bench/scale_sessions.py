"""Sessions of a chosen number of events for bench/scale.py and the memory test (tests/unit/test_export_memory.py).

Two mixes: `drill`, the lines of a real drill job run at full rate (one `step` line per step), and
`train`, the recorded real training job of tests/fixtures/sessions/recorded (its started, checks,
steps, progress, epochs, perf, artifacts, result, finished). Each step line is repeated to reach the
size, so a bigger session is a run with longer epochs (as a long real run is); every other line is
kept once, in place; seq and step numbers are renumbered so the file stays a valid event file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "fixtures" / "sessions" / "recorded" / "20261201-135938-fad9"
SID = "20261201-000000-big0"


def _lines(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def drill_template(work: Path, steps: int = 2000) -> Path:
    """Run the real drill job at full rate once (`steps` step lines); return its job folder."""
    sessions = work / "drill-sessions"
    cmd = [
        sys.executable,
        "-m",
        "workbench",
        "run",
        "drill",
        "--sessions",
        str(sessions),
        "--set",
        "drill.steps=%d" % steps,
        "--set",
        "drill.rate=1000000",
    ]
    subprocess.run(cmd, cwd=str(ROOT), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return next(sessions.glob("*/jobs/drill-*"))


def _body(events: List[Dict[str, Any]], n_events: int) -> Iterator[Dict[str, Any]]:
    """The template's lines to `n_events` in all, renumbered: each step line repeated k times (longer epochs).

    Every other line (progress, epoch, perf, checks, artifacts) is kept once, in place: a longer run
    has longer epochs, not more of them. Step numbers run on within an epoch; seq stays gap-free.
    """
    steps = [e for e in events if e["type"] == "step"]
    others = len(events) - len(steps)
    k = max(1, -(-(n_events - others) // max(1, len(steps))))
    budget = n_events - others  # step lines to write
    seq, step_in_epoch, global_step, epoch = 0, 0, 0, None
    for ev in events:
        if ev["type"] != "step":
            yield dict(ev, seq=seq)
            seq += 1
            continue
        if ev.get("epoch") != epoch:
            epoch, step_in_epoch = ev.get("epoch"), 0
        for _ in range(k):
            if budget <= 0:
                break
            step_in_epoch += 1
            global_step += 1
            out = dict(ev, seq=seq, step=step_in_epoch)
            if "global_step" in ev:
                out["global_step"] = global_step
            if out.get("phase") == "compile" and global_step > 1:
                out["phase"] = "steady"
            yield out
            seq += 1
            budget -= 1


def build_session(root: Path, mix: str, n_events: int, template_job: Path = None) -> Path:
    """A session folder under `root` holding one job of `n_events` events; returns the events file."""
    src = template_job if template_job is not None else RECORDED / "jobs" / "train-001"
    sdir = root / SID
    if sdir.exists():
        shutil.rmtree(str(sdir))
    jobs = sdir / "jobs"
    jobs.mkdir(parents=True)
    shutil.copy2(str(RECORDED / "session.json"), str(sdir / "session.json"))
    info = json.loads((sdir / "session.json").read_text(encoding="utf-8"))
    info["id"] = SID
    (sdir / "session.json").write_text(json.dumps(info), encoding="utf-8")
    jid = "%s-001" % mix
    job = jobs / jid
    shutil.copytree(str(src), str(job), ignore=shutil.ignore_patterns("events*.jsonl", "artifacts"))
    spec = json.loads((job / "job.json").read_text(encoding="utf-8"))
    spec.update(jid=jid, session=SID)
    (job / "job.json").write_text(json.dumps(spec), encoding="utf-8")
    path = job / "events.jsonl"
    with open(str(path), "w", encoding="utf-8") as fh:
        for ev in _body(_lines(src / "events.jsonl"), n_events):
            fh.write(json.dumps(ev, separators=(",", ":")) + "\n")
    return path
