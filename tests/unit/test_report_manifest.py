"""manifest.sha256 verifies with the real `sha256sum -c`; the archive unpacks to the same files."""

import hashlib
import os
import subprocess
import tarfile
from pathlib import Path

from workbench.record.manifest import (
    SessionFiles,
    manifest_line,
    manifest_text,
    parse_manifest,
    write_archive,
    write_manifest,
)


def _tree(root: Path) -> None:
    (root / "jobs" / "a-001" / "artifacts").mkdir(parents=True)
    (root / "jobs" / "a-001" / "empty").mkdir()
    (root / "session.json").write_text('{"id": "x"}\n')
    (root / "jobs" / "a-001" / "events.jsonl").write_bytes(b'{"v":1}\n')
    (root / "jobs" / "a-001" / "artifacts" / "with space.bin").write_bytes(bytes(range(256)))
    (root / "jobs" / "a-001" / ".events.jsonl.123.tmp").write_text("half-written")
    (root / "export").mkdir()
    (root / "export" / "old-report.md").write_text("stale")
    (root / ".export-staging-abc").mkdir()
    (root / ".export-staging-abc" / "report.md").write_text("staged")


def _hashes(root: Path) -> dict:
    out = {}
    for dirpath, _, files in os.walk(str(root)):
        for name in files:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_snapshot_leaves_out_the_export_staging_and_temp_files(tmp_path):
    _tree(tmp_path)
    files = SessionFiles.snapshot(tmp_path)
    assert sorted(files.entries) == ["jobs/a-001/artifacts/with space.bin", "jobs/a-001/events.jsonl", "session.json"]
    assert "jobs/a-001/empty" in files.dirs
    assert files.total_bytes() == 256 + 8 + 12


def test_manifest_passes_sha256sum_and_a_changed_byte_fails_it(tmp_path):
    _tree(tmp_path)
    files = SessionFiles.snapshot(tmp_path)
    write_manifest(tmp_path / "manifest.sha256", files.entries.values())
    ok = subprocess.run(
        ["sha256sum", "-c", "--strict", "manifest.sha256"], cwd=str(tmp_path), capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count(": OK") == 3
    (tmp_path / "jobs" / "a-001" / "events.jsonl").write_bytes(b'{"v":2}\n')
    bad = subprocess.run(["sha256sum", "-c", "manifest.sha256"], cwd=str(tmp_path), capture_output=True, text=True)
    assert bad.returncode != 0
    assert "jobs/a-001/events.jsonl: FAILED" in bad.stdout


def test_awkward_names_use_the_escaped_form_and_round_trip(tmp_path):
    line = manifest_line("0" * 64, "a\\b\nc")
    assert line == "\\" + "0" * 64 + "  a\\\\b\\nc\n"
    text = manifest_text([("b.txt", "1" * 64), ("a\\b\nc", "0" * 64)])
    assert parse_manifest(text) == {"a\\b\nc": "0" * 64, "b.txt": "1" * 64}
    weird = tmp_path / "odd\\name.txt"
    weird.write_text("x")
    digest = hashlib.sha256(b"x").hexdigest()
    (tmp_path / "m.sha256").write_text(manifest_text([("odd\\name.txt", digest)]))
    out = subprocess.run(["sha256sum", "-c", "--strict", "m.sha256"], cwd=str(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_archive_unpacks_to_the_same_files_and_folders(tmp_path):
    root = tmp_path / "sid"
    _tree(root)
    files = SessionFiles.snapshot(root)
    archive = write_archive(tmp_path / "sid.tar.gz", "sid", list(files.entries.values()), files.dirs)
    out = tmp_path / "unpacked"
    with tarfile.open(str(archive)) as tar:
        names = tar.getnames()
        assert all(n == "sid" or n.startswith("sid/") for n in names)
        tar.extractall(str(out), filter="data")
    expected = {rel: e.sha256 for rel, e in files.entries.items()}
    assert _hashes(out / "sid") == expected
    assert (out / "sid" / "jobs" / "a-001" / "empty").is_dir()
    assert not list(tmp_path.glob(".sid.tar.gz.*"))  # no temp file left behind


def test_large_files_are_hashed_and_archived_from_disk(tmp_path, monkeypatch):
    import workbench.record.manifest as manifest

    monkeypatch.setattr(manifest, "IN_MEMORY_LIMIT_BYTES", 10)
    root = tmp_path / "s"
    root.mkdir()
    (root / "big.ckpt").write_bytes(b"z" * 1000)
    files = SessionFiles.snapshot(root)
    entry = files.get("big.ckpt")
    assert entry.data is None
    assert entry.sha256 == hashlib.sha256(b"z" * 1000).hexdigest()
    archive = write_archive(tmp_path / "s.tar.gz", "s", [entry])
    with tarfile.open(str(archive)) as tar:
        assert tar.extractfile("s/big.ckpt").read() == b"z" * 1000


def _members(archive: Path) -> dict:
    with tarfile.open(str(archive)) as tar:
        return {m.name: (m.type, m.mode, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}


def test_an_archive_begun_in_a_thread_holds_what_one_pass_writes(tmp_path, monkeypatch):
    """The session's part written first (ArchiveHead), the export's appended as a second gzip member: the same
    members and bytes; the real gzip and tar read it whole."""
    import workbench.record.manifest as manifest

    monkeypatch.setattr(manifest, "IN_MEMORY_LIMIT_BYTES", 100)  # the artifact is read from disk in the thread
    root = tmp_path / "sid"
    _tree(root)
    (root / "export").mkdir(exist_ok=True)
    files = SessionFiles.snapshot(root, exclude=("export",))
    late = SessionFiles.snapshot(root / "export").entries["old-report.md"]
    late.rel = "export/old-report.md"
    one = write_archive(tmp_path / "one.tar.gz", "sid", list(files.entries.values()) + [late], files.dirs + ["export"])
    head = manifest.ArchiveHead(tmp_path, "sid", list(files.entries.values()), files.dirs)
    two = write_archive(tmp_path / "two.tar.gz", "sid", [late], ["export"], head=head)
    assert _members(two) == _members(one) and len(_members(one)) > 5
    assert not head.path.exists()  # taken into the archive
    assert subprocess.run(["gzip", "-t", str(two)]).returncode == 0
    listed = subprocess.run(["tar", "-tzf", str(two)], capture_output=True, text=True, check=True)
    assert listed.stderr == ""
    assert sorted(n.rstrip("/") for n in listed.stdout.splitlines()) == sorted(_members(one))


def test_an_archive_head_cancelled_or_failed_leaves_no_file(tmp_path):
    root = tmp_path / "sid"
    _tree(root)
    files = SessionFiles.snapshot(root)
    import workbench.record.manifest as manifest

    head = manifest.ArchiveHead(tmp_path, "sid", list(files.entries.values()), files.dirs)
    head.cancel()
    assert not list(tmp_path.glob(".archive-head.*"))
    gone = SessionFiles.snapshot(root)
    entry = gone.get("session.json")
    entry.data, entry.path, entry.length = None, root / "no-such-file", 5
    head = manifest.ArchiveHead(tmp_path, "sid", [entry])
    try:
        write_archive(tmp_path / "x.tar.gz", "sid", [], head=head)
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("the head's failure was not raised")
    head.cancel()
    assert not list(tmp_path.glob(".archive-head.*")) and not list(tmp_path.glob(".x.tar.gz.*"))
