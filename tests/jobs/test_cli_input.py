"""Bad input to the real command line: config holes and references that point outside the sessions root."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

FAST = ["--set", "drill.steps=2", "--set", "drill.rate=400"]


# Nine levels of nine aliases under one key: 9**9 strings once expanded (the old reader grew past 3 GB).
ALIAS_BOMB = (
    "\n".join(
        ["drill:", '  crash_signal: &a0 "lol"']
        + ["  x%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 10)]
    )
    + "\n"
)


def session_dirs(root: Path):
    """Every folder directly under a sessions root."""
    return sorted(Path(root).iterdir()) if Path(root).exists() else []


@pytest.mark.parametrize(
    "item, needles",
    [
        ("export.formats=[onnx]", ["'export.formats'", "['onnx']", "one of ckpt, mindir", "item 0 is 'onnx'"]),
        ("export.batch_sizes=[64, 0]", ["'export.batch_sizes'", "each >= 1", "item 1 is 0: too small"]),
        ("train.lr=.nan", ["'train.lr'", "value nan", "not a finite number"]),
        ("train.lr=1e400", ["--set train.lr=1e400", "'train.lr'", "not a finite number"]),
        ("limits.stall_s=.inf", ["'limits.stall_s'", "value inf", "not a finite number"]),
        ("train.lr=0", ["--set train.lr=0", "'train.lr'", "value 0.0", "> 0.0"]),
        ("train.lr=-0.01", ["'train.lr'", "value -0.01", "> 0.0"]),
    ],
)
def test_schema_errors_exit_2_before_any_session_exists(run_cli, sessions, item, needles):
    proc = run_cli("run", "export", "--sessions", sessions, "--set", item)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("config error: --set %s:" % item), proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)
    assert session_dirs(sessions) == []


def test_a_batch_larger_than_the_train_split_exits_2_with_both_numbers(run_cli, sessions):
    proc = run_cli("run", "train", "--sessions", sessions, "--set", "train.batch_size=60000")
    assert proc.returncode == 2, proc.stderr
    assert "train.batch_size 60000 > 54000 images in the train split" in proc.stderr, proc.stderr
    assert "expected at most 54000" in proc.stderr and "Traceback" not in proc.stderr
    assert session_dirs(sessions) == []


def test_a_non_utf8_config_file_exits_2_without_a_traceback(run_cli, sessions, tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("drill:\n  crash_signal: caf\u00e9\n".encode("latin-1"))
    proc = run_cli("run", "drill", "--sessions", sessions, "--config", bad)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("config error: %s: not UTF-8" % bad), proc.stderr


def test_an_alias_bomb_exits_2_at_once(run_cli, sessions, tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB, encoding="utf-8")
    t0 = time.monotonic()
    proc = run_cli("run", "drill", "--sessions", sessions, "--config", bomb, timeout=30)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2 and "anchors and aliases are not allowed" in proc.stderr, proc.stderr
    print("alias bomb refused by the CLI in %.2f s (interpreter start included)" % elapsed)


def test_a_duplicate_key_exits_2_naming_both_lines(run_cli, sessions, tmp_path):
    dup = tmp_path / "dup.yaml"
    dup.write_text("drill:\n  steps: 3\n  steps: 4\n", encoding="utf-8")
    proc = run_cli("run", "drill", "--sessions", sessions, "--config", dup)
    assert proc.returncode == 2 and "duplicate key 'steps' at lines 2 and 3" in proc.stderr, proc.stderr


@pytest.mark.parametrize("python", ["{tmp}/no-such-python", "no-such-python-xyz"])
def test_a_bad_interpreter_leaves_no_session_behind(run_cli, sessions, tmp_path, python):
    proc = run_cli("run", "drill", "--sessions", sessions, "--python", python.format(tmp=tmp_path))
    assert proc.returncode == 2 and "'python'" in proc.stderr, proc.stderr
    assert session_dirs(sessions) == []


def test_a_missing_explicit_data_dir_exits_2(run_cli, sessions, tmp_path):
    proc = run_cli("run", "data", "--sessions", sessions, "--set", "data.dir=%s" % (tmp_path / "nowhere"))
    assert proc.returncode == 2 and "'data.dir'" in proc.stderr and "does not exist" in proc.stderr, proc.stderr
    assert session_dirs(sessions) == []


@pytest.fixture
def evil(tmp_path):
    """A folder outside the sessions root that looks like a session with a job."""
    evil = tmp_path / "evil"
    (evil / "jobs" / "drill-001").mkdir(parents=True)
    (evil / "session.json").write_text(json.dumps({"id": "evil", "created": 0}))
    (evil / "jobs" / "drill-001" / "job.json").write_text(json.dumps({"created": 0, "kind": "drill"}))
    (evil / "jobs" / "drill-001" / "events.jsonl").write_text("")
    (evil / "jobs" / "drill-001" / "exit.json").write_text(json.dumps({"returncode": 0}))
    return evil


def _tree(root: Path):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_references_outside_the_sessions_root_are_refused(run_cli, sessions, evil):
    assert run_cli("run", "drill", "--sessions", sessions, *FAST).returncode == 0
    (sid,) = [p.name for p in session_dirs(sessions)]
    before = _tree(evil)
    attempts = [
        ("run", "drill", "--session", "../evil", *FAST),
        ("run", "drill", "--session", str(evil), *FAST),
        ("export", "../evil", "--no-screenshots"),
        ("export", str(evil), "--no-screenshots"),
        ("watch", "%s/../../evil/jobs/drill-001" % sid),
        ("watch", "%s/../../../x/jobs/drill-001" % sid),
        ("watch", "../evil"),
        ("attach", "../evil"),
        ("run", "export", "--session", sid, "--set", "export.from=../evil/jobs/drill-001"),
        ("run", "test", "--session", sid, "--set", "test.from=%s" % (evil / "jobs")),
    ]
    for argv in attempts:
        proc = run_cli(*argv, "--sessions", sessions, timeout=30)
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert "../evil" in proc.stderr or str(evil) in proc.stderr or "x/jobs" in proc.stderr, (argv, proc.stderr)
    assert _tree(evil) == before
    assert [p.name for p in session_dirs(sessions)] == [sid]
    assert sorted(p.name for p in (sessions / sid / "jobs").iterdir()) == ["drill-001"]
