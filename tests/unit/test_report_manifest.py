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
