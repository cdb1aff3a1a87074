"""Creation order of a folder's entries (sessions of a root, jobs of a session), as this machine made them.

Dates in session.json and job.json come from the wall clock, which may have been wrong or stepped;
the `.order` log next to the entries, one name a line appended as each is made, says which came
first whatever the clock said. Entries it does not list (made by an older workbench, imported)
come before those it lists, by their dates.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Dict

from workbench.system.regular import kind_of, read_regular

ORDER_FILE = ".order"
MAX_BYTES = 64 * 1024 * 1024  # some two million names


def append(folder: Path, name: str) -> None:
    """Add `name` as the newest entry of `folder`; OSError naming the log when it cannot be written."""
    path = Path(folder) / ORDER_FILE
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(str(path), flags, 0o644)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError("%s is %s, not the creation-order log" % (path, kind_of(mode)))
        line = (name + "\n").encode("utf-8")
        if os.write(fd, line) != len(line):  # one short write: the line is torn, the reader skips it
            raise OSError("%s: the line for %s was cut short" % (path, name))
    finally:
        os.close(fd)


def ranks(folder: Path) -> Dict[str, int]:
    """{name: position} of the entries the log lists, first made first; {} when there is no readable log."""
    try:
        data = read_regular(Path(folder) / ORDER_FILE, MAX_BYTES)
    except OSError:
        return {}
    out: Dict[str, int] = {}
    for i, raw in enumerate(data.split(b"\n")[:-1]):  # a last line without its newline is torn: not counted
        name = raw.decode("utf-8", "replace")
        if name and name not in out:
            out[name] = i
    return out
