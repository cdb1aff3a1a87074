"""The frozen candidate: lineage from a training run, hash checks, append-only history, torn lines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.runs import CFG, DATA, make_run
from workbench.session import candidate
from workbench.system.atomic import sha256_file


def test_freeze_names_the_checkpoint_by_hash_with_its_lineage(tmp_path):
    run = make_run(tmp_path, "train-001")
    entry = candidate.freeze(tmp_path, candidate.from_run(tmp_path, run), "", now=5.0)
    assert entry.sha256 == sha256_file(run / "artifacts" / "best.ckpt")
    assert (entry.n, entry.run, entry.epoch, entry.checkpoint) == (
        1,
        "train-001",
        3,
        "jobs/train-001/artifacts/best.ckpt",
    )
    assert entry.split_sha256 == candidate.split_sha256(DATA) and entry.recipe_sha256 == candidate.recipe_sha256(CFG)
    assert candidate.current(tmp_path) == entry


def test_a_changed_checkpoint_cannot_be_frozen(tmp_path):
    run = make_run(tmp_path, "train-001")
    (run / "artifacts" / "best.ckpt").write_bytes(b"other weights")
    with pytest.raises(candidate.FreezeError, match="the file changed after training"):
        candidate.from_run(tmp_path, run)


def test_a_failed_run_cannot_be_frozen_and_newest_trained_skips_it(tmp_path):
    make_run(tmp_path, "train-001")
    bad = make_run(tmp_path, "train-002", ok=False)
    with pytest.raises(candidate.FreezeError, match="train-002 did not end ok"):
        candidate.from_run(tmp_path, bad)
    assert candidate.newest_trained(tmp_path).name == "train-001"


def test_no_training_run_names_the_command(tmp_path):
    (tmp_path / "jobs").mkdir()
    with pytest.raises(candidate.FreezeError, match="ms-workbench run train"):
        candidate.newest_trained(tmp_path)


def test_a_refreeze_appends_with_its_reason_and_needs_one(tmp_path):
    first = candidate.freeze(tmp_path, candidate.from_run(tmp_path, make_run(tmp_path, "train-001")), "")
    second_run = make_run(tmp_path, "train-002", weights=b"better")
    with pytest.raises(candidate.FreezeError, match="needs a reason"):
        candidate.freeze(tmp_path, candidate.from_run(tmp_path, second_run), "  ")
    second = candidate.freeze(tmp_path, candidate.from_run(tmp_path, second_run), "lr 3e-4 wins on validation")
    assert [c.n for c in candidate.history(tmp_path)] == [1, 2]
    assert candidate.history(tmp_path)[0] == first and candidate.current(tmp_path) == second
    assert second.reason == "lr 3e-4 wins on validation" and second.sha256 != first.sha256


def test_the_recipe_ignores_what_is_not_the_recipe():
    other = json.loads(json.dumps(CFG))
    other["train"]["epochs"] = 1
    assert candidate.recipe_sha256(other) == candidate.recipe_sha256(CFG)
    other["train"]["lr"] = 0.01
    assert candidate.recipe_sha256(other) != candidate.recipe_sha256(CFG)


@given(st.binary(max_size=300))
def test_history_never_reads_a_torn_or_damaged_line_and_a_freeze_after_it_is_read(tmp_path_factory, junk):
    session = tmp_path_factory.mktemp("s")
    (session / candidate.CANDIDATE_FILE).write_bytes(junk)
    before = candidate.history(session)
    assert all(isinstance(c, candidate.Candidate) for c in before)
    entry = candidate.freeze(
        session,
        {
            "sha256": "d" * 64,
            "checkpoint": "x.ckpt",
            "run": "train-001",
            "epoch": 1,
            "split_sha256": None,
            "recipe_sha256": "e" * 64,
        },
        "after junk",
    )
    assert candidate.current(session) == entry
