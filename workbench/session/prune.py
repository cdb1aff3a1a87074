"""`ms-workbench sessions --prune KEEP_DAYS`: delete old finished sessions after confirmation."""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, List, Optional

from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json

DAY_S = 86400.0
CLOCK_SLACK_S = 300.0  # dates this far after "now" mean the clock and the session disagree


@dataclass
class Candidate:
    """A session old enough to delete, with why and how big."""

    sid: str
    last_activity: float
    bytes: int


def _date(value: object, where: str) -> float:
    """A date as stored (unix seconds); ValueError for anything else: such a session's age cannot be told."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError("%s holds %r, not a date" % (where, value))
    return float(value)


def last_activity(store: SessionStore, sid: str) -> float:
    """The latest of the session's creation and each job's creation and end; ValueError for a date that is none."""
    latest = _date(store.info(sid).get("created"), "%s/session.json created" % sid)
    for job in store.jobs(sid):
        for name, key in (("job.json", "created"), ("exit.json", "ended_at")):
            try:
                value = read_json(job / name).get(key)
            except (OSError, ValueError, AttributeError):
                continue
            if value is not None:
                latest = max(latest, _date(value, "%s/%s %s" % (job.name, name, key)))
    return latest


def has_running_jobs(store: SessionStore, sid: str) -> bool:
    """True when any job of the session is still running."""
    return any(job_status(j).state == "running" for j in store.jobs(sid))


def candidates(store: SessionStore, keep_days: float, now: Optional[float] = None) -> List[Candidate]:
    """Sessions whose last activity is older than keep_days and that have no running job."""
    now = time.time() if now is None else now
    out = []
    for sid in store.sessions():
        try:
            last = last_activity(store, sid)
            if now - last <= keep_days * DAY_S or has_running_jobs(store, sid):
                continue
            out.append(Candidate(sid, last, store.size_bytes(sid)))
        except (OSError, ValueError):
            continue  # a damaged session is left for a person to look at
    return out


def ahead_of_clock(store: SessionStore, now: Optional[float] = None) -> List[Candidate]:
    """Sessions whose own dates lie after this machine's clock: their age cannot be told, so they are kept."""
    now = time.time() if now is None else now
    out = []
    for sid in store.sessions():
        try:
            last = last_activity(store, sid)
        except (OSError, ValueError):
            continue
        if last > now + CLOCK_SLACK_S:
            out.append(Candidate(sid, last, 0))
    return out


def _mb(n: int) -> str:
    return "%.1f MB" % (n / 1048576.0)


def prune(
    store: SessionStore,
    keep_days: float,
    assume_yes: bool = False,
    stdin: Optional[IO[str]] = None,
    stdout: Optional[IO[str]] = None,
    now: Optional[float] = None,
) -> int:
    """List what would go, ask y/N (unless assume_yes), delete; exit code 0, or 1 when declined or one was skipped."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if isinstance(keep_days, bool) or not isinstance(keep_days, (int, float)) or not math.isfinite(keep_days):
        stdout.write("error: KEEP_DAYS must be a finite number of days >= 0, got %r; nothing deleted\n" % (keep_days,))
        return 2
    if keep_days < 0:
        stdout.write("error: KEEP_DAYS must be >= 0, got %s; nothing deleted\n" % keep_days)
        return 2
    for c in ahead_of_clock(store, now):
        stdout.write(
            "kept %s: its last activity (%s) is after this machine's clock; its age cannot be told\n"
            % (c.sid, time.strftime("%Y-%m-%d %H:%M", time.localtime(c.last_activity)))
        )
    found = candidates(store, keep_days, now)
    if not found:
        stdout.write("nothing to prune: no finished session under %s is older than %g days\n" % (store.root, keep_days))
        return 0
    total = sum(c.bytes for c in found)
    for c in found:
        stdout.write(
            "  %s  %s  last activity %s\n"
            % (c.sid, _mb(c.bytes), time.strftime("%Y-%m-%d %H:%M", time.localtime(c.last_activity)))
        )
    if not assume_yes:
        stdout.write("delete these %d sessions (%s)? [y/N] " % (len(found), _mb(total)))
        stdout.flush()
        answer = stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            stdout.write("nothing deleted\n")
            return 1
    deleted, freed, skipped = 0, 0, 0
    for c in found:
        path = Path(store.root) / c.sid
        if has_running_jobs(store, c.sid):  # a job may have been added since we asked
            stdout.write("kept %s: a job is running now\n" % c.sid)
            continue
        if path.is_symlink():  # its target lies outside the root: not ours to delete
            stdout.write("skipped %s: a symbolic link to %s, not deleted\n" % (c.sid, os.readlink(str(path))))
            skipped += 1
            continue
        try:
            shutil.rmtree(str(path))
        except OSError as exc:
            stdout.write("skipped %s: %s\n" % (c.sid, exc))
            skipped += 1
            continue
        deleted, freed = deleted + 1, freed + c.bytes
    stdout.write(
        "deleted %d sessions (%s)%s\n" % (deleted, _mb(freed), "; skipped %d (see above)" % skipped if skipped else "")
    )
    return 1 if skipped else 0
