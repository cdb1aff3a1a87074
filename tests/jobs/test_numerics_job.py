"""Overflow localisation with real MindSpore on CPU: a run that overflows fp16 by construction, its fp32 twin.

The recipe: model.hidden_gain=1e5 puts a parameter-free x1e5 after the mlp's first Dense and x1e-5
after its ReLU. The function and its training are the plain mlp's, but the hidden activations are
1e5 times larger: in fp16 the first Gain cell's output passes 65504 at step 1 (its input, the Dense
output, stays below 1), so that cell is the one to name; in fp32 nothing leaves its range.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import Evidence, read_all
from workbench.events.steps import expand_steps
from workbench.system.atomic import read_json

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mindspore") is None, reason="MindSpore is not installed")

TINY = [
    "data.source=synthetic",
    "data.synthetic_train=2000",
    "data.synthetic_test=300",
    "train.val_limit=200",
    "train.warmup_steps=2",
    "train.epochs=1",
    "train.max_steps=12",
    "model.hidden_gain=1e5",
]
TIMEOUT_S = 240


def run_job(root: Path, sid: Any, kind: str, *sets: str) -> Path:
    """Run a job through `ms-workbench run`; its folder."""
    args: List[Any] = ["run", kind, "--sessions", root]
    if sid:
        args += ["--session", sid]
    for item in sets:
        args += ["--set", item]
    proc = run_cli(*args, timeout=TIMEOUT_S)
    found = re.search(r"job \S+ in session (\S+): (\S+)", proc.stderr)
    assert found, proc.stderr
    return Path(found.group(2))


def last_check(job_dir: Path, cid: str) -> Dict[str, Any]:
    """The last check with this id."""
    found = [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "check" and e["id"] == cid]
    assert found, "%s has no check %s; stderr:\n%s" % (job_dir, cid, (job_dir / "stderr.log").read_text()[-2000:])
    return found[-1]


def status(job_dir: Path) -> str:
    """The job's finished status."""
    return [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "finished"][-1]["status"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The fp16 run (fails at step 1), its fp32 twin, and a numerics job on each."""
    root = tmp_path_factory.mktemp("numerics") / "sessions"
    fp16 = run_job(root, None, "train", *TINY, "train.precision=fp16")
    sid = fp16.parent.parent.name
    fp32 = run_job(root, sid, "train", *TINY, "train.precision=fp32")
    again = run_job(root, sid, "numerics", "numerics.from=%s" % fp16.name)
    twin = run_job(root, sid, "numerics", "numerics.from=%s" % fp32.name, "numerics.step=7")
    monitored = run_job(root, sid, "train", *TINY, "train.precision=fp32", "train.monitor.every=3")
    yield {"fp16": fp16, "fp32": fp32, "again": again, "twin": twin, "monitored": monitored}
    for job_dir in sorted(root.glob("*/jobs/*")):
        assert_events_valid(job_dir)


def test_fp16_run_names_the_gain_cell_at_step_1(runs):
    job = runs["fp16"]
    assert status(job) == "failed"
    origin = last_check(job, "overflow-origin")
    assert origin["status"] == Evidence.FAIL
    bad = origin["evidence"]["bad"]
    assert (bad["kind"], bad["cell"], bad["dtype"]) == ("forward", "layer.2.Gain", "float16")
    assert bad["in"]["nonfinite"] == 0 and bad["in"]["absmax"] < 65504 and bad["out"]["nonfinite"] > 0
    assert origin["evidence"]["at"] == {"epoch": 1, "step": 1, "global_step": 1}
    assert origin["detail"].startswith("layer.2.Gain forward output float16 is non-finite")
    assert "at epoch 1 step 1 (global step 1)" in origin["detail"] and "replayed on CPU in PyNative" in origin["detail"]
    assert "not about" not in origin["detail"]  # the run was on CPU too: no other device to speak for
    # the cells before it were within range: it is the first, not merely a bad one
    finding = read_json(job / "artifacts" / "numerics" / "finding.json")
    before = finding["probes"][: finding["bad"]["index"]]
    assert [p["cell"] for p in before] == ["layer.0.Flatten", "layer.1.Dense"]
    assert all(p["out"]["nonfinite"] == 0 and p["out"]["absmax"] < 65504 for p in before)
    assert origin["evidence"]["in_process"]["losses_identical"] is True
    assert last_check(job, "finite-loss")["status"] == Evidence.FAIL


def test_fp32_twin_shows_no_overflow(runs):
    assert status(runs["fp32"]) == "ok"
    assert last_check(runs["fp32"], "finite-loss")["status"] == Evidence.PASS
    twin = last_check(runs["twin"], "overflow-origin")
    assert twin["status"] == Evidence.PASS and twin["evidence"]["bad"] is None
    assert "global step 7" in twin["detail"] and "finite and within its dtype" in twin["detail"]
    replay = twin["evidence"]["replay"]
    assert replay["replayed_steps"] == 6 and replay["losses_compared"] == 6
    assert replay["max_loss_diff"] < 1e-5  # PyNative replayed the graph-mode run's losses


def test_on_demand_replay_of_the_kept_case(runs):
    again = last_check(runs["again"], "overflow-origin")
    assert again["status"] == Evidence.FAIL
    assert again["evidence"]["bad"]["cell"] == "layer.2.Gain" and again["evidence"]["at"]["global_step"] == 1


def test_monitor_samples_every_third_step_of_the_real_run(runs):
    job = runs["monitored"]
    assert status(job) == "ok"
    events = read_all(str(job / "events.jsonl"))
    monitor = [e for e in events if e["type"] == "monitor"]
    steps = [g for e in monitor for g in e["global_step"]]
    assert steps == [3, 6, 9, 12]  # 12 steps (train.max_steps), every third sampled
    names = monitor[0]["names"]
    assert names == ["1.weight", "1.bias", "5.weight", "5.bias"]  # the Gain cells (2, 4) hold no parameter
    for e in monitor:
        for table in ("weight_norm", "grad_norm", "update_ratio"):
            assert all(v > 0 for row in e[table] for v in row)
        assert all(v == 0 for row in e["nonfinite"] for v in row)
    check = last_check(job, "train-state")
    assert check["status"] == Evidence.PASS and check["detail"].startswith("no flag in 4 samples (every 3 steps)")
    assert check["evidence"]["gradients_from"].startswith("Adam's first moment")  # Adam, no loss scale: no second graph

    # the monitored run trains like the plain one: same losses step for step as the fp32 run without it
    def losses(d):
        return [s["loss"] for e in read_all(str(d / "events.jsonl")) if e["type"] == "steps" for s in expand_steps(e)]

    assert losses(job) == losses(runs["fp32"])
