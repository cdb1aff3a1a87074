"""The exported record of the recorded session: structure (golden), secrets, manifest and archive."""

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from screens.screenshots import shooter
from tests.support.sessions import API_KEY, SECRET, SID, copy_real, copy_recorded, plant_secrets
from workbench.masking.scrub import MASK
from workbench.record.write import export_session
from workbench.session.store import SessionStore

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "report_golden.md"
SCREENS = ["environment", "data", "training", "alignment", "export", "session"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The recorded session with planted secrets, exported once (screenshots included)."""
    root = tmp_path_factory.mktemp("record") / "sessions"
    copy_recorded(root)
    plant_secrets(root / SID)
    store = SessionStore(root)
    before = _hashes(root / SID)
    out = export_session(store, SID, None, screenshots=shooter(root, SID))
    # The session is the truth: exporting it writes only its export/ folder, never a masked file back.
    assert _hashes(root / SID, skip_prefix="export/") == before
    return store, root / SID, out


@pytest.fixture(scope="module")
def exported_real(tmp_path_factory):
    """The session recorded from the real jobs (tests/fixtures/sessions/record_real.py), exported once.

    Its jobs' interpreter is this test's own (sys.executable): the export lists that interpreter's
    packages, so the lock tests need MindSpore and NumPy in it (`requires_mindspore`).
    """
    root = tmp_path_factory.mktemp("real") / "sessions"
    sid = copy_real(root, interpreter=sys.executable)
    out = export_session(SessionStore(root), sid, None, screenshots=shooter(root, sid))
    return root / sid, out


def skeleton(markdown_text: str) -> str:
    """The report's structure: headings, table header rows, and the job, evidence and id of each check row.

    Only the session id varies between recordings of the same jobs here (times, pids, paths and hosts
    appear in cells the skeleton leaves out), so it is the one value normalised.
    """
    lines = markdown_text.splitlines()
    keep, check_cells = [], 0
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.startswith("#") or (line.startswith("|") and nxt.startswith("|---")):
            keep.append(line)
            header = [c.strip() for c in line.strip("|").split("|")]
            check_cells = header.index("check") + 1 if "check" in header and "evidence" in header else 0
        elif check_cells and line.startswith("|") and not line.startswith("|---"):
            keep.append("| %s |" % " | ".join(c.strip() for c in line.strip("|").split("|")[:check_cells]))
        elif not line.startswith("|"):
            check_cells = 0
    return "\n".join(re.sub(r"\d{8}-\d{6}-[0-9a-f]{4}", "<SID>", line) for line in keep) + "\n"


def _hashes(root: Path, skip=(), skip_prefix=None) -> dict:
    out = {}
    for dirpath, _, files in os.walk(str(root)):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel not in skip and not (skip_prefix and rel.startswith(skip_prefix)):
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_export_writes_every_part_of_the_record(exported):
    _, session_dir, out = exported
    assert out == session_dir / "export"
    for name in (
        "report.md",
        "report.json",
        "manifest.sha256",
        "%s.tar.gz" % SID,
        "metrics/steps.csv",
        "metrics/epochs.csv",
        "metrics/per_class.csv",
        "figures/train-001-loss.svg",
        "figures/train-001-step-time.svg",
        "figures/train-001-confusion.svg",
        "figures/test-001-confusion.svg",
    ):
        assert (out / name).is_file(), name
    for svg in out.glob("figures/*.svg"):
        ET.parse(str(svg))
    assert not [p for p in session_dir.iterdir() if p.name.startswith(".export-")]


def test_report_structure_matches_the_golden_file(exported_real):
    """report.md's structure, then appendix/checks.md's (where each check row now lives)."""
    _, out = exported_real
    got = (
        skeleton((out / "report.md").read_text(encoding="utf-8"))
        + "=== appendix/checks.md\n"
        + skeleton((out / "appendix" / "checks.md").read_text(encoding="utf-8"))
    )
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(got, encoding="utf-8")
    want = GOLDEN.read_text(encoding="utf-8")
    assert got == want, "report structure changed; if on purpose, rerun with UPDATE_GOLDEN=1 and review the diff"


def test_recorded_real_session_is_complete(exported_real):
    """Every file an artifact event names was kept with its bytes; every job is there and ended as recorded."""
    _, out = exported_real
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    artifacts = [a for j in report["jobs"] for a in j["artifacts"]]
    assert artifacts and {a["on_disk"] for a in artifacts} <= {"matches", "superseded"}
    assert [j["jid"] for j in report["session"]["jobs"]] == [
        "env-001",
        "data-001",
        "train-001",
        "test-001",
        "align-001",
        "export-001",
        "drill-001",
    ]
    assert [j["jid"] for j in report["jobs_not_ok"]] == ["drill-001"]
    assert report["jobs_not_ok"][0]["label"].startswith("crashed: SIGSEGV")
    assert report["files"]["screenshots"]["error"] is None


def test_report_json_is_the_collected_record(exported):
    _, _, out = exported
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["session"]["id"] == SID
    assert report["jobs_not_ok"][0]["label"] == "crashed: SIGSEGV after 41 s"
    assert report["files"]["figures"]["train-001"]["confusion"] == "figures/train-001-confusion.svg"
    text = (out / "report.md").read_text(encoding="utf-8")
    order = [text.index("## %d. " % n) for n in range(1, 13)]
    assert order == sorted(order)
    assert "crashed: SIGSEGV after 41 s" in text and "|cand − ref| ≤ atol + rtol·|ref|" in text


def test_screenshots_of_the_six_screens_are_rendered_without_mindspore(exported):
    _, _, out = exported
    shots = json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["screenshots"]
    assert shots["error"] is None, shots["error"]
    assert shots["mindspore_imported"] is False
    assert shots["files"] == ["screenshots/%s.svg" % s for s in SCREENS]
    session_svg = (out / "screenshots" / "session.svg").read_text(encoding="utf-8")
    ET.fromstring(session_svg)
    assert "drill-001" in session_svg and "SIGSEGV" in session_svg


def _masked(out: Path) -> list:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["masked"]


def test_planted_secret_is_nowhere_in_the_export_or_the_archive(exported):
    _, session_dir, out = exported
    needles = (SECRET.encode(), API_KEY.encode())
    for path in out.rglob("*"):
        if path.is_file() and not path.name.endswith(".tar.gz"):
            data = path.read_bytes()
            assert not any(n in data for n in needles), path
    archive = out / ("%s.tar.gz" % SID)
    raw = gzip.decompress(archive.read_bytes())
    assert not any(n in raw for n in needles)
    # The variables were seen and masked, not silently dropped.
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "| MS_SECRET_TOKEN | %s |" % MASK in text
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["environment"][0]["summary"]["environment"]["ASCEND_API_KEY"] == MASK
    # The masked copies are named, and the session folder still holds the originals.
    assert _masked(out) == ["jobs/env-001/events.jsonl", "jobs/env-001/job.json", "jobs/env-001/stderr.log"]
    assert "Masked copies" in text and "`jobs/env-001/stderr.log`" in text
    assert SECRET.encode() in (session_dir / "jobs" / "env-001" / "stderr.log").read_bytes()


def _sha256sum(manifest: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real `sha256sum -c --strict` binary, run where a colleague would run it."""
    return subprocess.run(["sha256sum", "-c", "--strict", manifest], cwd=str(cwd), capture_output=True, text=True)


def test_manifest_verifies_inside_the_export_folder(exported):
    _, session_dir, out = exported
    proc = _sha256sum("manifest.sha256", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    listed = {line.split("  ", 1)[1] for line in (out / "manifest.sha256").read_text().splitlines()}
    assert listed == set(_hashes(out, skip=("manifest.sha256", "%s.tar.gz" % SID)))
    # The session's own files are described by session.sha256 as packed: only the masked copies differ on disk.
    proc = _sha256sum("export/session.sha256", session_dir)
    failed = sorted(line.rsplit(": ", 1)[0] for line in proc.stdout.splitlines() if not line.endswith(": OK"))
    assert failed == _masked(out), proc.stdout[-2000:] + proc.stderr
    # A changed byte is caught.
    (out / "report.md").write_text((out / "report.md").read_text() + " ")
    try:
        assert _sha256sum("manifest.sha256", out).returncode == 1
    finally:
        (out / "report.md").write_text((out / "report.md").read_text()[:-1])


def test_archive_unpacks_to_the_same_tree_and_verifies_inside(exported, tmp_path):
    _, session_dir, out = exported
    with tarfile.open(str(out / ("%s.tar.gz" % SID))) as tar:
        tar.extractall(str(tmp_path), filter="data")
    masked = _masked(out)
    unpacked = _hashes(tmp_path / SID, skip=masked)
    assert unpacked == _hashes(session_dir, skip=["export/%s.tar.gz" % SID] + masked)
    proc = _sha256sum("manifest.sha256", tmp_path / SID / "export")
    assert proc.returncode == 0, proc.stdout[-2000:]
    proc = _sha256sum("export/session.sha256", tmp_path / SID)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_full_real_session_report_is_short_and_opens_with_acceptance(exported_real):
    """Under 400 lines; the first 60 hold the acceptance section, the results and throughput; long tables are linked."""
    _, out = exported_real
    lines = (out / "report.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 400
    head = "\n".join(lines[:60])
    assert "## Acceptance" in head and "## Results" in head and "## Throughput" in head
    assert "zero-division rule" in head.lower() and "sample-weighted" in head
    assert not re.search(r"\d\.\d+e\+\d\d", "\n".join(lines)), "a large number written like 1.514e+04"
    assert "evidence data" not in "\n".join(lines)
    for name in ("acceptance", "checks", "tensors", "timing", "classes", "config"):
        assert "](appendix/%s.md)" % name in "\n".join(lines) and (out / "appendix" / ("%s.md" % name)).is_file()
    assert sum(line.count("**best**") for line in lines) == 1


@pytest.mark.requires_mindspore
def test_real_package_verifies_and_holds_code_lock_revision_and_reference(exported_real, tmp_path):
    session_dir, out = exported_real
    sid = session_dir.name
    assert _sha256sum("manifest.sha256", out).returncode == 0
    with tarfile.open(str(out / ("%s.tar.gz" % sid))) as tar:
        names = set(tar.getnames())
        tar.extractall(str(tmp_path), filter="data")
    for rel in (
        "reproduce/model.py",
        "reproduce/requirements.lock",
        "reproduce/revision.json",
        "reproduce/commands.sh",
        "reproduce/reference/export-001/inputs.npy",
        "reproduce/reference/export-001/logits.npy",
        "manifest.sha256",
        "session.sha256",
    ):
        assert "%s/export/%s" % (sid, rel) in names, rel
    unpacked = tmp_path / sid / "export"
    proc = _sha256sum("manifest.sha256", unpacked)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _sha256sum("export/session.sha256", tmp_path / sid).returncode == 0
    assert "def build_net" in (unpacked / "reproduce" / "model.py").read_text()
    lock = (unpacked / "reproduce" / "requirements.lock").read_text().splitlines()
    assert (" of the jobs interpreter %s (Python " % sys.executable) in lock[0], lock[:2]
    assert any(re.match(r"^mindspore==\d", l, re.I) for l in lock) and any(l.startswith("numpy==") for l in lock)
    revision = json.loads((unpacked / "reproduce" / "revision.json").read_text())
    assert len(revision["source_tree_sha256"]) == 64
    assert revision["git"] is None or (
        len(revision["git"]["commit"]) == 40 and isinstance(revision["git"]["dirty"], bool)
    )
    text = (unpacked / "report.md").read_text()
    assert "## 11. Reproduce" in text and "Kernel" not in text and "kernel" in text
    assert "requirements.lock" in text and "reproduce/model.py" in text


def test_training_screenshot_shows_all_ten_classes(exported_real):
    _, out = exported_real
    svg = (out / "screenshots" / "training.svg").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", svg).replace("&#160;", " ")
    for name in ("T-shirt", "Trouser", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"):
        assert name in text, name


def test_export_again_replaces_the_previous_export(exported, tmp_path):
    store, session_dir, _ = exported
    copy_root = tmp_path / "again"
    copy_recorded(copy_root)
    store = SessionStore(copy_root)
    first = export_session(store, SID, None)
    (first / "stale.txt").write_text("from an older export")
    second = export_session(store, SID, None)
    assert second == first and not (second / "stale.txt").exists()
    report = json.loads((second / "report.json").read_text())
    assert report["files"]["screenshots"] == {"files": [], "error": "skipped on request"}
    proc = _sha256sum("manifest.sha256", second)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_export_to_another_folder_leaves_the_session_export_alone(tmp_path):
    root = tmp_path / "sessions"
    copy_recorded(root)
    out = export_session(SessionStore(root), SID, tmp_path / "handover")
    assert out == tmp_path / "handover"
    assert (out / "report.md").is_file() and not (root / SID / "export").exists()
    with tarfile.open(str(out / ("%s.tar.gz" % SID))) as tar:
        names = set(tar.getnames())
    assert "%s/export/report.md" % SID in names and "%s/jobs/train-001/events.jsonl" % SID in names


def test_export_never_replaces_a_folder_that_is_not_a_record(tmp_path):
    root = tmp_path / "sessions"
    copy_recorded(root)
    precious = tmp_path / "desktop"
    precious.mkdir()
    (precious / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="holds no earlier session record"):
        export_session(SessionStore(root), SID, precious)
    assert (precious / "notes.txt").read_text() == "mine"


def test_screenshots_that_fail_cost_the_record_its_pictures_only(tmp_path):
    root = tmp_path / "sessions"
    copy_recorded(root)
    store = SessionStore(root)
    out = export_session(
        store, SID, None, screenshots=shooter(root, SID, timeout_s=0.01)
    )  # the real renderer, cut short
    shots = json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["screenshots"]
    assert shots == {"files": [], "error": "the screen renderer did not finish within 0 s"}

    def no_display(folder, folded):
        raise OSError("cannot draw into %s" % folder)

    out = export_session(store, SID, None, screenshots=no_display)
    shots = json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["screenshots"]
    assert shots["files"] == [] and shots["error"].startswith("OSError: cannot draw into ")
    assert (out / "report.md").is_file() and (out / ("%s.tar.gz" % SID)).is_file()


def test_a_full_disk_while_sealing_leaves_the_previous_record_whole(tmp_path, monkeypatch):
    """Manifest and archive are written in the staging folder: failing there never swaps in a partial record."""
    import errno

    import workbench.record.write as export_mod

    root = tmp_path / "sessions"
    copy_recorded(root)
    store = SessionStore(root)
    first = export_session(store, SID, None)
    before = _hashes(first)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export_mod, "write_archive", disk_full)
    with pytest.raises(OSError, match="No space left"):
        export_session(store, SID, None)
    assert _hashes(first) == before and _sha256sum("manifest.sha256", first).returncode == 0
    assert not [p for p in (root / SID).iterdir() if p.name.startswith((".export-", ".archive-head"))]


@pytest.mark.parametrize("where", ["other/export", "other", "own/rec", "own", "root", "parent"])
def test_export_out_never_writes_into_the_sessions_tree(tmp_path, where, capsys):
    from workbench.cli.main import main
    from workbench.record.write import OutsideOwnFolder

    root = tmp_path / "sessions"
    copy_recorded(root)
    store = SessionStore(root)
    other = store.create()
    out = {
        "other/export": root / other / "export",
        "other": root / other,
        "own/rec": root / SID / "rec",
        "own": root / SID,
        "root": root,
        "parent": tmp_path,
    }[where]
    before = _hashes(tmp_path)
    with pytest.raises(OutsideOwnFolder, match="sessions root"):
        export_session(store, SID, out)
    code = main(["--sessions", str(root), "export", SID, "--out", str(out), "--no-screenshots"])
    assert code == 2 and "nothing written" in capsys.readouterr().err
    assert _hashes(tmp_path) == before and not (root / SID / "rec").exists()
    assert sorted(p.name for p in (root / other).iterdir()) == ["jobs", "session.json"]


def test_export_into_its_own_export_folder_by_name_is_allowed(tmp_path):
    root = tmp_path / "sessions"
    copy_recorded(root)
    out = export_session(SessionStore(root), SID, root / SID / "export")
    assert (out / "report.md").is_file() and out == root / SID / "export"


def test_a_large_file_hashed_while_the_session_is_folded_verifies_in_the_archive(tmp_path, monkeypatch):
    """Files read from disk (over the in-memory limit) are hashed in a thread: session.sha256 still verifies."""
    import workbench.record.write as write

    root = tmp_path / "sessions"
    copy_recorded(root)
    big = root / SID / "jobs" / "train-001" / "big.bin"
    big.write_bytes(os.urandom(1 << 20) * 9)  # over the 8 MB in-memory limit
    hashed = []
    real_run = write._Hashes.run
    monkeypatch.setattr(write._Hashes, "run", lambda self: (hashed.extend(e.rel for e in self.entries), real_run(self)))
    out = export_session(SessionStore(root), SID, tmp_path / "handover")
    assert "jobs/train-001/big.bin" in hashed  # the thread did hash it
    with tarfile.open(str(out / ("%s.tar.gz" % SID))) as tar:
        tar.extractall(str(tmp_path / "unpacked"), filter="data")
    listed = (tmp_path / "unpacked" / SID / "export" / "session.sha256").read_text()
    assert "%s  jobs/train-001/big.bin" % hashlib.sha256(big.read_bytes()).hexdigest() in listed
    proc = _sha256sum("export/session.sha256", tmp_path / "unpacked" / SID)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_an_export_stopped_while_folding_leaves_no_thread_nor_file(tmp_path, monkeypatch):
    """Ctrl+C during the fold: the archive's head (begun in a thread) is stopped and removed, the threads joined."""
    import threading

    import workbench.record.write as write

    root = tmp_path / "sessions"
    copy_recorded(root)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(write, "collect", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export_session(SessionStore(root), SID, None)
    assert not [p for p in (root / SID).iterdir() if p.name.startswith((".export-", ".archive-head"))]
    assert not [t for t in threading.enumerate() if t.name.startswith("export-")]


def _unpacked_export(out: Path, into: Path) -> Path:
    with tarfile.open(str(out / ("%s.tar.gz" % SID))) as tar:
        names = tar.getnames()
        tar.extractall(str(into), filter="data")
    assert len(names) == len(set(names)), "a member written twice"
    return into / SID / "export"


@pytest.mark.parametrize("changed", [False, True])
def test_steps_csv_archived_while_the_pictures_are_drawn_is_the_file_the_manifest_names(tmp_path, monkeypatch, changed):
    """A large steps.csv goes into the archive's first part once masked (_pack_early), hashed there: the archive
    holds the export folder's bytes and both manifests verify; a steps.csv changed after that is archived again."""
    import workbench.record.write as write

    monkeypatch.setattr(write, "IN_MEMORY_LIMIT_BYTES", 100)  # the recorded session's steps.csv counts as large
    root = tmp_path / "sessions"
    copy_recorded(root)
    queued = []
    real_pack = write._pack_early

    def pack(stage, head):
        early = real_pack(stage, head)
        queued.extend(early)
        if changed:  # rewritten through a new file, as every export file is
            steps = stage / "metrics" / "steps.csv"
            write.write_text(steps, steps.read_text() + "train-001,9,9,0.5,1.0,64,,steady\n")
        return early

    monkeypatch.setattr(write, "_pack_early", pack)
    out = export_session(SessionStore(root), SID, tmp_path / "handover")
    assert queued == ["metrics/steps.csv"]
    unpacked = _unpacked_export(out, tmp_path / "unpacked")
    steps = (out / "metrics" / "steps.csv").read_bytes()
    assert (unpacked / "metrics" / "steps.csv").read_bytes() == steps
    assert steps.endswith(b"train-001,9,9,0.5,1.0,64,,steady\n") == changed
    assert _hashes(unpacked) == _hashes(out, skip=("%s.tar.gz" % SID,))
    for manifest, cwd in (
        ("manifest.sha256", out),
        ("manifest.sha256", unpacked),
        ("export/session.sha256", unpacked.parent),
    ):
        proc = _sha256sum(manifest, cwd)
        assert proc.returncode == 0, proc.stdout[-2000:]
