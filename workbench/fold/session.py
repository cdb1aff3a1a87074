"""A session folder read into its one fold (SessionModel), for readers without a live tracker (accept, export)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from workbench.fold.record import JobRecord, SessionModel
from workbench.fold.stream import fold_stream
from workbench.session.store import job_status
from workbench.system.atomic import read_json


def _spec(job_dir: Path) -> Dict[str, Any]:
    try:
        spec = read_json(job_dir / "job.json")
    except (OSError, ValueError):
        return {}
    return spec if isinstance(spec, dict) else {}


def fold_job(job_dir: Path) -> JobRecord:
    """Fold one job folder's events files (events.jsonl first) and attach its status."""
    spec = _spec(job_dir)
    created = spec.get("created")
    rec = JobRecord(
        job_dir.name,
        str(spec.get("kind") or job_dir.name.rsplit("-", 1)[0]),
        float(created) if type(created) in (int, float) else 0.0,
        job_dir,
    )
    names = sorted((p.name for p in job_dir.glob("events*.jsonl")), key=lambda n: (n != "events.jsonl", n))
    for name in names:
        try:
            fh = open(str(job_dir / name), "rb")
        except OSError:
            continue
        with fh:  # in 1 MB blocks, keeping no event beyond the fold: memory stays flat for long runs
            tail: List[bytes] = []  # a line without its newline is torn (or still being written): never folded
            rec.begin_file(name)
            fold_stream(rec, iter(lambda: fh.read(1 << 20), b""), tail)
            rec.note_torn_tail(len(tail[0]) if tail else 0)
    rec.status = job_status(job_dir, events=[rec.finished] if rec.finished else [])
    return rec


def fold_session(session_dir: Path) -> SessionModel:
    """Every job folder (one with a job.json) of a session, folded."""
    model = SessionModel()
    jobs = Path(session_dir) / "jobs"
    if jobs.is_dir():
        for job_dir in sorted(jobs.iterdir()):
            if (job_dir / "job.json").is_file():
                model.add(fold_job(job_dir))
    return model
