"""The steps.csv spool's second process: a long run's batched lines formatted into CSV rows on the other core.

The export folds the events once (workbench.fold.stream); formatting every step's row of metrics/steps.csv
from the batched lines cost about a third of that fold at 1 M events, on the core that folds. So the
StepTable sends each block of text it folded, with the spans of its batched lines (and any rows it
formatted itself, in order), to this process, which writes the rows to a file of its own while the
fold goes on; the export then copies that file after the spool's.

Messages on stdin: an 8-byte little-endian length, then a pickle of a list of items, each a row text
(str) or a batched line's span (steptable.span_rows). At the end of its input the process writes one
JSON line, {"messages": n, "bytes": size of its file}, and exits 0; finish() checks both against what
was sent and what is on disk, so a process that died or wrote short never passes as a whole steps.csv.
"""

from __future__ import annotations

import json
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Dict, List, Optional

from workbench.fold.steptable import span_rows

QUEUED = 16  # messages (about 1 MB each) waiting for the pipe before send() waits
FINISH_TIMEOUT_S = 300.0
HEAD = 8


def _env() -> Dict[str, str]:
    """The environment of the process: this checkout's packages first, as the export's own."""
    env = dict(os.environ)
    project = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (project, env.get("PYTHONPATH", "")) if p)
    return env


def parse_status(stdout: bytes) -> Optional[Dict[str, int]]:
    """The process's last line, {"messages": int, "bytes": int}; None for anything else."""
    lines = stdout.strip().splitlines()
    if not lines:
        return None
    try:
        got = json.loads(lines[-1].decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        return None
    if not isinstance(got, dict) or set(got) != {"messages", "bytes"}:
        return None
    if not all(type(v) is int and v >= 0 for v in got.values()):
        return None
    return got


class SpoolProcess:
    """The parent's side: send() queues items (a thread writes them to the pipe), finish() returns the rows' file."""

    def __init__(self) -> None:
        # a file with no name (gone with both processes, whatever ends them), written through the descriptor handed on
        self.rows: IO[bytes] = tempfile.TemporaryFile(prefix="ms-workbench-steps-", suffix=".csv")
        fd = self.rows.fileno()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "workbench.fold.spoolproc", str(fd)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
                pass_fds=(fd,),
            )
        except OSError:
            self.rows.close()
            raise
        self.sent = 0
        self.error: Optional[OSError] = None
        self.queue: queue.Queue[Optional[bytes]] = queue.Queue(maxsize=QUEUED)
        self.writer = threading.Thread(target=self._write, name="steps-spool", daemon=True)
        self.writer.start()

    def send(self, items: List[Any]) -> None:
        """Queue one message: row texts and batched lines' spans, in order."""
        data = pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)
        self.queue.put(len(data).to_bytes(HEAD, "little"))
        self.queue.put(data)
        self.sent += 1

    def _write(self) -> None:
        pipe = self.proc.stdin
        assert pipe is not None
        while True:
            msg = self.queue.get()
            if msg is None:
                break
            if self.error is None:
                try:
                    pipe.write(msg)
                except OSError as exc:  # the process ended early: finish() says how; what follows is dropped
                    self.error = exc
        try:
            pipe.close()
        except OSError as exc:
            self.error = self.error or exc

    def finish(self) -> IO[bytes]:
        """Wait for the process; its rows' file, at its start. OSError when it failed or the file is not what it wrote."""
        self.queue.put(None)
        self.writer.join()
        self.proc.stdin = None  # closed by the thread: communicate() only reads
        try:
            out, err = self.proc.communicate(timeout=FINISH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise OSError("the steps.csv spool process did not finish within %.0f s" % FINISH_TIMEOUT_S)
        status = parse_status(out)
        size = os.fstat(self.rows.fileno()).st_size
        if self.proc.returncode != 0 or status is None or status["messages"] != self.sent or status["bytes"] != size:
            tail = (err.decode("utf-8", "replace").strip().splitlines() or ["no error output"])[-1]
            raise OSError(
                "the steps.csv spool process failed (exit %s, %s of %d messages, file %d bytes): %s"
                % (
                    self.proc.returncode,
                    status["messages"] if status else "none",
                    self.sent,
                    size,
                    tail[:300],
                )
            )
        self.rows.seek(0)
        return self.rows

    def close(self) -> None:
        """Stop the process if it still runs and drop its file."""
        if self.proc.poll() is None:
            self.proc.kill()  # a write blocked on its pipe fails now, and the thread drops what is queued
        if self.writer.is_alive():
            self.queue.put(None)
            self.writer.join()
        self.proc.stdin = None
        self.proc.communicate()
        self.rows.close()


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    chunks, left = [], n
    while left:
        got = stream.read(left)
        if not got:
            break
        chunks.append(got)
        left -= len(got)
    return b"".join(chunks)


def main(argv: List[str]) -> int:
    """Format the messages on stdin into the file of descriptor argv[1] (from its start); print the status line."""
    stdin = sys.stdin.buffer
    messages = 0
    with open(int(argv[1]), "w", encoding="utf-8", newline="") as out:
        while True:
            head = _read_exact(stdin, HEAD)
            if not head:
                break
            data = _read_exact(stdin, int.from_bytes(head, "little")) if len(head) == HEAD else b""
            if len(head) < HEAD or len(data) < int.from_bytes(head, "little"):
                print("a torn message after %d whole ones" % messages, file=sys.stderr)
                return 1
            items = pickle.loads(data)
            out.write("".join([item if isinstance(item, str) else span_rows(item) for item in items]))
            messages += 1
        out.flush()
        size = os.fstat(out.fileno()).st_size
    print(json.dumps({"messages": messages, "bytes": size}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
