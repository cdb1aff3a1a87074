"""`ms-workbench freeze`: what it freezes by default, what it prints, re-freezes, imported runs, refusals."""

from __future__ import annotations

import json

from tests.support.runs import CFG, make_run
from workbench.cli.main import main
from workbench.jobkit.context import JobContext
from workbench.session import candidate
from workbench.session.store import SessionStore
from workbench.system.atomic import sha256_file, write_json


def _session(root):
    store = SessionStore(root)
    sid = store.create(["test"])
    return store, sid, root / sid


def test_freeze_defaults_to_the_newest_ok_run_and_prints_what_it_froze(tmp_path, capsys):
    store, sid, session = _session(tmp_path)
    make_run(session, "train-001", weights=b"first")
    newest = make_run(session, "train-002", weights=b"second")
    make_run(session, "train-003", ok=False, weights=b"diverged")
    assert main(["freeze", "--sessions", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    digest = sha256_file(newest / "artifacts" / "best.ckpt")
    assert "frozen candidate #1: train-002 epoch 3" in out and digest in out and sid in out
    assert candidate.current(session).sha256 == digest


def test_a_refreeze_names_the_run_needs_a_reason_and_keeps_the_first(tmp_path, capsys):
    store, sid, session = _session(tmp_path)
    make_run(session, "train-001", weights=b"first")
    make_run(session, "train-002", weights=b"second")
    assert main(["freeze", sid, "train-001", "--sessions", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["freeze", "--session", sid, "train-002", "--sessions", str(tmp_path)]) == 1
    assert "needs a reason" in capsys.readouterr().err
    assert main(["freeze", sid, "train-002", "--reason", "lower val loss", "--sessions", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "frozen candidate #2: train-002" in out and "replaces   #1 (train-001" in out
    assert [c.run for c in candidate.history(session)] == ["train-001", "train-002"]


def test_nothing_trained_is_refused_naming_the_training_command(tmp_path, capsys):
    store, sid, session = _session(tmp_path)
    assert main(["freeze", sid, "--sessions", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "freeze refused" in err and "ms-workbench run train" in err
    assert candidate.current(session) is None


def test_an_unknown_run_is_a_usage_error(tmp_path, capsys):
    store, sid, session = _session(tmp_path)
    assert main(["freeze", sid, "train-009", "--sessions", str(tmp_path)]) == 2
    assert "no job train-009 in session %s" % sid in capsys.readouterr().err


def test_a_run_of_another_session_is_frozen_by_its_reference(tmp_path, capsys):
    store, sid, session = _session(tmp_path)
    other_store, other_sid, other = _session(tmp_path)
    run = make_run(other, "train-001", weights=b"imported")
    write_json(run / "job.json", {"jid": "train-001", "kind": "train"})
    assert main(["freeze", sid, "%s/train-001" % other_sid, "--sessions", str(tmp_path)]) == 0
    entry = candidate.current(session)
    assert entry.run == "%s/train-001" % other_sid and entry.sha256 == sha256_file(run / "artifacts" / "best.ckpt")
    assert entry.checkpoint == "../%s/jobs/train-001/artifacts/best.ckpt" % other_sid


def test_printed_commands_carry_a_sessions_root_that_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv("MS_WORKBENCH_SESSIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert SessionStore(tmp_path / "sessions").command("freeze", "S") == "ms-workbench freeze S"
    assert SessionStore(tmp_path / "elsewhere").command("freeze", "S") == "ms-workbench freeze S --sessions %s" % (
        tmp_path / "elsewhere"
    )


def _job(tmp_path, kind):
    job = tmp_path / ("%s-001" % kind)
    job.mkdir()
    write_json(job / "config.json", CFG)
    write_json(job / "job.json", {"jid": job.name, "kind": kind, "device": {"target": "CPU", "resolved": "CPU"}})
    return job


def _checks(job):
    return [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines() if '"check"' in line]


def test_a_recipe_job_check_carries_the_recipe_and_a_checkpoint_job_its_file(tmp_path):
    ctx = JobContext(_job(tmp_path, "overfit"))
    ctx.check("overfit-batch", "overfit", "observed-pass")
    assert _checks(ctx.dir)[0]["subject"] == "recipe:" + candidate.recipe_sha256(CFG)
    ctx = JobContext(_job(tmp_path, "test"))
    ctx.check("before", "no model known yet", "not-run")
    ctx.subject = candidate.checkpoint_subject("f" * 64)
    ctx.check("after", "about the file", "observed-pass")
    first, second = _checks(ctx.dir)
    assert "subject" not in first and second["subject"] == "checkpoint:" + "f" * 64


def test_a_second_test_evaluation_is_refused_saying_what_it_costs(tmp_path, capsys, monkeypatch):
    from tests.support import variants

    session = variants.copy_real(tmp_path)
    argv = ["run", "test", "--session", session.name, "--sessions", str(tmp_path)]
    monkeypatch.setattr("sys.argv", ["ms-workbench"] + argv)
    before = sorted(p.name for p in (session / "jobs").iterdir())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the test set of session %s is spent: test-001 (train-001, checkpoint " % session.name in err
    assert "makes test-evaluations observed-fail" in err and "stays the reported one" in err
    assert err.rstrip().endswith(" ".join(["ms-workbench"] + argv + ["--test-set-again"]))
    assert sorted(p.name for p in (session / "jobs").iterdir()) == before  # nothing started
