"""`ms-workbench export` on sessions of real jobs: a finished one with a crash, and one still running."""

from __future__ import annotations

import csv
import io
import subprocess
import tarfile
from pathlib import Path

from workbench.record.write import export_session
from workbench.run.runner import JobRunner
from workbench.session.store import SessionStore
from workbench.system.atomic import read_json


def _sid_of(job_dir: Path) -> str:
    return job_dir.parent.parent.name


def test_export_of_real_jobs_with_a_crash(run_cli, sessions):
    ok = run_cli("run", "drill", "--sessions", sessions, "--set", "drill.steps=20", "--set", "drill.rate=400")
    assert ok.returncode == 0, ok.stderr
    sid = ok.stderr.split(" in session ")[1].split(":")[0]
    crash = run_cli(
        "run",
        "drill",
        "--sessions",
        sessions,
        "--session",
        sid,
        "--set",
        "drill.steps=50",
        "--set",
        "drill.rate=400",
        "--set",
        "drill.crash_signal=SIGSEGV",
        "--set",
        "drill.crash_after=5",
    )
    assert crash.returncode == 1

    proc = run_cli("export", sid, "--sessions", sessions, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = Path(proc.stdout.strip())
    session_dir = sessions / sid
    assert out == session_dir / "export"

    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| drill-002 | drill | crashed: SIGSEGV after " in report
    assert "python -m workbench run drill --sessions " in report  # the command lines
    steps = list(csv.DictReader(io.StringIO((out / "metrics" / "steps.csv").read_text())))
    assert [s["job"] for s in steps].count("drill-001") == 20
    assert [s["job"] for s in steps].count("drill-002") == 5

    verify = subprocess.run(
        ["sha256sum", "-c", "--strict", "manifest.sha256"], cwd=str(out), capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout[-2000:]
    verify = subprocess.run(
        ["sha256sum", "-c", "--strict", "export/session.sha256"], cwd=str(session_dir), capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout[-2000:]  # nothing was masked, so the originals match too
    # Nothing of an ordinary record looks secret: no path or value was masked.
    for path in session_dir.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".csv", ".yaml", ".svg"):
            assert b"[masked]" not in path.read_bytes(), path
    with tarfile.open(str(out / ("%s.tar.gz" % sid))) as tar:
        names = set(tar.getnames())
    for rel in (
        "session.json",
        "jobs/drill-002/exit.json",
        "jobs/drill-002/events.jsonl",
        "export/report.md",
        "export/manifest.sha256",
        "export/screenshots/session.svg",
    ):
        assert "%s/%s" % (sid, rel) in names, rel

    shots = read_json(out / "report.json")["files"]["screenshots"]
    assert shots["error"] is None, shots["error"]
    session_svg = (out / "screenshots" / "session.svg").read_text(encoding="utf-8")
    assert "SIGSEGV" in session_svg and "drill-001" in session_svg


def test_export_while_a_job_runs_says_so_and_the_archive_is_consistent(run_cli, sessions, wait_for, tmp_path):
    proc = run_cli(
        "run", "drill", "--detach", "--sessions", sessions, "--set", "drill.steps=3000", "--set", "drill.rate=100"
    )
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(proc.stdout.strip())
    sid = _sid_of(job_dir)
    events = job_dir / "events.jsonl"
    wait_for(lambda: events.exists() and events.read_bytes().count(b"\n") >= 10, 30, what="ten events")
    try:
        out = export_session(SessionStore(sessions), sid, None)
        report = read_json(out / "report.json")
        assert report["still_running"] == ["drill-001"]
        text = (out / "report.md").read_text(encoding="utf-8")
        assert "**Written while jobs were still running** (drill-001)" in text
        assert report["jobs"][0]["events"] >= 10
        # The archive holds one snapshot, and its manifest verifies inside it even as the job writes on.
        with tarfile.open(str(out / ("%s.tar.gz" % sid))) as tar:
            tar.extractall(str(tmp_path), filter="data")
        for manifest, cwd in (
            ("manifest.sha256", tmp_path / sid / "export"),
            ("export/session.sha256", tmp_path / sid),
        ):
            verify = subprocess.run(
                ["sha256sum", "-c", "--strict", manifest], cwd=str(cwd), capture_output=True, text=True
            )
            assert verify.returncode == 0, verify.stdout[-2000:]
        snapshot = (tmp_path / sid / "jobs" / "drill-001" / "events.jsonl").read_bytes()
        assert events.read_bytes().startswith(snapshot[: snapshot.rfind(b"\n") + 1])
    finally:
        JobRunner.cancel(job_dir)
        JobRunner.wait(job_dir, timeout_s=30)
