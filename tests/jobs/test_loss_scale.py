"""amp-O2 with a dynamic loss scale, real MindSpore on CPU: the scale's changes and overflow skips as events, read by precision-run.

MindSpore's defaults start the scale at 2**24: the first scaled gradients of amp-O2's float16 layers
overflow, so those steps are skipped and the scale halves until the gradients fit.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any, List

import pytest

from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import Evidence, read_all
from workbench.events.steps import expand_steps
from workbench.fold.record import JobRecord

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mindspore") is None, reason="MindSpore is not installed")

TINY = [
    "data.source=synthetic",
    "data.synthetic_train=1200",
    "data.synthetic_test=300",
    "train.val_limit=200",
    "train.warmup_steps=2",
    "train.epochs=1",
    "train.loss_scale=dynamic",
]


def run_job(root: Path, kind: str, *sets: str) -> Path:
    """Run a job through `ms-workbench run`; its folder (events validated)."""
    args: List[Any] = ["run", kind, "--sessions", root]
    for item in list(TINY) + list(sets):
        args += ["--set", item]
    proc = run_cli(*args, timeout=400)
    found = re.search(r"job \S+ in session (\S+): (\S+)", proc.stderr)
    assert found, proc.stderr
    job = Path(found.group(2))
    assert_events_valid(job)
    return job


def test_amp_o2_scale_curve_and_skips_in_events_and_fold(tmp_path):
    job = run_job(tmp_path / "sessions", "train", "train.precision=amp-O2")
    events = read_all(str(job / "events.jsonl"))
    scales = [e for e in events if e["type"] == "loss_scale"]
    assert scales and scales[0]["scale"] == 2.0**24 and scales[0]["global_step"] == 1
    skips = [e for e in scales if e["overflow"]]
    assert skips, "no overflow skip at a starting scale of 2**24"
    for e in skips:  # each skip halves the scale
        assert e["next_scale"] == e["scale"] / 2
    assert [e["skipped"] for e in skips] == list(range(1, len(skips) + 1))
    rec = JobRecord(job.name, "train", job_dir=job)
    rec.ingest(events)
    assert rec.loss_scale == scales
    result = [e for e in events if e["type"] == "result"][-1]["summary"]
    assert result["precision"]["loss_scale"]["kind"] == "dynamic"


def test_precision_run_reads_the_candidates_loss_scale(tmp_path):
    job = run_job(
        tmp_path / "sessions",
        "precision",
        "precision_run.candidate=amp-O2",
        "precision_run.max_macro_f1_delta=0.5",
    )
    check = [e for e in read_all(str(job / "events.jsonl")) if e["type"] == "check" and e["id"] == "precision-run"][-1]
    scale = check["evidence"]["loss_scale"]
    assert scale["used"] is True and scale["skipped_steps"] >= 1 and scale["first_scale"] == 2.0**24
    assert scale["curve"][0] == [1, 2.0**24] and scale["final_scale"] < 2.0**24
    assert (
        "%d of %d steps skipped for overflow" % (scale["skipped_steps"], check["evidence"]["candidate_leg"]["steps"])
        in check["detail"]
    )
    fp32_events = read_all(str(job / "legs" / "fp32" / "events.jsonl"))
    assert not [e for e in fp32_events if e["type"] == "loss_scale"]  # the fp32 twin is not scaled
    assert check["status"] in (Evidence.PASS, Evidence.FAIL)


def test_monitor_with_a_dynamic_loss_scale_marks_the_skipped_steps_and_moves_one_scale(tmp_path):
    sessions = tmp_path / "sessions"
    plain = run_job(sessions, "train", "train.precision=amp-O2")
    job = run_job(sessions, "train", "train.precision=amp-O2", "train.monitor.every=2")
    events = read_all(str(job / "events.jsonl"))
    assert [e for e in events if e["type"] == "finished"][-1]["status"] == "ok"
    twin = read_all(str(plain / "events.jsonl"))

    def scale_events(evs):
        return [{k: v for k, v in e.items() if k not in ("t", "seq")} for e in evs if e["type"] == "loss_scale"]

    # the monitored cell moves the plain cell's scale: the same curve and skips, step for step, and the same losses
    assert scale_events(events) == scale_events(twin)
    losses = [
        [s["loss"] for e in evs if e["type"] in ("step", "steps") for s in expand_steps(e)] for evs in (events, twin)
    ]
    assert losses[0] == losses[1] and len(losses[0]) > 10
    rec = JobRecord(job.name, "train", job_dir=job)
    rec.ingest(events)
    skipped_steps = {e["global_step"] for e in scale_events(events) if e["overflow"]}
    samples = [
        (step, flag, ratios)
        for e in events
        if e["type"] == "monitor"
        for step, flag, ratios in zip(e["global_step"], e.get("skipped") or [False] * 99, e["update_ratio"])
    ]
    assert [s for s, _, _ in samples] == list(range(2, len(samples) * 2 + 1, 2))
    marked = {s for s, flag, _ in samples if flag}
    assert marked == {s for s, _, _ in samples if s in skipped_steps}
    assert marked, "no sampled step was a skip: the test no longer covers one"
    for step, flag, ratios in samples:  # a skipped step's weights did not move; every other sampled step's did
        assert all(r == 0 for r in ratios) if flag else all(r > 0 for r in ratios), (step, flag, ratios)
    check = [e for e in events if e["type"] == "check" and e["id"] == "train-state"][-1]
    assert check["status"] == Evidence.PASS and check["evidence"]["skipped"] == len(marked)
    assert check["evidence"]["gradients_from"].startswith("the monitored step cell")  # a loss scale: not the moment
    assert "%d sampled steps skipped by the loss scale" % len(marked) in check["detail"]
    assert rec.train_state.skipped == len(marked) and rec.train_state.count == len(samples)
