"""Import of a hostile record: bounded before one byte is written, regular files only, ids matched whole."""

from __future__ import annotations

import builtins
import io
import os
import shutil
import stat
import tarfile
from pathlib import Path

import pytest

from tests.support.sessions import SID, copy_recorded
from workbench.record import importing
from workbench.record.importing import RecordRefused, import_record
from workbench.record.write import export_session
from workbench.session.store import SessionStore


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("source") / "sessions"
    copy_recorded(root)
    return export_session(SessionStore(root), SID, None, screenshots=None) / ("%s.tar.gz" % SID)


def _repack(src: Path, dest: Path, extra=(), rename=None) -> Path:
    with tarfile.open(str(src), "r:gz") as tin, tarfile.open(str(dest), "w:gz") as tout:
        for info in tin.getmembers():
            data = tin.extractfile(info).read() if info.isfile() else None
            if rename:
                info.name = rename(info.name)
            tout.addfile(info, io.BytesIO(data) if data is not None else None)
        for info, data in extra:
            tout.addfile(info, data)
    return dest


class _Zeros(io.RawIOBase):
    """`n` zero bytes, read in blocks: a large member without holding it in memory."""

    def __init__(self, n: int):
        self.left = n

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = min(len(buf), self.left)
        buf[:n] = b"\0" * n
        self.left -= n
        return n


@pytest.fixture
def no_writes(monkeypatch):
    """Fails the test if the import opens any file for writing under the sessions root."""
    opened = []
    real = builtins.open

    def spy(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wxa"):
            opened.append(str(file))
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(importing, "open", spy, raising=False)
    return opened


def _nothing_under(root: Path) -> bool:
    return not root.exists() or list(root.iterdir()) == []


def test_an_unlisted_huge_member_is_refused_before_anything_is_written(archive, tmp_path, no_writes):
    big = tarfile.TarInfo("%s/jobs/train-001/artifacts/zeros.bin" % SID)
    big.size = 64 << 20
    bad = _repack(archive, tmp_path / "big.tar.gz", extra=[(big, _Zeros(big.size))])
    assert bad.stat().st_size < 2 << 20  # a small archive that would unpack to 64 MB
    root = tmp_path / "sessions"
    with pytest.raises(RecordRefused, match="zeros.bin: in the record but not in its manifest"):
        import_record(root, bad)
    assert no_writes == [] and _nothing_under(root)


def test_more_members_than_the_bound_are_refused_before_writing(archive, tmp_path, monkeypatch, no_writes):
    monkeypatch.setattr(importing, "MAX_MEMBERS", 30)
    extra = []
    for i in range(40):
        info = tarfile.TarInfo("%s/jobs/train-001/artifacts/f%03d" % (SID, i))
        info.size = 1
        extra.append((info, io.BytesIO(b"x")))
    bad = _repack(archive, tmp_path / "many.tar.gz", extra=extra)
    with pytest.raises(RecordRefused, match="more than 30 members"):
        import_record(tmp_path / "sessions", bad)
    assert no_writes == []


def test_a_record_larger_than_the_free_space_is_refused_naming_both(archive, tmp_path, monkeypatch, no_writes):
    real = os.statvfs

    class Tiny:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr(importing.os, "statvfs", lambda p: Tiny() if "sessions" in str(p) else real(p))
    with pytest.raises(RecordRefused, match=r"declares [0-9.]+ MB; .*sessions has 0.0 MB free"):
        import_record(tmp_path / "sessions", archive)
    assert no_writes == []


def test_a_session_id_with_a_trailing_newline_is_no_id(archive, tmp_path):
    bad = _repack(archive, tmp_path / "nl.tar.gz", rename=lambda n: n.replace(SID, SID + "\n", 1))
    root = tmp_path / "sessions"
    with pytest.raises(RecordRefused, match="not a session id"):
        import_record(root, bad)
    assert _nothing_under(root) or [p.name for p in root.iterdir()] == []


def _unpacked(archive: Path, dest: Path) -> Path:
    with tarfile.open(str(archive)) as tar:
        for info in tar.getmembers():
            target = dest.joinpath(*info.name.split("/"))
            if info.isdir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(info).read())
    return dest / SID


def test_an_unpacked_record_holding_a_fifo_is_refused_naming_it(archive, tmp_path):
    folder = _unpacked(archive, tmp_path / "unpacked")
    fifo = folder / "jobs" / "train-001" / "stdout.log"
    fifo.unlink()
    os.mkfifo(str(fifo))
    root = tmp_path / "sessions"
    with pytest.raises(RecordRefused, match="stdout.log is neither a file nor a folder"):
        import_record(root, folder)
    assert [p.name for p in root.iterdir()] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_an_unpacked_record_holding_a_device_is_refused_not_copied_forever(archive, tmp_path):
    folder = _unpacked(archive, tmp_path / "unpacked")
    dev = folder / "jobs" / "train-001" / "stderr.log"
    dev.unlink()
    os.mknod(str(dev), stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
    root = tmp_path / "sessions"
    with pytest.raises(RecordRefused, match="stderr.log is neither a file nor a folder"):
        import_record(root, folder)
    assert [p.name for p in root.iterdir()] == []


def test_a_good_unpacked_record_still_imports(archive, tmp_path):
    folder = _unpacked(archive, tmp_path / "unpacked")
    done = import_record(tmp_path / "sessions", folder)
    assert done["status"] == "imported" and (tmp_path / "sessions" / SID / "session.json").is_file()
    shutil.rmtree(str(folder))
