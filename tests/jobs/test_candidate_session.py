"""The issue's session replayed with real jobs: nothing frozen stops export naming freeze, initial weights never count,
after freeze export and test take the candidate, a second test evaluation is refused then counted against the verdict."""

from __future__ import annotations

import json
import re
import shlex

from tests.support import variants
from tests.support.cli import run_cli
from workbench.events.protocol import read_all


def _checks(job_dir):
    return [e for e in read_all(str(job_dir / "events.jsonl")) if e.get("type") == "check"]


def _accept(root, sid, *sets):
    proc = run_cli("accept", sid, "--json", "--sessions", root, *sets, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def test_the_candidate_session(tmp_path):
    root = tmp_path / "sessions"
    session = variants.copy_real(root, frozen=False)
    sid, jobs = session.name, session / "jobs"
    fast = ("--set", "export.formats=[ckpt]", "--set", "export.batch_sizes=[1]")

    refused = run_cli("run", "export", "--session", sid, "--sessions", root, *fast, timeout=60)
    assert refused.returncode == 2 and not (jobs / "export-002").exists()
    printed = re.search(r"`(ms-workbench freeze [^`]+)`", refused.stderr).group(1)
    assert printed == "ms-workbench freeze %s --sessions %s" % (sid, root)

    init = run_cli(
        "run", "export", "--session", sid, "--sessions", root, "--set", "export.from=init", *fast, timeout=300
    )
    assert init.returncode == 0, init.stdout + init.stderr
    assert {c.get("subject") for c in _checks(jobs / "export-002")} == {"initial weights"}

    frozen = run_cli(*shlex.split(printed)[1:], timeout=60)  # the printed command, as printed
    assert frozen.returncode == 0, frozen.stderr
    cand = json.loads((session / "candidate.jsonl").read_text().splitlines()[-1])
    assert cand["run"] == "train-001" and cand["sha256"] in frozen.stdout

    export = run_cli("run", "export", "--session", sid, "--sessions", root, *fast, timeout=300)
    assert export.returncode == 0, export.stdout + export.stderr
    spec = json.loads((jobs / "export-003" / "job.json").read_text())
    assert spec["candidate"]["sha256"] == cand["sha256"]
    assert {c.get("subject") for c in _checks(jobs / "export-003")} == {"checkpoint:" + cand["sha256"]}

    code, acc = _accept(root, sid)
    assert acc["candidate"]["sha256"] == cand["sha256"]
    assert any(o["job"] == "export-002" and o["subject"] == "initial weights" for o in acc["about_other"])
    framework = next(lay for lay in acc["layers"] if lay["layer"] == "framework")
    reload_rows = [r for r in framework["deciding"] if r["check"] == "ckpt-reload"]
    assert reload_rows and {r["job"] for r in reload_rows} == {"export-003"}

    again = run_cli("run", "test", "--session", sid, "--sessions", root, timeout=60)
    assert again.returncode == 2 and "is spent: test-001 (train-001" in again.stderr
    forced = run_cli("run", "test", "--session", sid, "--sessions", root, "--test-set-again", timeout=300)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert {c.get("subject") for c in _checks(jobs / "test-002")} == {"checkpoint:" + cand["sha256"]}
    code, acc = _accept(root, sid)
    task = next(lay for lay in acc["layers"] if lay["layer"] == "task")
    spent = next(r for r in task["deciding"] if r["check"] == "test-evaluations")
    assert code == 1 and spent["level"] == "observed-fail"
    assert "test-001 (train-001" in spent["detail"] and "test-002 (train-001" in spent["detail"]
