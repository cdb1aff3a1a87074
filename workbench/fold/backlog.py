"""A session's backlog folded in a child process while the UI starts; the UI follows on where that fold ended.

The child is forked before the UI imports Textual, so on two cores one paints while the other folds.
It folds each job's events.jsonl as the UI's tracker would (the same records, up to the last complete
line) and sends the records, the byte offset where each fold ended and the last events the Session
screen lists. A child that fails, is killed or sends anything unreadable leaves the UI to read the
files itself from the start: nothing is lost, only the head start.
"""

from __future__ import annotations

import io
import mmap
import os
import signal
import struct
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

from workbench.fold.handoff import FoldedSession
from workbench.fold.record import JobRecord
from workbench.fold.stream import _blocks, fold_stream
from workbench.fold.tracker import JobTracker
from workbench.session.store import SessionStore
from workbench.system.regular import open_regular

PR_SET_PDEATHSIG = 1  # linux/prctl.h
RECENT_BYTES = 256 << 10  # the first look back from a fold's end for the events the Session screen lists
Listed = Callable[[List[Dict[str, Any]]], List[Dict[str, Any]]]


def recent_events(path: Path, end: int, listed: Listed, want: int) -> List[Dict[str, Any]]:
    """`listed` of the events before byte `end` of an events file, read back from `end` until it gives `want` or the start.

    The events are those the live fold passes on (damaged lines are left out), as the tracker's batches hold them.
    """
    size = RECENT_BYTES
    while True:
        start = max(0, end - size)
        try:
            with open_regular(path) as fh:
                fh.seek(start)
                data = fh.read(end - start)
        except OSError:
            return []
        lines = data.split(b"\n")[:-1]  # `end` follows a newline: the last piece is empty
        if start > 0:
            lines = lines[1:]  # may start inside a line
        events = listed(JobRecord("").ingest_lines(lines))
        if start == 0 or len(events) >= want:
            return events
        size *= 4


def fold_backlog(
    store: SessionStore, sid: str, listed: Listed, want: int, progress: Optional[Callable[[int], None]] = None
) -> FoldedSession:
    """Every job of the session folded as the UI's tracker folds it, each up to its events.jsonl's last complete line.

    `progress` is called with the bytes read so far (of every job) after each block.
    """
    tracker = JobTracker(store, sid)
    tracker.discover()
    folded = FoldedSession()
    for job in tracker.ordered():
        record = tracker.model.record_for(job)
        path = Path(job.reader.path)
        end = _fold_to_last_line(record, path, progress)
        folded.records[job.jid] = record
        folded.offsets[job.jid] = end
        folded.tails[job.jid] = recent_events(path, end, listed, want)
    return folded


def _fold_to_last_line(record: JobRecord, path: Path, progress: Optional[Callable[[int], None]] = None) -> int:
    """Fold a file's complete lines into `record`; the byte offset after its last newline."""
    read = [0]

    def counted() -> Iterator[bytes]:
        for chunk in _blocks(path):
            read[0] += len(chunk)
            if progress is not None:
                progress(len(chunk))
            yield chunk

    tail: List[bytes] = []
    fold_stream(record, counted(), tail)
    return read[0] - len(tail[0] if tail else b"")


def decode(data: bytes) -> FoldedSession:
    """A fold as the child sent it; ValueError saying what is wrong when it is anything else (cut, damaged)."""
    try:
        folded = FoldedSession.load(io.BytesIO(data))
    except Exception as exc:  # a cut or damaged pickle raises any of a dozen types
        raise ValueError("not a fold (%d bytes): %s: %s" % (len(data), type(exc).__name__, exc)) from None
    for jid, record in folded.records.items():
        offset = folded.offsets.get(jid)
        if not isinstance(record, JobRecord) or record.jid != jid:
            raise ValueError("job %r: not its record" % (jid,))
        if type(offset) is not int or offset < 0:
            raise ValueError("job %r: offset %r is not a byte offset" % (jid, offset))
        tail = folded.tails.get(jid, [])
        if not isinstance(tail, list) or not all(isinstance(ev, dict) for ev in tail):
            raise ValueError("job %r: its recent events are not a list of events" % (jid,))
    return folded


