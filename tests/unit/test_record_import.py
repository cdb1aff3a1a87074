"""`ms-workbench import`: a real exported record verified file by file, tampering and escaping members refused."""

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.sessions import SID, copy_recorded
from workbench.record.importing import (
    RecordRefused,
    check_members,
    import_record,
    reverify_imported_file,
    verify_record,
)
from workbench.record.write import export_session
from workbench.run.runner import JobRunner, RunnerError
from workbench.session.imported import IMPORT_MARK, imported_mark
from workbench.session.store import SessionStore


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """The recorded session exported once (no screenshots): its <sid>.tar.gz."""
    root = tmp_path_factory.mktemp("source") / "sessions"
    copy_recorded(root)
    out = export_session(SessionStore(root), SID, None, screenshots=None)
    return out / ("%s.tar.gz" % SID)


def rewrite(src: Path, dest: Path, change=None, extra=()) -> Path:
    """Copy an archive member by member; `change(name, data)` may return new bytes; `extra` adds members."""
    with tarfile.open(str(src), "r:gz") as tin, tarfile.open(str(dest), "w:gz") as tout:
        for info in tin.getmembers():
            data = tin.extractfile(info).read() if info.isfile() else None
            if data is not None and change is not None:
                data = change(info.name, data)
                info.size = len(data)
            tout.addfile(info, io.BytesIO(data) if data is not None else None)
        for info, data in extra:
            tout.addfile(info, io.BytesIO(data) if data is not None else None)
    return dest


def flip_byte(suffix: str):
    """A change that flips one byte in the middle of the member ending in `suffix`."""

    def change(name, data):
        if not name.endswith(suffix):
            return data
        i = len(data) // 2
        return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :]

    return change


def nothing_added(root: Path) -> bool:
    return not root.exists() or sorted(p.name for p in root.iterdir()) == []


def test_import_adds_a_read_only_session_that_keeps_its_id_and_host(archive, tmp_path):
    root = tmp_path / "elsewhere"
    done = import_record(root, archive)
    assert done["status"] == "imported" and done["id"] == SID and done["host"] == "devboard-01"
    session = root / SID
    assert json.loads((session / "session.json").read_text())["host"] == "devboard-01"  # byte for byte
    assert imported_mark(session)["files_verified"] == done["files_verified"] > 20
    assert verify_record(session)["files"] == done["files_verified"]  # still verifies in place
    assert not (os.stat(str(session / "jobs" / "train-001" / "events.jsonl")).st_mode & 0o222)
    assert [p.name for p in root.iterdir()] == [SID]  # the temp folder is gone
    with pytest.raises(RunnerError, match="imported record"):
        from workbench.config.layers import load

        JobRunner(SessionStore(root)).start(SID, "drill", load(None, []))


def test_importing_the_same_record_twice_is_a_no_op_that_says_so(archive, tmp_path):
    root = tmp_path / "sessions"
    first = run_cli("import", archive, "--sessions", root)
    assert first.returncode == 0, first.stderr
    before = sorted(str(p) for p in root.rglob("*"))
    again = run_cli("import", archive, "--sessions", root)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("already imported: %s" % SID) and "nothing changed" in again.stdout
    assert sorted(str(p) for p in root.rglob("*")) == before
    listing = run_cli("sessions", "--sessions", root)
    assert "imported from devboard-01" in listing.stdout and "read-only" in listing.stdout
    rows = json.loads(run_cli("sessions", "--json", "--sessions", root).stdout)
    assert rows[0]["imported"]["host"] == "devboard-01"


def test_the_unpacked_folder_imports_too(archive, tmp_path):
    unpacked = tmp_path / "unpacked"
    with tarfile.open(str(archive)) as tar:
        tar.extractall(str(unpacked))
    done = import_record(tmp_path / "sessions", unpacked)
    assert done["status"] == "imported" and (tmp_path / "sessions" / SID / IMPORT_MARK).is_file()


@pytest.mark.parametrize("member", ["export/report.md", "jobs/train-001/artifacts/best.ckpt"])
def test_one_flipped_byte_is_refused_naming_the_file_and_nothing_is_added(archive, tmp_path, member):
    bad = rewrite(archive, tmp_path / "bad.tar.gz", flip_byte(member))
    root = tmp_path / "sessions"
    proc = run_cli("import", bad, "--sessions", root)
    assert proc.returncode == 1
    assert "import refused: %s: SHA-256" % member in proc.stderr and "nothing was added" in proc.stderr
    assert nothing_added(root)


def test_a_dot_dot_member_is_refused_before_anything_is_extracted(archive, tmp_path):
    evil = tarfile.TarInfo("%s/../../escaped.txt" % SID)
    evil.size = 3
    bad = rewrite(archive, tmp_path / "evil.tar.gz", extra=[(evil, b"pwn")])
    root = tmp_path / "sessions"
    proc = run_cli("import", bad, "--sessions", root)
    assert proc.returncode == 1 and "leaves the folder" in proc.stderr and "escaped.txt" in proc.stderr
    assert nothing_added(root) and not (tmp_path / "escaped.txt").exists()


