"""Follows every job of a session from its files: new jobs, new events, status changes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from workbench.events.protocol import EventReader
from workbench.fold.handoff import FoldedSession
from workbench.fold.record import JobRecord, SessionModel
from workbench.session.store import JobStatus, SessionStore, job_status
from workbench.system.atomic import read_json
from workbench.system.regular import open_regular

STATUS_EVERY_S = 0.5
# At most this much of one job's events file is read per poll: a big backlog is read in slices,
# polled back to back, so the UI paints first and stays live while it catches up.
SLICE_BYTES = 1 << 20


@dataclass
class TrackedJob:
    """One job as the UI knows it: spec, events read so far, derived status."""

    dir: Path
    spec: Dict[str, Any]
    reader: EventReader
    status: JobStatus
    events: int = 0
    checked_at: float = 0.0
    drained: bool = False  # ended and read to the end after it ended: nothing more can arrive
    record: Optional[JobRecord] = None  # the job's one fold of its events

    @property
    def jid(self) -> str:
        """Job id, e.g. train-003."""
        return self.dir.name

    @property
    def kind(self) -> str:
        """Job kind, e.g. train."""
        return self.spec.get("kind", self.jid.rsplit("-", 1)[0])


@dataclass
class Batch:
    """What one poll found: events per job and the jobs whose status changed."""

    events: List[Tuple[TrackedJob, List[Dict[str, Any]]]] = field(default_factory=list)
    changed: List[TrackedJob] = field(default_factory=list)
    new_jobs: List[TrackedJob] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.changed or self.new_jobs)

    @property
    def count(self) -> int:
        """Number of events in the batch."""
        return sum(len(evs) for _, evs in self.events)


class JobTracker:
    """Polls a session folder; one call returns everything new since the last."""

    def __init__(self, store: SessionStore, sid: Optional[str], slice_bytes: int = SLICE_BYTES):
        self.store = store
        self.sid = sid
        self.slice_bytes = slice_bytes
        self.jobs: Dict[str, TrackedJob] = {}
        self.model = SessionModel()  # every job's record: each line is folded here, once
        self._known_dirs = 0
        self._scanned_at = 0.0
        self.caught_up = False  # set the first time every job's reader reached the end of its file
        self.ignored: set = set()  # job folders left out (found after an adopted fold was made)
        self.read_elsewhere: Optional[Callable[[], int]] = None  # bytes another process is reading for this one

    def _scan(self, batch: Batch) -> None:
        if self.sid is None:
            return
        jobs_dir = self.store.root / self.sid / "jobs"
        try:
            dirs = [
                p
                for p in jobs_dir.iterdir()
                if p.name not in self.jobs and p.name not in self.ignored and (p / "job.json").exists()
            ]
        except FileNotFoundError:
            return
        for path in sorted(dirs, key=lambda p: p.stat().st_mtime):
            try:
                spec = read_json(path / "job.json")
            except (OSError, ValueError):
                spec = None
            if not isinstance(spec, dict):  # damaged: still listed (as `sessions` lists it), with what its files say
                spec = {}
            job = TrackedJob(path, spec, EventReader(str(path / "events.jsonl")), JobStatus("running", "", None))
            record = self.model.record_for(job)
            record.status = job.status
            job.record = record
            self.jobs[path.name] = job
            batch.new_jobs.append(job)

    def discover(self, now: Optional[float] = None) -> Batch:
        """Find the session's jobs and their statuses from their files, reading no event (what a first paint needs)."""
        now = time.monotonic() if now is None else now
        batch = Batch()
        self._scan(batch)
        self._scanned_at = now
        for job in batch.new_jobs:
            job.status = self.model.record_for(job).status = job_status(job.dir)
            job.checked_at = now
            job.reader.measure()  # so the backlog is known before a byte of it is read
            batch.changed.append(job)
        return batch

    def adopt(self, folded: FoldedSession) -> Batch:
        """Take the session as another process folded it: no events file is read again, no job is followed on.

        Each job folded there is drained where that fold ended, with its record; a job not in the fold
        (started since) is left out. The batch carries each job's last events, for the views that list lines.
        """
        batch = Batch()
        self._scan(batch)
        for job in list(batch.new_jobs):
            record = folded.records.get(job.jid)
            if record is None:
                del self.jobs[job.jid]
                self.model.records.pop(job.jid, None)
                self.ignored.add(job.jid)
                batch.new_jobs.remove(job)
                continue
            job.record = self.model.add(record)
            job.status = record.status if record.status is not None else job_status(job.dir)
            record.status = job.status
            job.reader.offset = job.reader.measure()
            job.drained, job.events = True, record.events
            batch.changed.append(job)
            tail = folded.tails.get(job.jid)
            if tail:
                batch.events.append((job, tail))
        self.caught_up = True
        return batch

    def take(self, folded: FoldedSession) -> Tuple[Batch, List[str]]:
        """Follow on from another process's fold of the backlog: each job it folded from the start goes on
        from the byte where that fold ended, with its record; the batch carries the job's last events.

        A job read here already, not known here, or whose offset does not end a line of its file now, is left
        to be read here from the start: (batch, why each such job was left).
        """
        batch, left = Batch(), []
        for jid, record in folded.records.items():
            job, offset = self.jobs.get(jid), folded.offsets.get(jid, -1)
            if job is None or job.reader.offset or job.events or job.drained:
                left.append("%s: not a job this tracker has yet to read" % jid)
                continue
            if not _ends_a_line(Path(job.reader.path), offset):
                left.append("%s: offset %d does not end a line of its events file" % (jid, offset))
                continue
            record.status = job.status  # what this process read of its files
            job.record = self.model.add(record)
            job.reader.offset = offset
            job.reader.measure()
            job.events = record.events
            batch.changed.append(job)
            tail = folded.tails.get(jid)
            if tail:
                batch.events.append((job, tail))
        return batch, left

    def poll(self, now: Optional[float] = None) -> Batch:
        """Read new events of every job, at most `slice_bytes` each, and refresh statuses (at most every 0.5 s)."""
        now = time.monotonic() if now is None else now
        batch = Batch()
        if now - self._scanned_at >= STATUS_EVERY_S or not self.jobs:
            self._scan(batch)
            self._scanned_at = now
        for job in self.ordered():
            if job.drained:
                continue
            end_seen = job.status.done  # read before the events: a read to the end after it is the last one needed
            lines = job.reader.read_lines(self.slice_bytes)
            record = self.model.record_for(job)  # the one job.record holds
            events = record.ingest_lines(lines) if lines else []  # damaged lines are listed, not passed on
            if end_seen and not job.reader.capped:
                job.drained = True
                record.note_torn_tail(job.reader.pending_bytes)
            if events:
                job.events += len(events)
                batch.events.append((job, events))
            # A job's files are read for its status at most every STATUS_EVERY_S, not on every poll that
            # brings events (10 a second from a training job); its `finished` line is read at once.
            ended = any(ev.get("type") == "finished" for ev in events)
            if job in batch.new_jobs or (not job.status.done and (ended or now - job.checked_at >= STATUS_EVERY_S)):
                job.checked_at = now
                status = job_status(job.dir)
                if status.state != job.status.state or status.reason != job.status.reason or job in batch.new_jobs:
                    batch.changed.append(job)
                job.status = record.status = status
        if not self.caught_up and not self.behind():
            self.caught_up = True
        return batch

    def behind(self) -> bool:
        """True while some job's last read stopped at the slice limit: its backlog is still being read."""
        return any(job.reader.capped for job in self.jobs.values())

    def reading(self) -> Optional[float]:
        """The share of the backlog read so far while the first catch-up (or a later burst) is under way, else None."""
        done, known = self.backlog()
        if self.behind() or (not self.caught_up and done < known):
            return done / known if known else 0.0
        return None

    def backlog(self) -> Tuple[int, int]:
        """(bytes read, bytes known) over every job's events file: how far a catch-up has come."""
        done = sum(job.reader.offset for job in self.jobs.values())
        if self.read_elsewhere is not None:  # its backlog, folded in a child until it hands its fold over
            done += self.read_elsewhere()
        return done, max(done, sum(max(job.reader.size, job.reader.offset) for job in self.jobs.values()))

    def ordered(self) -> List[TrackedJob]:
        """Jobs in start order."""
        return sorted(self.jobs.values(), key=lambda j: (j.spec.get("created", 0), j.jid))

    def running(self) -> List[TrackedJob]:
        """Jobs still running."""
        return [j for j in self.jobs.values() if j.status.state == "running"]


def _ends_a_line(path: Path, offset: int) -> bool:
    """True when `offset` is 0, or within the file and right after a newline."""
    if offset == 0:
        return True
    if offset < 0:
        return False
    try:
        with open_regular(path) as fh:
            fh.seek(offset - 1)
            return fh.read(1) == b"\n"
    except OSError:
        return False
