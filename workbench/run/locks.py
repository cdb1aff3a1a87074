"""Device locks that the nodes of one distributed run share when they run on one machine.

A device lock is normally exclusive: one job per device. Two nodes of one multi-node `train`
run started on the same machine (nodes simulated in network namespaces, or two nodes whose
ranks use the same device number on a shared board) must both hold the device, while every
other job — including a node of another distributed run — stays refused. So a node of a
multi-node run takes the lock *shared* and writes its run's key (msrun's master address, port
and world size) as the first line of the lock file; a later node takes it shared too only when
that key is its own. Exclusive holders never see a shared lock as free, and vice versa.

A small guard lock next to the device lock serialises the check-then-take of the sharers
(ordinary jobs never need it: their exclusive try fails while any sharer holds the lock).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

SHARED_PREFIX = "shared by distributed run "


def run_key(cfg: Dict[str, Any]) -> Optional[str]:
    """The key nodes of one multi-node `train` run share (None when the run is not multi-node)."""
    par = (cfg.get("train") or {}).get("parallel") or {}
    workers = int(par.get("workers") or 1)
    local = int(par.get("local_workers") or workers)
    if workers <= 1 or local >= workers:
        return None
    return "msrun %s:%d, %d workers" % (par["master_addr"], int(par["master_port"]), workers)


def _open(lock_path: Path) -> int:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    # O_NOFOLLOW: in a world-writable folder a planted symlink must not make us write its target.
    return os.open(str(lock_path), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)


def _busy(exc: OSError) -> bool:
    return exc.errno in (errno.EAGAIN, errno.EACCES)


def try_shared_lock(
    lock_path: Path, holder: Dict[str, Any], key: str, open_lock: Callable[[Path], int] = _open
) -> Tuple[Optional[int], Optional[str]]:
    """Take the device lock shared for distributed run `key`; (fd, None) or (None, who holds it).

    `holder` has session, jid, pid (as for an exclusive lock); `open_lock` opens the lock file.
    """
    guard = open_lock(lock_path.with_name(lock_path.name + ".guard"))
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)  # held only for the few calls below
        fd = open_lock(lock_path)
        me = "job %s/%s (pid %s)" % (holder.get("session"), holder.get("jid"), holder.get("pid"))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if not _busy(exc):
                os.close(fd)
                raise
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            if text.split("\n", 1)[0] != SHARED_PREFIX + key:
                os.close(fd)
                return None, text.strip() or "unknown holder"
            try:  # the key matches; an exclusive holder that has just taken it still refuses us
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as exc2:
                os.close(fd)
                if not _busy(exc2):
                    raise
                return None, text.strip() or "unknown holder"
            os.pwrite(fd, ("also %s\n" % me).encode(), len(text.encode()))
            return fd, None
        # First node of the run on this machine: name the run, then let its other nodes in.
        os.ftruncate(fd, 0)
        os.pwrite(fd, ("%s%s\nfirst %s\n" % (SHARED_PREFIX, key, me)).encode(), 0)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:  # an exclusive job slipped in while the lock was converted
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            if not _busy(exc):
                raise
            return None, text or "another job (it took the device a moment ago)"
        return fd, None
    finally:
        os.close(guard)