def test_absolute_paths_and_links_out_are_refused(tmp_path):
    for name, kind, target, why in [
        ("/etc/passwd", tarfile.REGTYPE, "", "absolute path"),
        ("%s/jobs/x" % SID, tarfile.SYMTYPE, "../../../etc", "outside the folder"),
        ("%s/jobs/y" % SID, tarfile.LNKTYPE, "/etc/passwd", "outside the folder"),
    ]:
        path = tmp_path / ("t%d.tar" % len(why))
        with tarfile.open(str(path), "w") as tar:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
        with tarfile.open(str(path)) as tar, pytest.raises(RecordRefused, match=why):
            check_members(tar)


def test_an_unlisted_file_is_refused(archive, tmp_path):
    extra = tarfile.TarInfo("%s/jobs/train-001/artifacts/smuggled.ckpt" % SID)
    extra.size = 4
    bad = rewrite(archive, tmp_path / "extra.tar.gz", extra=[(extra, b"abcd")])
    with pytest.raises(RecordRefused, match="smuggled.ckpt: in the record but not in its manifest"):
        import_record(tmp_path / "sessions", bad)
    assert nothing_added(tmp_path / "sessions")


def test_a_local_session_with_the_same_id_is_not_overwritten(archive, tmp_path):
    root = tmp_path / "sessions"
    copy_recorded(root)
    with pytest.raises(RecordRefused, match="already exists .* as a local session"):
        import_record(root, archive)
    assert imported_mark(root / SID) is None


def test_a_reused_checkpoint_of_an_import_is_re_verified(archive, tmp_path):
    root = tmp_path / "sessions"
    import_record(root, archive)
    ckpt = root / SID / "jobs" / "train-001" / "artifacts" / "best.ckpt"
    ok = reverify_imported_file(ckpt)
    assert ok["file"] == "jobs/train-001/artifacts/best.ckpt" and len(ok["sha256"]) == 64
    os.chmod(str(ckpt), 0o644)
    data = bytearray(ckpt.read_bytes())
    data[100] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    with pytest.raises(
        RecordRefused, match="best.ckpt of imported session %s: SHA-256 .* (manifest|session).sha256 says" % SID
    ):
        reverify_imported_file(ckpt)
    local = tmp_path / "local.ckpt"
    shutil.copyfile(str(ckpt), str(local))
    assert reverify_imported_file(local) is None  # not in an imported session: nothing to check


def test_the_record_and_export_of_an_imported_session_say_so(archive, tmp_path):
    from workbench.record.collect import collect
    from workbench.record.markdown.report import render

    root = tmp_path / "sessions"
    import_record(root, archive)
    report = collect(SessionStore(root), SID)
    assert report["session"]["imported"]["host"] == "devboard-01"
    assert "**Imported** from host devboard-01" in render(report)
    proc = run_cli("export", SID, "--no-screenshots", "--sessions", root)
    assert proc.returncode == 2 and "imported record (read-only)" in proc.stderr


def test_manifests_relative_to_their_own_folders_verify_too(archive, tmp_path):
    """The layout where export/manifest.sha256 lists the export folder's files (relative to it) and
    export/session.sha256 the session's files (relative to the session folder)."""
    with tarfile.open(str(archive)) as tar:
        tar.extractall(str(tmp_path / "unpacked"))
    record = tmp_path / "unpacked" / SID
    assert (record / "export" / "session.sha256").is_file()  # the export writes this layout
    listed = [line for line in (record / "export" / "manifest.sha256").read_text().splitlines() if line]
    assert not any("  export/" in line for line in listed)  # relative to the export folder itself
    assert verify_record(record)["files"] >= len(listed)
    report = record / "export" / "report.md"
    report.write_bytes(report.read_bytes().replace(b"#", b"%", 1))
    with pytest.raises(RecordRefused, match="export/report.md: SHA-256 .*, manifest.sha256 says"):
        verify_record(record)
    report.write_bytes(report.read_bytes().replace(b"%", b"#", 1))
    ckpt = record / "jobs" / "train-001" / "artifacts" / "best.ckpt"
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(RecordRefused, match="jobs/train-001/artifacts/best.ckpt: SHA-256 .*, session.sha256 says"):
        import_record(tmp_path / "sessions", record)
    assert nothing_added(tmp_path / "sessions")


def test_an_archive_that_is_not_one_session_folder_is_refused(tmp_path):
    for names, why in [(["a/x", "b/y"], "2 top-level entries"), (["notasession/x"], "not a session id")]:
        path = tmp_path / ("%d.tar.gz" % len(why))
        with tarfile.open(str(path), "w:gz") as tar:
            for name in names:
                info = tarfile.TarInfo(name)
                info.size = 1
                tar.addfile(info, io.BytesIO(b"x"))
        with pytest.raises(RecordRefused, match=why):
            import_record(tmp_path / "sessions", path)
        assert nothing_added(tmp_path / "sessions")


def test_an_imported_session_names_the_commit_its_record_names(archive, tmp_path):
    with tarfile.open(str(archive), "r:gz") as tar:
        rev = json.loads(tar.extractfile("%s/export/reproduce/revision.json" % SID).read())
    done = import_record(tmp_path / "elsewhere", archive)
    if rev.get("git"):
        assert done["revision"].startswith(rev["git"]["commit"])
        assert ("(dirty)" in done["revision"]) == bool(rev["git"]["dirty"])
    else:  # a source tree that is not a git checkout names no commit: nothing to show, said as null
        assert done["revision"] is None
