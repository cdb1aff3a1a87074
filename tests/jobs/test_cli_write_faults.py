"""A folder the CLI must write into that cannot take it (read-only, full): one clear line, an exit code, no half-made folder."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

from tests.support.drills import sets
from tests.support.mounts import tmpfs
from tests.support.waiting import wait_for
from workbench.session.refs import SID_PATTERN


def fill(folder: Path) -> None:
    """Write into `folder` until its file system has not one byte left."""
    fd = os.open(str(folder / "filler"), os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert os.statvfs(str(folder)).f_bavail == 0


def remount_read_only(root: Path) -> None:
    """Remount `root` read-only once it is not busy (the ended job's supervisor may still be closing its files)."""
    last: list = []

    def remounted() -> bool:
        last[:] = [subprocess.run(["mount", "-o", "remount,ro", str(root)], capture_output=True, text=True)]
        return last[0].returncode == 0

    try:
        wait_for(remounted, 30, poll_s=0.1, what="%s to remount read-only" % root)
    except AssertionError as exc:
        raise AssertionError("%s: %s" % (exc, last[0].stderr.strip())) from None


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr


def test_run_into_a_read_only_session_names_the_folder(run_cli, tmp_path):
    with tmpfs(tmp_path / "ro", "1m") as root:
        made = run_cli("run", "drill", "--sessions", root, *sets("drill.steps=1"), timeout=60)
        assert made.returncode == 0, made.stderr
        sid = next(p.name for p in root.iterdir() if SID_PATTERN.fullmatch(p.name))
        remount_read_only(root)
        proc = run_cli("run", "drill", "--session", sid, "--sessions", root, *sets("drill.steps=1"), timeout=60)
        no_traceback(proc)
        assert proc.returncode == 1, proc.stderr
        assert "session %s (%s)" % (sid, root / sid / "jobs") in proc.stderr, proc.stderr
        assert "Read-only file system" in proc.stderr, proc.stderr


def test_a_full_sessions_root_leaves_no_session_folder_behind(run_cli, tmp_path):
    with tmpfs(tmp_path / "full", "256k") as root:
        fill(root)
        proc = run_cli("run", "drill", "--sessions", root, *sets("drill.steps=1"), timeout=60)
        no_traceback(proc)
        assert proc.returncode == 1, proc.stderr
        assert "cannot create a session under %s: No space left on device" % root in proc.stderr, proc.stderr
        left = sorted(p.name for p in root.iterdir() if p.name != "filler")
        assert [n for n in left if SID_PATTERN.fullmatch(n)] == [], left
        assert not any(n.startswith(".") and n.endswith(".tmp") for n in left), left


def test_export_onto_a_full_disk_exits_1_naming_the_file(run_cli, sessions, tmp_path):
    made = run_cli("run", "drill", "--sessions", sessions, *sets("drill.steps=2"), timeout=60)
    assert made.returncode == 0, made.stderr
    with tmpfs(tmp_path / "small", "64k") as mnt:
        out = mnt / "record"
        proc = run_cli("export", "--no-screenshots", "--sessions", sessions, "--out", out, timeout=120)
        no_traceback(proc)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "error: export failed writing %s" % out in proc.stderr, proc.stderr
        assert "No space left on device" in proc.stderr and "no partial record was left" in proc.stderr
        assert not out.exists() or not any(out.iterdir()), sorted(os.listdir(str(out)))
