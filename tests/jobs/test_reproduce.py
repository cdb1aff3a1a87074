"""`ms-workbench reproduce`: a record's candidate lineage re-run in a new sessions root, and what differs."""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli
from tests.support.sessions import copy_real
from workbench.record.write import export_session
from workbench.session import candidate
from workbench.session.store import SessionStore

CPU = ["device.target=CPU"]
DATA = ["data.source=synthetic", "data.synthetic_train=600", "data.synthetic_test=100"]
JOBS = [  # a tiny lineage: 1 epoch of 256 images, an MLP with 8 hidden units, export at batch size 1
    ("data", CPU + DATA),
    ("train", CPU + DATA + ["data.from=data-001", "train.epochs=1", "train.train_limit=256", "model.hidden=8"]),
    ("test", CPU + DATA + ["test.from=train-001"]),
    ("export", CPU + DATA + ["export.from=train-001", "export.batch_sizes=[1]", "export.samples_per_class=1"]),
]


def _sets(items):
    out = []
    for item in items:
        out += ["--set", item]
    return out


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> Path:
    """A session of the tiny lineage with train-001 frozen, and its record."""
    root = tmp_path_factory.mktemp("orig") / "sessions"
    sid = None
    for kind, sets in JOBS:
        where = ["--session", sid] if sid else []
        proc = run_cli("run", kind, "--sessions", root, *where, *_sets(sets), timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        sid = sid or proc.stderr.split(" in session ")[1].split(":")[0]
        if kind == "train":
            session_dir = root / sid
            candidate.freeze(session_dir, candidate.from_run(session_dir, session_dir / "jobs" / "train-001"), "")
    out = export_session(SessionStore(root), sid, None, screenshots=None)
    assert (out / "deliverable" / "model.ckpt").is_file()
    return out


def test_commands_sh_reproduces_the_lineage_in_a_new_sessions_root(record, tmp_path):
    fresh = tmp_path / "elsewhere" / "sessions"
    proc = subprocess.run(
        ["sh", str(record / "reproduce" / "commands.sh"), str(fresh)],
        cwd=str(tmp_path),
        env=cli_env({"PYTHON": sys.executable}),
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lines[-1].startswith("observed-pass: reproduced (session ")
    assert any(line.startswith("observed-pass  checkpoint hash:") and "bit-identical" in line for line in lines)
    assert any(line.startswith("observed-pass  per-epoch losses: 1 epoch(s), max |Δ| 0 ") for line in lines)
    version = metadata.version("mindspore")
    assert "conditions: MindSpore %s on CPU here, MindSpore %s on CPU in the record" % (version, version) in lines
    for what in ("split hash", "test metrics", "exported outputs"):
        assert any(line.startswith("observed-pass  %s:" % what) for line in lines), what
    (new_sid,) = [p.name for p in fresh.iterdir()]
    frozen = candidate.current(fresh / new_sid)
    original = json.loads((record / "report.json").read_text())["candidate"]["candidate"]
    assert frozen is not None and frozen.sha256 == original["sha256"]
    assert sorted(p.name for p in (fresh / new_sid / "jobs").iterdir()) == [
        "data-001",
        "export-001",
        "test-001",
        "train-001",
    ]


def test_a_tampered_checkpoint_in_the_record_is_named_as_the_difference(record, tmp_path):
    copy = tmp_path / "record"
    shutil.copytree(str(record), str(copy))
    ckpt = copy / "deliverable" / "model.ckpt"
    data = bytearray(ckpt.read_bytes())
    data[-5] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    proc = run_cli("reproduce", copy, "--sessions", tmp_path / "fresh", timeout=900)
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert last.startswith("observed-fail: checkpoint hash differs: the record's model.ckpt has SHA-256 %s"
                           % hashlib.sha256(bytes(data)).hexdigest())  # fmt: skip
    assert "1 of %d bytes differ" % len(data) in last
    assert "test-001" not in proc.stdout  # the first difference stops the re-run


def test_a_record_without_a_candidate_is_blocked_and_a_bad_path_is_named(tmp_path):
    root = tmp_path / "sessions"
    sid = copy_real(root)
    out = export_session(SessionStore(root), sid, None, screenshots=None)
    proc = run_cli("reproduce", out, "--sessions", tmp_path / "fresh")
    assert proc.returncode == 1 and proc.stdout.startswith(
        "blocked: %s names no frozen candidate" % (out / "report.json")
    )
    assert not (tmp_path / "fresh").exists()  # nothing was started
    proc = run_cli("reproduce", tmp_path / "nowhere", "--sessions", tmp_path / "fresh")
    assert proc.returncode == 2 and "nowhere" in proc.stderr and "is not a session id" in proc.stderr
