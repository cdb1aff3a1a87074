"""Issue 18.5 (writer): a write cut short (full disk, file size limit, signal) never merges two lines."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.cli import cli_env
from tests.support.mounts import tmpfs
from workbench.events.protocol import EventWriter, read_all, validate_file

# A child that writes one line, then one cut off by RLIMIT_FSIZE, then one after the limit is lifted.
CUT_SHORT = textwrap.dedent("""
    import os, resource, signal, sys
    from workbench.events.protocol import EventWriter
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "raise":  # a signal arrives mid-write and its handler raises
        def on_xfsz(signum, frame):
            raise KeyboardInterrupt("SIGXFSZ")
        signal.signal(signal.SIGXFSZ, on_xfsz)
    else:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    writer = EventWriter(path)
    writer.emit("log", level="info", message="first")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 40, hard))
    try:
        if mode == "many":
            writer.emit_many([("log", {"level": "info", "message": "m%d" % i}) for i in range(3)])
        else:
            writer.emit("log", level="info", message="x" * 200)
    except (OSError, KeyboardInterrupt) as exc:
        print("cut:", type(exc).__name__)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    writer.emit("log", level="info", message="after")
    writer.close()
""")


def _lines(path: Path):
    return path.read_bytes().split(b"\n")


@pytest.mark.parametrize("mode", ["ignore", "raise", "many"])
def test_a_write_cut_short_leaves_no_partial_line_in_front_of_the_next(tmp_path, mode):
    path = tmp_path / "events.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", CUT_SHORT, str(path), mode], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cut:"), proc.stdout
    events = read_all(str(path))
    assert events[0]["message"] == "first"
    assert events[-1]["type"] == "log" and events[-1]["message"] == "after", _lines(path)
    assert events[-1]["seq"] == 1  # the cut event never counted: seq stays contiguous
    torn = [e for e in events if e.get("raw")]
    assert len(torn) == 1 and len(torn[0]["message"]) <= 40
    problems = validate_file(str(path))
    assert len(problems) == 1 and "not a JSON event" in problems[0], problems


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs (needs root and mount rights; skipped elsewhere, where the RLIMIT tests still run)."""
    with tmpfs(tmp_path / "fs", "64k") as mnt:
        yield mnt


def test_enospc_mid_line_on_a_full_tmpfs(small_tmpfs):
    filler = small_tmpfs / "filler"
    filler.write_bytes(b"\0" * 8192)
    path = small_tmpfs / "events.jsonl"
    writer = EventWriter(str(path))
    written = 0
    with pytest.raises(OSError) as info:
        while True:
            writer.emit("log", level="info", message="y" * 900)
            written += 1
    assert info.value.errno == errno.ENOSPC
    assert path.stat().st_size % 4096 == 0  # the disk filled part-way through a line
    filler.unlink()  # space comes back (someone cleaned up)
    writer.emit("log", level="info", message="after")
    writer.close()
    events = read_all(str(path))
    assert events[-1]["message"] == "after" and events[-1]["seq"] == written
    assert sum(1 for e in events if e.get("raw")) == 1
    assert [e["seq"] for e in events if not e.get("raw")] == list(range(written + 1))
