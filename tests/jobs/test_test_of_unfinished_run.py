"""The `test` job warns, in its log and its result, when the checkpoint's training run did not end ok."""

from __future__ import annotations

import json

from tests.support import variants
from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import read_all


def test_testing_a_cancelled_runs_checkpoint_says_so(tmp_path):
    session = variants.copy_real(tmp_path / "sessions")  # a real recorded session (synthetic data, tiny MLP)
    train = session / "jobs" / "train-001"
    variants.edit_events(train, lambda ev: ev.update(status="cancelled") if ev["type"] == "finished" else None)
    exit_path = train / "exit.json"
    exit_path.write_text(json.dumps(dict(json.loads(exit_path.read_text()), cancelled=True)))
    proc = run_cli(
        "run",
        "test",
        "--sessions",
        tmp_path / "sessions",
        "--session",
        session.name,
        "--set",
        "test.from=train-001",
        "--test-set-again",  # the recorded session's test set was evaluated already (test-001)
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = session / "jobs" / "test-002"
    events = read_all(str(job / "events.jsonl"))
    warned = [e["message"] for e in events if e["type"] == "log" and e.get("level") == "warning"]
    assert any("train-001, which did not end ok (cancelled" in w for w in warned), warned
    (result,) = [e["summary"] for e in events if e["type"] == "result"]
    assert "did not end ok" in result["source_run_warning"]
    assert_events_valid(job)
