"""export/deliverable/: the frozen candidate, usable in an interpreter that holds only MindSpore and numpy."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.support.runtime_env import run_bare, runtime_path
from tests.support.sessions import copy_real
from workbench.record.write import export_session
from workbench.session import candidate
from workbench.session.store import SessionStore


@pytest.fixture(scope="module")
def bare_lib(tmp_path_factory) -> Path:
    """Import roots of MindSpore, numpy and their requirements only (no workbench, no jobs, no test tools)."""
    return runtime_path(tmp_path_factory.mktemp("bare") / "lib")


@pytest.fixture(scope="module")
def frozen_record(tmp_path_factory):
    """The real recorded session with train-001 frozen, exported once."""
    root = tmp_path_factory.mktemp("deliv") / "sessions"
    sid = copy_real(root)
    session_dir = root / sid
    cand = candidate.freeze(session_dir, candidate.from_run(session_dir, session_dir / "jobs" / "train-001"), "")
    out = export_session(SessionStore(root), sid, None, screenshots=None)
    return session_dir, out, cand


def test_deliverable_holds_the_candidate_and_verifies(frozen_record):
    session_dir, out, cand = frozen_record
    deliv = out / "deliverable"
    names = sorted(str(p.relative_to(deliv)) for p in deliv.rglob("*") if p.is_file())
    assert names == [
        "README.md",
        "classes.json",
        "deliverable.json",
        "model.ckpt",
        "model.mindir",
        "model.py",
        "reference/inputs.npy",
        "reference/logits.npy",
        "reference/reference.json",
        "requirements.txt",
    ]
    assert hashlib.sha256((deliv / "model.ckpt").read_bytes()).hexdigest() == cand.sha256
    about = json.loads((deliv / "deliverable.json").read_text())
    assert about["candidate"]["sha256"] == cand.sha256 and about["export_job"] == "export-001"
    for name, digest in about["sha256"].items():
        assert hashlib.sha256((deliv / name).read_bytes()).hexdigest() == digest, name
    classes = json.loads((deliv / "classes.json").read_text())
    assert classes["0"] == "T-shirt/top" and classes["9"] == "Ankle boot" and len(classes) == 10
    reqs = [line for line in (deliv / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert [r.split("==")[0].lower() for r in reqs] == ["mindspore", "numpy"] and all("==" in r for r in reqs)
    source = Path(__file__).resolve().parents[2] / "jobs" / "common" / "network.py"
    assert (deliv / "model.py").read_bytes() == source.read_bytes()  # one definition: no copy that can drift
    lock = (out / "reproduce" / "requirements.lock").read_text()
    assert lock.startswith("# Full lock of the jobs interpreter") and "deliverable/requirements.txt" in lock
    report = (out / "report.md").read_text()
    head = report.split("## Acceptance")[0]
    assert "**train-001 epoch" in head and cand.sha256 in head and "[deliverable/](deliverable/README.md)" in head
    steps = [line.split("|")[1].strip() for line in head.splitlines() if line.startswith("| ") and "---" not in line]
    assert steps[1:] == ["split", "training run", "freeze", "test", "alignment", "export", "reference outputs"]
    assert "`reproduce/reference/export-001/logits.npy` (the candidate)" in report
    export_section = report.split("### export-001")[1]
    assert export_section.lstrip().split("\n\n")[1] == "About **the candidate** (checkpoint %s)." % cand.sha256[:12]
    manifest = subprocess.run(["sha256sum", "-c", "manifest.sha256"], cwd=str(out), capture_output=True, text=True)
    assert manifest.returncode == 0 and "deliverable/model.ckpt: OK" in manifest.stdout


def test_model_py_reproduces_the_reference_outputs_with_only_mindspore_and_numpy(frozen_record, bare_lib, tmp_path):
    _, out, _ = frozen_record
    deliv = tmp_path / "handed-over"  # a copy outside the repository, as a colleague receives it
    import shutil

    shutil.copytree(str(out / "deliverable"), str(deliv))
    proc = run_bare(bare_lib, deliv / "model.py", deliv)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "reference outputs reproduced" in proc.stdout
    assert "workbench importable: False" in proc.stdout and "jobs importable: False" in proc.stdout
    # The case where the sentence would be false: expected outputs that are not this checkpoint's.
    logits = np.load(str(deliv / "reference" / "logits.npy"))
    logits[0, 0] += 0.5
    np.save(str(deliv / "reference" / "logits.npy"), logits)
    proc = run_bare(bare_lib, deliv / "model.py", deliv)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "reference outputs NOT reproduced: max |logit difference| 0.5" in proc.stdout


def test_no_candidate_no_deliverable_and_the_record_says_so_first(tmp_path):
    root = tmp_path / "sessions"
    sid = copy_real(root)
    out = export_session(SessionStore(root), sid, None, screenshots=None)
    assert not (out / "deliverable").exists()
    lines = (out / "report.md").read_text().splitlines()
    assert lines[2] == "## The candidate"
    assert lines[4].startswith("**No candidate is frozen in this session.**") and "no deliverable" in lines[4]
    assert json.loads((out / "report.json").read_text())["deliverable"]["written"] is False
    text = "\n".join(lines)
    assert "`reproduce/reference/export-001/logits.npy` (NOT the candidate: checkpoint " in text
    assert "| export-001 | export | checkpoint " in text and "jobs/export-001/artifacts/model.mindir" in text
    assert "no candidate is frozen, so nothing here is the hand-over." in text.split("### export-001")[1]


def test_a_checkpoint_changed_after_the_freeze_is_not_handed_over(tmp_path):
    root = tmp_path / "sessions"
    sid = copy_real(root)
    session_dir = root / sid
    cand = candidate.freeze(session_dir, candidate.from_run(session_dir, session_dir / "jobs" / "train-001"), "")
    ckpt = session_dir / cand.checkpoint
    ckpt.write_bytes(ckpt.read_bytes()[:-1] + b"\0")
    out = export_session(SessionStore(root), sid, None, screenshots=None)
    assert not (out / "deliverable").exists()
    why = json.loads((out / "report.json").read_text())["deliverable"]["why"]
    assert "changed after the freeze" in why and cand.sha256 in why
    assert "No deliverable was written: %s" % why in (out / "report.md").read_text()
