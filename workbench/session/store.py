"""The session store: sessions/<sid>/ with session.json and one folder per job."""

from __future__ import annotations

import datetime
import getpass
import math
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from workbench import __version__
from workbench.events.files import last_finished
from workbench.session.imported import IMPORT_MARK
from workbench.session.refs import SID_PATTERN, BadReference, check_jid, check_sid
from workbench.system import monotonic
from workbench.system.atomic import read_json, write_json
from workbench.system.childproc import describe, group_members, pid_running


def sessions_root(explicit: Optional[str] = None) -> Path:
    """--sessions DIR, else MS_WORKBENCH_SESSIONS, else ./sessions."""
    return Path(explicit or os.environ.get("MS_WORKBENCH_SESSIONS") or "sessions").resolve()


def new_sid(now: Optional[float] = None) -> str:
    """YYYYMMDD-HHMMSS-<4 hex>."""
    import secrets  # here: it loads hashlib, which the UI's start does not need otherwise

    stamp = datetime.datetime.fromtimestamp(time.time() if now is None else now).strftime("%Y%m%d-%H%M%S")
    return "%s-%s" % (stamp, secrets.token_hex(2))


@dataclass
class JobStatus:
    """A job's state derived from its events and exit.json."""

    state: str  # running, ok, failed, crashed, timed-out, stalled, cancelled, damaged
    reason: str
    duration_s: Optional[float]

    @property
    def done(self) -> bool:
        """True once the job has ended, whatever the way."""
        return self.state != "running"

    def label(self) -> str:
        """One line for people, e.g. 'crashed: SIGSEGV after 41 s'."""
        return self.state if not self.reason else "%s: %s" % (self.state, self.reason)


