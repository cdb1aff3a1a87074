"""The biggest realistic session for the 80×24 tests: the recorded session's jobs, the course's overfit, resume,
precision and mixed-precision align jobs, more training runs (one cancelled, one still running)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support import sessions, variants
from tests.support.recorded import mark_running

COURSE_JOBS = (("overfit-001", "overfit-001"), ("resume-001", "resume-001"), ("precision-001", "precision-001"))
COURSE_ALIGN = ("align-001", "align-002")


def _adopt(session: Path, src: Path, jid: str) -> Path:
    """Copy a job folder of another session into `session` as `jid`, created after its newest job."""
    dst = session / "jobs" / jid
    shutil.copytree(str(src), str(dst))
    newest = max(json.loads((p / "job.json").read_text()).get("created", 0) for p in (session / "jobs").iterdir())
    spec = json.loads((dst / "job.json").read_text())
    spec.update(jid=jid, session=session.name, created=newest + 1.0)
    (dst / "job.json").write_text(json.dumps(spec, indent=2))
    return dst


def _cut_after_first_epoch(job: Path) -> None:
    """Keep a run's events up to its first epoch: it is mid-run."""
    events = variants.read_events(job)
    at = next(i for i, e in enumerate(events) if e["type"] == "epoch")
    variants.write_events(job, events[: at + 1])


def build(root: Path) -> Path:
    """Build the session under `root`; its folder. train-006 is still running (this process is its supervisor)."""
    session = variants.copy_real(Path(root))
    (course_sid,) = [p.name for p in variants.COURSE.iterdir() if (p / "session.json").is_file()]
    course = variants.COURSE / course_sid / "jobs"
    for src, jid in COURSE_JOBS + (COURSE_ALIGN,):
        _adopt(session, course / src, jid)
    for n in range(2, 6):
        variants.clone_job(session, "train-001", "train-%03d" % n)
    variants.clone_job(session, "test-001", "test-002")
    variants.clone_job(session, "export-001", "export-002")
    cancelled = session / "jobs" / "train-004"
    exit_record = json.loads((cancelled / "exit.json").read_text())
    exit_record.update(returncode=-15, cancelled=True)
    (cancelled / "exit.json").write_text(json.dumps(exit_record))
    _cut_after_first_epoch(cancelled)
    running = variants.clone_job(session, "train-001", "train-006")
    _cut_after_first_epoch(running)
    (running / "exit.json").unlink()
    mark_running(running)
    sessions.set_interpreter(session)
    return session
