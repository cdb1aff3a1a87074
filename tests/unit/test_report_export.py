"""The exported record of the recorded session: structure (golden), secrets, manifest and archive."""

import gzip
import hashlib
import json
import os
import re
import subprocess
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from screens.screenshots import shooter
from tests.fixtures.sessions.recorded import API_KEY, SECRET, SID, copy_real, copy_recorded, plant_secrets
from workbench.report.export import export_session
from workbench.report.secrets import MASK
from workbench.session import SessionStore

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
    """The session recorded from the real jobs (tests/fixtures/sessions/record_real.py), exported once."""
    root = tmp_path_factory.mktemp("real") / "sessions"
    sid = copy_real(root)
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
    for name in ("report.md", "report.json", "manifest.sha256", "%s.tar.gz" % SID, "metrics/steps.csv",
                 "metrics/epochs.csv", "metrics/per_class.csv", "figures/train-001-loss.svg",
                 "figures/train-001-step-time.svg", "figures/train-001-confusion.svg", "figures/test-001-confusion.svg"):
        assert (out / name).is_file(), name
    for svg in out.glob("figures/*.svg"):
        ET.parse(str(svg))
    assert not [p for p in session_dir.iterdir() if p.name.startswith(".export-")]


def test_report_structure_matches_the_golden_file(exported_real):
    _, out = exported_real
    got = skeleton((out / "report.md").read_text(encoding="utf-8"))
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
        "env-001", "data-001", "train-001", "test-001", "align-001", "export-001", "drill-001"]
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
    order = [text.index("## %d. " % n) for n in range(1, 12)]
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
    assert "| environment.ASCEND_API_KEY | %s |" % MASK in text
    # The masked copies are named, and the session folder still holds the originals.
    assert _masked(out) == ["jobs/env-001/events.jsonl", "jobs/env-001/job.json", "jobs/env-001/stderr.log"]
    assert "Masked copies" in text and "`jobs/env-001/stderr.log`" in text
    assert SECRET.encode() in (session_dir / "jobs" / "env-001" / "stderr.log").read_bytes()


def test_manifest_verifies_in_the_session_folder_but_for_the_masked_copies(exported):
    _, session_dir, out = exported
    proc = subprocess.run(["sha256sum", "-c", "--strict", "export/manifest.sha256"], cwd=str(session_dir),
                          capture_output=True, text=True)
    failed = sorted(line.rsplit(": ", 1)[0] for line in proc.stdout.splitlines() if not line.endswith(": OK"))
    assert failed == _masked(out), proc.stdout[-2000:] + proc.stderr
    listed = {line.split("  ", 1)[1] for line in (out / "manifest.sha256").read_text().splitlines()}
    on_disk = set(_hashes(session_dir, skip=("export/manifest.sha256", "export/%s.tar.gz" % SID)))
    assert listed == on_disk


def test_archive_unpacks_to_the_same_tree(exported, tmp_path):
    _, session_dir, out = exported
    with tarfile.open(str(out / ("%s.tar.gz" % SID))) as tar:
        tar.extractall(str(tmp_path), filter="data")
    masked = _masked(out)
    unpacked = _hashes(tmp_path / SID, skip=masked)
    assert unpacked == _hashes(session_dir, skip=["export/%s.tar.gz" % SID] + masked)
    proc = subprocess.run(["sha256sum", "-c", "--strict", "export/manifest.sha256"], cwd=str(tmp_path / SID),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:]


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
    proc = subprocess.run(["sha256sum", "-c", "--strict", "export/manifest.sha256"], cwd=str(copy_root / SID),
                          capture_output=True, text=True)
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
    out = export_session(store, SID, None, screenshots=shooter(root, SID, timeout_s=0.01))  # the real renderer, cut short
    shots = json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["screenshots"]
    assert shots == {"files": [], "error": "the screen renderer did not finish within 0 s"}

    def no_display(folder):
        raise OSError("cannot draw into %s" % folder)

    out = export_session(store, SID, None, screenshots=no_display)
    shots = json.loads((out / "report.json").read_text(encoding="utf-8"))["files"]["screenshots"]
    assert shots["files"] == [] and shots["error"].startswith("OSError: cannot draw into ")
    assert (out / "report.md").is_file() and (out / ("%s.tar.gz" % SID)).is_file()