def _finished(events: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    for event in reversed(events):
        if event.get("type") == "finished" and event.get("rank") in (None, 0):
            return event
    return None


def job_status(job_dir: Path, events: Optional[List[Dict[str, Any]]] = None) -> JobStatus:
    """Derive the status: never 'ok' without a `finished` event with status ok.

    A file of the job that cannot be read as what it should be (cut JSON, a FIFO, a folder) gives
    the status `damaged: <file>: <why>`, never an exception.
    """
    try:
        return _job_status(Path(job_dir), events)
    except Damaged as exc:
        return JobStatus("damaged", str(exc), None)


class CannotWrite(OSError):
    """A session or job folder could not be made (a full disk, a read-only folder); the message names the path."""


def _os_why(exc: OSError) -> str:
    """An OS error in words with the path it is about: 'No space left on device: /x/session.json'."""
    if exc.strerror and exc.filename:
        return "%s: %s" % (exc.strerror, exc.filename)
    return exc.strerror or str(exc)


class Damaged(Exception):
    """A job file that is not what it should be; the message names the file and why."""


def _read_dict(path: Path) -> Dict[str, Any]:
    """A JSON object file; Damaged naming the file for anything else (cut, empty, a FIFO, a list ...)."""
    try:
        value = read_json(path)
    except (OSError, ValueError) as exc:
        raise Damaged("%s: %s" % (path.name, _why(exc)))
    if not isinstance(value, dict):
        raise Damaged("%s: holds %s, not a JSON object" % (path.name, type(value).__name__))
    return value


def _why(exc: Exception) -> str:
    if isinstance(exc, ValueError) and not isinstance(exc, UnicodeDecodeError):
        return "not valid JSON (%s)" % exc
    return str(exc)


def _job_status(job_dir: Path, events: Optional[List[Dict[str, Any]]]) -> JobStatus:
    exit_path = job_dir / "exit.json"

    def finished_event() -> Optional[Dict[str, Any]]:  # read only when needed: running jobs skip it
        if events is not None:
            return _finished(events)
        try:
            return last_finished(str(job_dir / "events.jsonl"))
        except OSError as exc:
            raise Damaged("events.jsonl: %s" % exc)

    if not os.path.lexists(str(exit_path)):
        pids = {}
        if (job_dir / "pids.json").exists():
            try:
                pids = _read_dict(job_dir / "pids.json")
            except Damaged:
                pids = {}
        spec: Dict[str, Any] = {}
        try:
            spec = _read_dict(job_dir / "job.json")
        except Damaged:
            pass
        so_far = _running_for(spec)
        if pid_running(pids.get("supervisor")):
            return JobStatus("running", "", None if so_far is None else round(so_far, 1))
        if not pids and so_far is not None and so_far < 10:
            return JobStatus("running", "starting", round(so_far, 1))
        # No exit.json and no supervisor: it was killed (SIGKILL, the OOM killer); say what we can see.
        if not pids:
            return JobStatus("crashed", "supervisor lost (it started no job and wrote no exit.json)", None)
        seen = ["supervisor pid %s gone without exit.json" % pids.get("supervisor")]
        survivors = _survivors(pids)
        if survivors and pid_running(pids.get("watchdog")):
            seen.append("its watchdog is stopping the job's group: %s" % ", ".join(survivors))
        elif survivors:
            seen.append(
                "left alive in the job's process group %s, nothing stops them now: %s; stop them with kill -9 -- -%s"
                % (pids.get("pgid"), ", ".join(survivors), pids.get("pgid"))
            )
        fin = finished_event()
        if fin is not None:
            seen.append("the job had finished %s" % fin.get("status"))
        return JobStatus("crashed", "supervisor lost (%s)" % "; ".join(seen), None)
    rec = _read_dict(exit_path)
    fin = finished_event()
    took = _seconds(rec.get("duration_s"))
    if took is None and rec.get("duration_s") is not None:
        raise Damaged("exit.json: duration_s is %r, not a number of seconds" % (rec.get("duration_s"),))
    dur = took
    after = " after %s s" % _fmt_s(took) if took is not None else ""
    if rec.get("refused"):
        return JobStatus("failed", "refused: %s" % (rec["refused"],), dur)
    if rec.get("timed_out"):
        return JobStatus("timed-out", "no end within the time limit%s" % after, dur)
    if rec.get("stalled"):
        return JobStatus("stalled", "no new event for the stall limit%s" % after, dur)
    if rec.get("cancelled") or (fin and fin.get("status") == "cancelled"):
        return JobStatus("cancelled", "stopped on request%s" % after, dur)
    full = rec.get("disk_full")
    if full:
        where = " while writing %s" % full["file"] if isinstance(full, dict) and full.get("file") else ""
        return JobStatus("crashed", "no space left on device (ENOSPC)%s%s" % (where, after), dur)
    if rec.get("signal"):
        return JobStatus("crashed", "%s%s" % (rec["signal"], after), dur)
    rc = rec.get("returncode")
    if fin is None:
        if rc == 0:
            return JobStatus("failed", "exited 0 without a finished event%s" % after, dur)
        return JobStatus("crashed", "exit code %s without a finished event%s" % (rc, after), dur)
    if fin.get("status") == "ok" and rc == 0:
        return JobStatus("ok", "", dur)
    error = fin.get("error")
    err: Dict[str, Any] = error if isinstance(error, dict) else {}
    msg = str(err.get("message") or ("exit code %s" % rc))
    return JobStatus("failed", msg.splitlines()[0][:200] if msg else "", dur)


def _running_for(spec: Dict[str, Any]) -> Optional[float]:
    """Seconds since the job was created: from its monotonic stamp (a wall-clock jump cannot move it); the wall
    clock only for a job of another boot or an older workbench, never a negative time."""
    took = monotonic.elapsed(spec.get("created_monotonic"))
    if took is not None:
        return took
    created = _seconds(spec.get("created"))
    return None if created is None else max(0.0, time.time() - created)


def _survivors(pids: Dict[str, Any]) -> List[str]:
    """The job's processes still alive after its supervisor died: its group's members (pid and name)."""
    pgid = pids.get("pgid")
    if type(pgid) is not int or pgid <= 1:
        return []
    try:
        members = group_members(pgid)
    except OSError:  # no /proc: only the job's own pid can be asked about
        members = [pids["job"]] if pid_running(pids.get("job")) else []
    return [describe(pid) for pid in sorted(members)]


def _job_order_key(job_dir: Path) -> tuple:
    """(1, seq, created, name) for a job numbered when it started, else (0, 0, created, name) (a damaged one first)."""
    try:
        spec = _read_dict(job_dir / "job.json")
    except Damaged:
        spec = {}
    created = _seconds(spec.get("created")) or 0.0
    seq = spec.get("seq")
    return (1, seq, created, job_dir.name) if type(seq) is int else (0, 0, created, job_dir.name)


def _seconds(value: Any) -> Optional[float]:
    """A finite number of seconds as stored, else None (a string, NaN, a bool ...)."""
    if type(value) in (int, float) and math.isfinite(value):
        return float(value)
    return None


def _fmt_s(value: float) -> str:
    return ("%.0f" % value) if value >= 10 else ("%.1f" % value)


class SessionStore:
    """Creates and lists sessions and their jobs under one root."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time):
        self.root = Path(root)
        self.clock = clock  # unix seconds; it stamps session ids and session.json (tests inject one)

    def create(self, argv: Optional[List[str]] = None) -> str:
        """Make a new session folder and its session.json, logged as the newest session of the root.

        All or nothing: on an OS error (a full disk, a read-only root) the half-made folder is removed
        and CannotWrite names the root and why.
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CannotWrite("cannot create the sessions root %s: %s" % (self.root, _os_why(exc)))
        now = self.clock()
        seq = 1 + max([k[1] for k in map(self._order_key, self._listed()) if k[0] == 1], default=0)
        while True:  # the random suffix tells apart sessions made in one second; mkdir settles a clash
            sid = new_sid(now)
            try:
                (self.root / sid).mkdir()
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise CannotWrite("cannot create a session under %s: %s" % (self.root, _os_why(exc)))
        try:
            (self.root / sid / "jobs").mkdir()
            write_json(
                self.root / sid / "session.json",
                {
                    "id": sid,
                    "seq": seq,  # the order this root made its sessions in, whatever the clock said
                    "created": now,
                    "created_monotonic": monotonic.stamp(),
                    "host": socket.gethostname(),
                    "user": getpass.getuser(),
                    "version": __version__,
                    "argv": argv or [],
                },
            )
        except OSError as exc:
            shutil.rmtree(str(self.root / sid), ignore_errors=True)
            raise CannotWrite(
                "cannot create a session under %s: %s; nothing was left behind" % (self.root, _os_why(exc))
            )
        return sid

    def session_dir(self, sid: str) -> Path:
        """Folder of a session; BadReference for a malformed id, FileNotFoundError naming the root if absent."""
        path = self.root / check_sid(sid)  # an id has no slash or dot: the path stays under the root
        if not (path / "session.json").exists():
            raise FileNotFoundError("no session %r under %s" % (sid, self.root))
        return path

    def sessions(self) -> List[str]:
        """Session ids, oldest first: in the order this root made them (session.json's `seq`, whatever the clock
        said), after those it did not make (imported, older workbench), which go by their created date."""
        return sorted(self._listed(), key=self._order_key)

    def _listed(self) -> List[str]:
        if not self.root.exists():
            return []
        return [p.name for p in self.root.iterdir() if SID_PATTERN.fullmatch(p.name) and (p / "session.json").exists()]

    def _order_key(self, sid: str) -> tuple:
        """(1, seq, created, sid) for a session made here, (0, 0, created, sid) for any other (a damaged one first)."""
        try:
            info = read_json(self.root / sid / "session.json")
        except (OSError, ValueError):
            info = None
        info = info if isinstance(info, dict) else {}
        created = _seconds(info.get("created")) or 0.0
        seq = info.get("seq")
        if type(seq) is not int or (self.root / sid / IMPORT_MARK).exists():
            return (0, 0, created, sid)
        return (1, seq, created, sid)

    def made_here(self, sid: str) -> bool:
        """True for a session this root numbered when it made it (not imported, not from an older workbench)."""
        return self._order_key(sid)[0] == 1

    def named_or_newest(self, sid: Optional[str]) -> str:
        """`sid` checked against the root, else the newest session; FileNotFoundError when there is none."""
        if not sid:
            known = self.sessions()
            sid = known[-1] if known else None
        if sid is None:
            raise FileNotFoundError("no sessions under %s" % self.root)
        self.session_dir(sid)
        return sid

    def info(self, sid: str) -> Dict[str, Any]:
        """The session.json of a session."""
        return read_json(self.session_dir(sid) / "session.json")

    def remember_ui(self, sid: str, **values: Any) -> None:
        """Record UI state (e.g. last_screen) under session.json's `ui`, written atomically."""
        info = self.info(sid)
        ui = info["ui"] if isinstance(info.get("ui"), dict) else {}
        if all(ui.get(k) == v for k, v in values.items()):
            return
        ui.update(values)
        info["ui"] = ui
        write_json(self.session_dir(sid) / "session.json", info)

    def new_job_dir(self, sid: str, kind: str) -> Path:
        """Create jobs/<kind>-NNN (numbered per kind, exclusive mkdir)."""
        jobs = self.session_dir(sid) / "jobs"
        n = 1 + sum(1 for p in jobs.iterdir() if p.name.startswith(kind + "-"))
        while True:
            path = jobs / ("%s-%03d" % (kind, n))
            try:
                path.mkdir()
            except FileExistsError:
                n += 1
                continue
            except OSError as exc:
                raise CannotWrite("cannot create a job folder in session %s (%s): %s" % (sid, jobs, _os_why(exc)))
            try:
                (path / "artifacts").mkdir()
            except OSError as exc:
                shutil.rmtree(str(path), ignore_errors=True)
                raise CannotWrite("cannot create a job folder in session %s (%s): %s" % (sid, jobs, _os_why(exc)))
            return path

    def jobs(self, sid: str) -> List[Path]:
        """Job folders of a session, in start order."""
        jobs = self.session_dir(sid) / "jobs"
        dirs = [p for p in jobs.iterdir() if os.path.lexists(str(p / "job.json"))]
        return sorted(dirs, key=_job_order_key)

    def next_job_seq(self, sid: str) -> int:
        """The number of the next job of a session: its start order, whatever the clock says."""
        return 1 + max([k[1] for k in map(_job_order_key, self.jobs(sid)) if k[0] == 1], default=0)

    def command(self, *words: str) -> str:
        """A command line that runs as printed: `ms-workbench WORDS`, with --sessions when this root is not the default."""
        import shlex

        parts = ["ms-workbench"] + [str(w) for w in words]
        if self.root.resolve() != sessions_root(None):
            parts += ["--sessions", str(self.root)]
        return " ".join(shlex.quote(p) for p in parts)

    def find_job(self, ref: str, sid: Optional[str] = None) -> Path:
        """Resolve 'jid' or 'sid/jid' to a job folder under the root (ids only, never a path)."""
        given = ref
        try:
            if "/" in ref:
                sid, ref = ref.split("/", 1)
                check_sid(sid)
            check_jid(ref)
            if sid is not None:
                check_sid(sid)
        except BadReference as exc:
            raise BadReference("job reference %r: %s" % (given, exc))
        candidates = [sid] if sid else list(reversed(self.sessions()))
        for s in candidates:
            path = self.root / s / "jobs" / ref
            if (path / "job.json").exists():
                return path
        raise FileNotFoundError(
            "no job %r in %s" % (ref, "session " + sid if sid else "any session under %s" % self.root)
        )

    def latest_with_running(self) -> Optional[str]:
        """The newest session that has a running job."""
        for sid in reversed(self.sessions()):
            if any(job_status(j).state == "running" for j in self.jobs(sid)):
                return sid
        return None

    def size_bytes(self, sid: str) -> int:
        """Bytes on disk of a session folder."""
        total = 0
        for dirpath, _, files in os.walk(self.session_dir(sid)):
            for name in files:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
        return total
