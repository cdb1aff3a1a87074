"""Opening a file another process wrote: a regular file only, never blocking, read within a bound.

A session folder is written by jobs and may be damaged or planted: a FIFO in place of a file would
block a reader forever, /dev/zero would be read forever, a directory would raise deep in a parser.
Every reader of a session opens through here and gets NotRegular, an OSError naming the file and
what it is, instead. Pure code for Python 3.9.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Union

PathLike = Union[str, "os.PathLike[str]"]
JSON_MAX_BYTES = 64 << 20  # job.json, exit.json, session.json are a few KB; a report.json a few MB


class NotRegular(OSError):
    """The path is not a regular file (a FIFO, device, socket or directory), or is larger than allowed."""


def kind_of(mode: int) -> str:
    """What a file mode is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: PathLike) -> IO[bytes]:
    """Open for reading in binary, refusing anything but a regular file before one byte is read."""
    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular("%s is %s, not a regular file" % (os.fspath(path), kind_of(mode)))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: PathLike, max_bytes: int = JSON_MAX_BYTES) -> bytes:
    """The whole content of a regular file of at most `max_bytes`; NotRegular otherwise."""
    with open_regular(path) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotRegular("%s is larger than %d bytes" % (os.fspath(path), max_bytes))
    return data
