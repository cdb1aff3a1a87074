"""`ms-workbench sessions --prune KEEP_DAYS`: delete old finished sessions after confirmation."""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Dict, List, Optional

from workbench.session.store import SessionStore, job_status
from workbench.system import monotonic
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


def monotonic_age(store: SessionStore, sid: str) -> Optional[float]:
    """Seconds since the session's last activity by the monotonic clock (its stamps of this boot), else None."""
    stamps = [store.info(sid).get("created_monotonic")]
    for job in store.jobs(sid):
        for name, key in (("job.json", "created_monotonic"), ("exit.json", "monotonic")):
            try:
                value = read_json(job / name).get(key)
            except (OSError, ValueError, AttributeError):
                continue
            stamps.append(value.get("ended") if key == "monotonic" and isinstance(value, dict) else value)
    ages = [a for a in (monotonic.elapsed(s) for s in stamps) if a is not None]
    return min(ages) if ages else None


def clock_doubts(store: SessionStore, keep_days: float, now: Optional[float] = None) -> Dict[str, str]:
    """{sid: why} for the sessions whose dates this machine's clock cannot be trusted on: kept, and said so.

    Two signals besides the dates: the monotonic clock (stamps of this boot give a true age), and the
    order this root made its sessions in (`seq`: a session made after another but dated before it was made
    while the clock was behind). A date after the clock is a doubt too.
    """
    now = time.time() if now is None else now
    made = {sid for sid in store.sessions() if store.made_here(sid)}
    doubts: Dict[str, str] = {}
    latest_made_before: Optional[float] = None
    for sid in store.sessions():  # oldest first, by creation order where it is known
        try:
            created = _date(store.info(sid).get("created"), "%s/session.json created" % sid)
            last = last_activity(store, sid)
            age = monotonic_age(store, sid)
        except (OSError, ValueError):
            continue  # a damaged session is never a candidate
        old_by_date = now - last > keep_days * DAY_S
        if last > now + CLOCK_SLACK_S:
            doubts[sid] = "its last activity (%s) is after this machine's clock; its age cannot be told" % _when(last)
        elif old_by_date and age is not None and now - last > age + CLOCK_SLACK_S:
            doubts[sid] = (
                "its dates say its last activity was %s, but this machine's monotonic clock says %s ago; "
                "the wall clock was off, so its age is not guessed" % (_when(last), _span(age))
            )
        elif (
            old_by_date
            and sid in made
            and latest_made_before is not None
            and created < latest_made_before - CLOCK_SLACK_S
        ):
            doubts[sid] = (
                "it was made after a session dated %s, yet is dated %s: the clock was behind when it was made, "
                "so its age cannot be told" % (_when(latest_made_before), _when(created))
            )
        if sid in made:
            latest_made_before = max(created, latest_made_before or created)
    return doubts


def candidates(store: SessionStore, keep_days: float, now: Optional[float] = None) -> List[Candidate]:
    """Sessions whose last activity is older than keep_days, that have no running job and whose age is not in doubt."""
    now = time.time() if now is None else now
    doubts = clock_doubts(store, keep_days, now)
    out = []
    for sid in store.sessions():
        if sid in doubts:
            continue
        try:
            last = last_activity(store, sid)
            if now - last <= keep_days * DAY_S or has_running_jobs(store, sid):
                continue
            out.append(Candidate(sid, last, store.size_bytes(sid)))
        except (OSError, ValueError):
            continue  # a damaged session is left for a person to look at
    return out


def _when(date: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(date))


def _span(seconds: float) -> str:
    if seconds >= 2 * DAY_S:
        return "%.0f days" % (seconds / DAY_S)
    if seconds >= 7200:
        return "%.0f hours" % (seconds / 3600)
    return "%.0f minutes" % (seconds / 60) if seconds >= 120 else "%.0f s" % seconds


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
    for sid, why in clock_doubts(store, keep_days, now).items():
        stdout.write("kept %s: %s\n" % (sid, why))
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
