"""A full disk, told truthfully: space set aside for the final status, ENOSPC named, partial files removed.

The supervisor reserves a little space when it starts, so that on a disk the job has
filled it can still write exit.json; when a job ends badly on a (nearly) full file system it
records that, with the file the job was writing last, and removes the job's partial temp
files (`*.tmp` under artifacts/) so that nothing half-written looks like a result.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

from workbench.system.regular import open_regular

RESERVE_NAME = ".exit.reserve"
RESERVE_BYTES = 64 * 1024  # exit.json is under 2 KB; a temp copy and a directory block fit many times
FULL_BELOW_BYTES = 256 * 1024  # free space under this, after a bad end, means the disk was full
ENOSPC_TAIL_BYTES = 65536  # the end of stderr.log searched for the file a full disk refused
_ENOSPC_PATH = re.compile(r"(?:No space left on device|ENOSPC|Errno 28)[^\n]*?['\"]([^'\"\n]+)['\"]")
_OUR_FILES = {RESERVE_NAME, "exit.json", "pids.json", "supervisor.log", "job.json"}


def reserve(job_dir: Path) -> Optional[Path]:
    """Set RESERVE_BYTES aside in the job folder (real blocks, not a sparse file); None if there is no room."""
    path = Path(job_dir) / RESERVE_NAME
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            done = 0
            while done < RESERVE_BYTES:
                done += os.write(fd, b"\0" * (RESERVE_BYTES - done))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        try:
            path.unlink()
        except OSError:
            pass
        return None
    return path


def release(reserved: Optional[Path]) -> None:
    """Give the reserved space back, just before the final status is written."""
    if reserved is not None:
        try:
            reserved.unlink()
        except OSError:
            pass


def free_bytes(path: Path) -> int:
    """Bytes this process may still write on the file system of `path` (root may use the reserved blocks)."""
    st = os.statvfs(str(path))
    return st.f_frsize * (st.f_bfree if os.geteuid() == 0 else st.f_bavail)


def _enospc_in_log(job_dir: Path) -> Optional[str]:
    """The file named by the last 'No space left on device' in the job's stderr.log tail, if any."""
    try:
        with open_regular(Path(job_dir) / "stderr.log") as fh:  # never a FIFO or /dev/zero: no block, no endless read
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - ENOSPC_TAIL_BYTES))
            tail = fh.read(ENOSPC_TAIL_BYTES).decode("utf-8", "replace")
    except OSError:  # NotRegular too
        return None
    found = _ENOSPC_PATH.findall(tail)
    return found[-1] if found else None


def _last_written(job_dir: Path) -> Optional[str]:
    """The file the job was most likely writing: its newest temp file, else its newest file.

    A temp file (`*.tmp`) is a write that never finished; the logs are left out of the second
    choice because a dying job touches stderr.log last even when nothing fits any more.
    """
    newest: Dict[bool, Any] = {}
    for path in Path(job_dir).rglob("*"):
        try:
            if path.is_symlink() or not path.is_file() or path.name in _OUR_FILES or path.suffix == ".log":
                continue
            mtime = path.stat().st_mtime
        except OSError:
            continue
        temp = path.name.endswith(".tmp")
        if temp not in newest or mtime > newest[temp][0]:
            newest[temp] = (mtime, path)
    best = newest.get(True) or newest.get(False)
    return None if best is None else str(best[1].relative_to(job_dir))


def disk_full(job_dir: Path) -> Optional[Dict[str, Any]]:
    """{error, free_bytes, file} when the job folder's file system is full, else None."""
    try:
        free = free_bytes(Path(job_dir))
    except OSError:
        return None
    named = _enospc_in_log(job_dir)
    if free >= FULL_BELOW_BYTES and named is None:
        return None
    return {
        "error": "ENOSPC",
        "message": os.strerror(errno.ENOSPC),
        "free_bytes": free,
        "file": named or _last_written(job_dir),
        "file_from": "stderr.log" if named else "the job's newest temp file, else its newest file",
    }


def remove_partials(job_dir: Path) -> List[str]:
    """Delete temp files (`*.tmp`) under artifacts/ of a job that did not end ok; return what went."""
    removed: List[str] = []
    artifacts = Path(job_dir) / "artifacts"
    if not artifacts.is_dir():
        return removed
    for path in sorted(artifacts.rglob("*.tmp")):
        try:
            if path.is_symlink() or path.is_file():
                path.unlink()
                removed.append(str(path.relative_to(job_dir)))
        except OSError:
            pass
    return removed
