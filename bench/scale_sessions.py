"""Sessions of a chosen number of events for bench/scale.py and the memory test (tests/unit/test_export_memory.py).

Mixes: `train`, the recorded real training job of tests/fixtures/sessions/recorded (its started,
checks, steps, progress, epochs, perf, artifacts, result, finished) written as the `train` job writes
it now, consecutive steps of an epoch in batched `steps` lines of STEPS_PER_LINE (the job writes one
line per 0.1 s: about 30 steps of a 3 ms step); `train-per-line`, the same run with one `step` line
per step (the worst case per line, what the job wrote before batching); `drill`, the lines of a real
drill job run at full rate (one `step` line per step, as the drill writes). Each step is repeated to
reach the size, so a bigger session is a run with longer epochs (as a long real run is); every other
line is kept once, in place; seq and step numbers are renumbered so the file stays a valid event file.
The size counts each step as one event whichever way it is written: the same run in either shape.
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
STEPS_PER_LINE = 30
MIXES = ("train", "train-per-line", "drill")


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


def batched(events: Iterator[Dict[str, Any]], per_line: int = STEPS_PER_LINE) -> Iterator[Dict[str, Any]]:
    """`step` lines gathered as jobs/train/timing.py EventPipe writes them: consecutive steps of one epoch
    in a `steps` line of at most `per_line` steps (lists; batch_size and phase once when all agree)."""
    group: List[Dict[str, Any]] = []
    seq = 0

    def flush() -> Iterator[Dict[str, Any]]:
        nonlocal seq
        if not group:
            return
        first = group[0]
        line: Dict[str, Any] = {"v": first.get("v", 1), "seq": seq, "t": group[-1].get("t"), "type": "steps"}
        line.update(epoch=first["epoch"], first_step=first["step"], global_step=first.get("global_step"))
        for key in ("loss", "step_ms", "batch_size", "phase"):
            values = [ev.get(key) for ev in group]
            line[key] = values[0] if key in ("batch_size", "phase") and len(set(values)) == 1 else values
        seq += 1
        group.clear()
        yield line

    for ev in events:
        if ev["type"] == "step":
            if group and (ev.get("epoch") != group[-1].get("epoch") or len(group) == per_line):
                yield from flush()
            group.append(ev)
            continue
        yield from flush()
        yield dict(ev, seq=seq)
        seq += 1
    yield from flush()


def build_session(root: Path, mix: str, n_events: int, template_job: Path = None) -> Path:
    """A session folder under `root` holding one job of `n_events` events (a step counts one); returns the events file."""
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
    jid = "%s-001" % ("drill" if mix == "drill" else "train")
    job = jobs / jid
    shutil.copytree(str(src), str(job), ignore=shutil.ignore_patterns("events*.jsonl", "artifacts"))
    spec = json.loads((job / "job.json").read_text(encoding="utf-8"))
    spec.update(jid=jid, session=SID)
    (job / "job.json").write_text(json.dumps(spec), encoding="utf-8")
    path = job / "events.jsonl"
    body = _body(_lines(src / "events.jsonl"), n_events)
    if mix == "train":
        body = batched(body)
    with open(str(path), "w", encoding="utf-8") as fh:
        for ev in body:
            fh.write(json.dumps(ev, separators=(",", ":")) + "\n")
    return path