class Backlog:
    """A child process folding a session's events files, and what it sent so far (read by a thread)."""

    def __init__(self, pid: int, fd: int, shared: Optional[mmap.mmap] = None) -> None:
        self.pid: Optional[int] = pid  # None once reaped
        self.started_pid = pid
        self._shared = shared  # the child writes there how many bytes it has read
        self.problem: Optional[str] = None  # why its fold was not taken
        self._chunks: List[bytes] = []
        self._error = ""
        self._done = threading.Event()
        threading.Thread(target=self._read, args=(fd,), name="backlog", daemon=True).start()

    @classmethod
    def start(
        cls, store: SessionStore, sid: str, listed: Listed, want: int, nice: int = 0, work: Any = None
    ) -> Optional[Backlog]:
        """Fork the child (before any thread exists: call this first); None when it cannot be forked.

        `work` (a test's) stands for the fold the child runs and returns a FoldedSession.
        """
        parent = os.getpid()
        try:
            shared = mmap.mmap(-1, 8)  # anonymous and shared with the child: its bytes read, for the status bar
            rfd, wfd = os.pipe()
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:
            done = [0]

            def progress(n: int) -> None:
                done[0] += n
                struct.pack_into("q", shared, 0, done[0])

            _child(rfd, wfd, nice, work or (lambda: fold_backlog(store, sid, listed, want, progress)), parent)
        os.close(wfd)
        return cls(pid, rfd, shared)

    def read_bytes(self) -> int:
        """Bytes of the events files the child has read so far."""
        return struct.unpack_from("q", self._shared, 0)[0] if self._shared is not None else 0

    def _read(self, fd: int) -> None:
        try:
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                self._chunks.append(chunk)
        except OSError as exc:
            self._error = str(exc)
        finally:
            os.close(fd)
            self._done.set()

    def ready(self) -> bool:
        """True once the child closed its end (it sent its fold, failed or was killed)."""
        return self._done.is_set()

    def take(self) -> Optional[FoldedSession]:
        """The child's fold (waits for it); None, with `problem` said, when the child failed or sent no fold."""
        self._done.wait()
        code = self._reap(kill=False)
        try:
            if self._error:
                raise ValueError("its pipe could not be read: %s" % self._error)
            folded = decode(b"".join(self._chunks))
        except ValueError as exc:
            self.problem = "the child folding the backlog (pid %s, %s) sent no fold: %s" % (
                self.started_pid,
                "killed by signal %d" % -code if code is not None and code < 0 else "exit %s" % code,
                exc,
            )
            return None
        finally:
            self._chunks = []
        return folded

    def close(self) -> None:
        """Stop the child if it still runs (the UI ended first) and reap it."""
        self._reap(kill=True)

    def _reap(self, kill: bool) -> Optional[int]:
        pid = self.pid
        if pid is None:
            return None
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return None
        finally:
            self.pid = None
        return os.waitstatus_to_exitcode(status)


def _die_with(parent: int) -> None:
    """Linux: the kernel kills this child when the UI that forked it dies (SIGKILL, a lost SSH link), so no fold runs on."""
    try:
        import ctypes  # only in the child: the UI's start-up does not pay for it

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl (not Linux): the child ends when its pipe is gone, as before
        return
    if os.getppid() != parent:  # the UI died before prctl took effect
        os._exit(1)


def _child(rfd: int, wfd: int, nice: int, work: Callable[[], FoldedSession], parent: int) -> None:
    """The forked child: fold, send, exit; it never returns, never runs the parent's exit handlers or draws."""
    code = 1
    try:
        # A session of its own, as the runner starts jobs: with autogroup scheduling (Linux's default) a loaded
        # machine shares the CPU between sessions, so in the UI's session the fold would halve the UI's share.
        os.setsid()
        _die_with(parent)
        os.close(rfd)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the UI's terminal is not the child's to write on
            os.dup2(null, fd)
        if nice > 0:  # as niced as the UI: the jobs keep the CPU first
            os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
        folded = work()
        with os.fdopen(wfd, "wb") as fh:
            folded.dump(fh)
        code = 0
    except BaseException:  # noqa: BLE001  the parent says why (no fold) and reads the files itself
        pass
    finally:
        os._exit(code)
