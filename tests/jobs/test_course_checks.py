"""The course's checks as real jobs on CPU with real MindSpore and the bundled Fashion-MNIST files: overfit-batch,
resume-exact, precision-run (each passing and failing), first-result and perf-repeats in the train job.

Tiny budgets (1000 train / 300 validation images, 1-2 epochs); every events.jsonl, the legs'
included, is validated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from jobs.common import legs
from jobs.precision import judge as judge_precision
from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import Evidence, read_all

pytestmark = [pytest.mark.requires_mindspore, pytest.mark.slow]

TINY = ["train.train_limit=1000", "train.val_limit=300", "train.warmup_steps=2"]
JOB_TIMEOUT_S = 400


def run_job(sessions: Path, kind: str, *sets: str) -> Path:
    """Run a job through `python -m workbench run`; return its folder (every events file in it validated)."""
    args: List[Any] = ["run", kind, "--sessions", sessions]
    for item in list(TINY) + list(sets):
        args += ["--set", item]
    proc = run_cli(*args, timeout=JOB_TIMEOUT_S)
    found = re.search(r"job \S+ in session \S+: (\S+)", proc.stderr)
    assert found, "no job line in stderr:\n%s\n%s" % (proc.stderr, proc.stdout)
    job_dir = Path(found.group(1))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for leg_dir in sorted(job_dir.glob("legs/*")):
        assert_events_valid(leg_dir)
    return job_dir


def checks(job_dir: Path, check_id: str) -> List[Dict[str, Any]]:
    """Every check event with this id."""
    return [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "check" and e["id"] == check_id]


def only_check(job_dir: Path, check_id: str) -> Dict[str, Any]:
    """The one check event with this id (a check is emitted once)."""
    found = checks(job_dir, check_id)
    assert len(found) == 1, "%s: %d checks %r" % (job_dir.name, len(found), check_id)
    return found[0]


def test_overfit_one_batch_passes_with_its_curve(sessions):
    ev = only_check(run_job(sessions, "overfit"), "overfit-batch")
    assert ev["status"] == Evidence.PASS, ev["detail"]
    e = ev["evidence"]
    assert e["batch_size"] == 64 and e["factor_wanted"] == 10.0
    assert e["factor_reached"] >= 10.0 and e["first_loss"] / e["last_loss"] == pytest.approx(e["factor_reached"])
    assert 1 <= e["reached_at_step"] == e["steps_run"] <= 200
    assert e["curve"][0] == [1, e["first_loss"]] and e["curve"][-1] == [e["steps_run"], e["last_loss"]]
    assert len(e["curve"]) <= 100


def test_overfit_with_a_vanishing_lr_fails_naming_the_factor(sessions):
    # lr = 0 is refused by the schema; 1e-12 moves the weights by nothing a float32 loss shows
    ev = only_check(run_job(sessions, "overfit", "train.lr=1e-12", "overfit.steps=15"), "overfit-batch")
    assert ev["status"] == Evidence.FAIL
    e = ev["evidence"]
    assert e["reached_at_step"] is None and e["steps_run"] == 15
    assert e["factor_reached"] == pytest.approx(1.0)
    assert "fell only 1.00×" in ev["detail"] and "wanted 10×" in ev["detail"]


def test_resume_is_bit_identical_to_the_uninterrupted_run(sessions):
    job = run_job(sessions, "resume", "resume.train_limit=640")
    ev = only_check(job, "resume-exact")
    assert ev["status"] == Evidence.PASS, ev["detail"]
    e = ev["evidence"]
    assert e["k"] == 2 and e["steps_before"] == e["steps_after"] == 10 and e["resumed_at_global_step"] == 10
    assert e["weights"]["identical"] and e["weights"]["tensors"] >= 8 and e["weights"]["max_abs_diff"] == 0.0
    assert e["epoch_k"]["full"] == e["epoch_k"]["resumed"]
    resumed = legs.Leg("resumed", job / "legs" / "resumed", 0, read_all(str(job / "legs/resumed/events.jsonl")))
    assert resumed.check("resume")["status"] == Evidence.PASS
    # The legs run with perf.repeats=1: the train job says its timing repeats did not run.
    assert resumed.check("perf-repeats")["status"] == Evidence.NOT_RUN


def test_resume_from_a_state_without_its_optimizer_fails_naming_the_step(sessions):
    job = run_job(sessions, "resume", "resume.train_limit=640", "resume.tamper=optimizer")
    ev = only_check(job, "resume-exact")
    assert ev["status"] == Evidence.FAIL
    e = ev["evidence"]
    first = e["first_difference"]
    assert first["where"] == "after" and first["global_step"] > e["resumed_at_global_step"] == 10
    assert first["full"] != first["resumed"]
    assert "differ first at global step %d" % first["global_step"] in ev["detail"]
    assert not e["weights"]["identical"] and e["weights"]["differing"]
    assert any(name.startswith("moment") for name in e["tamper"]["zeroed"])


@pytest.fixture(scope="module")
def precision_job(tmp_path_factory):
    """One amp-O2 precision job against its fp32 twin (1 epoch of 1000 images)."""
    root = tmp_path_factory.mktemp("precision") / "sessions"
    job = run_job(
        root, "precision", "train.epochs=1", "precision_run.candidate=amp-O2", "precision_run.max_macro_f1_delta=0.05"
    )
    assert_events_valid(job)
    return job


def test_precision_run_judges_the_candidate_against_fp32(precision_job):
    ev = only_check(precision_job, "precision-run")
    assert ev["status"] == Evidence.PASS, ev["detail"]
    e = ev["evidence"]
    assert e["candidate"] == "amp-O2" and e["max_macro_f1_delta"] == 0.05
    assert abs(e["macro_f1_delta"]) <= 0.05
    assert e["macro_f1_delta"] == pytest.approx(e["candidate_leg"]["macro_f1"] - e["fp32"]["macro_f1"])
    assert len(e["recall_delta"]) == 10 and e["loss_scale"]["used"] is False
    for side in (e["fp32"], e["candidate_leg"]):
        assert side["status"] == "ok" and side["finite_loss"] == Evidence.PASS and side["steps"] == 16
        assert len(side["train_loss_per_epoch"]) == 1


def test_precision_run_fails_past_its_tolerance(precision_job):
    """The same two real legs judged with a tolerance below their measured difference."""
    read = [
        legs.Leg(name, precision_job / "legs" / name, 0, read_all(str(precision_job / "legs" / name / "events.jsonl")))
        for name in ("fp32", "amp-O2")
    ]
    delta = only_check(precision_job, "precision-run")["evidence"]["macro_f1_delta"]
    assert delta != 0.0, "the legs agree exactly: no tolerance below their difference exists"
    status, detail, evidence = judge_precision(read[0], read[1], "amp-O2", abs(delta) / 2)
    assert status == Evidence.FAIL and "over the tolerance" in detail and evidence["macro_f1_delta"] == delta


def test_train_reports_first_result_and_timing_repeats(sessions):
    job = run_job(sessions, "train", "train.epochs=1", "perf.repeats=3", "perf.repeat_steps=8")
    first = only_check(job, "first-result")
    assert first["status"] == Evidence.PASS and first["evidence"]["epoch"] == 1
    assert 0 < first["evidence"]["seconds"] < JOB_TIMEOUT_S
    rep = only_check(job, "perf-repeats")
    assert rep["status"] == Evidence.PASS, rep["detail"]
    e = rep["evidence"]
    assert e["repeats"] == 3 and len(e["per_repeat"]) == 3
    assert all(r["steps"] == 8 and len(r["loadavg_1_5_15"]) == 3 for r in e["per_repeat"])
    assert e["min_ms"] <= e["q1_ms"] <= e["median_ms"] <= e["q3_ms"] <= e["max_ms"]
    assert e["iqr_ms"] == pytest.approx(e["q3_ms"] - e["q1_ms"])
    summary = [ev for ev in read_all(str(job / "events.jsonl")) if ev["type"] == "result"][0]["summary"]
    assert summary["perf"]["first_result_s"] == first["evidence"]["seconds"]
    assert summary["perf"]["repeats"]["median_ms"] == e["median_ms"]


def test_a_default_training_run_records_three_timing_repeats_and_their_spread(sessions):
    job = run_job(sessions, "train", "train.epochs=1", "perf.repeat_steps=8")  # perf.repeats left at its default
    rep = only_check(job, "perf-repeats")
    assert rep["status"] == Evidence.PASS, rep["detail"]
    e = rep["evidence"]
    assert e["repeats"] == 3 and len(e["per_repeat"]) == 3
    assert e["spread_pct"] == pytest.approx(100.0 * (e["max_ms"] - e["min_ms"]) / e["median_ms"])
    for r in e["per_repeat"]:  # the run's throughput definition: images over the summed wall time of the steps
        assert r["images_per_s"] > 0 and e["images_per_s_rule"].startswith("each repeat: Σ images / Σ wall time")
