"""The real `align` job: two side processes with MindSpore on CPU, on a tiny MLP and 8 validation images."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import PROJECT_ROOT, cli_env, run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import read_all
from workbench.system.atomic import read_json

TINY = ["--set", "model.hidden=16", "--set", "align.batch=8", "--set", "device.target=CPU"]


def _run(root: Path, *sets: str):
    """Run one alignment in its own session; return (process, job dir, events)."""
    before = set(root.glob("*/jobs/*"))
    proc = run_cli("run", "align", "--sessions", root, *TINY, *sets, timeout=240)
    (job_dir,) = set(root.glob("*/jobs/*")) - before
    assert_events_valid(job_dir)
    return proc, job_dir, read_all(str(job_dir / "events.jsonl"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three alignments, run once for this module: pynative vs graph, fp32 vs fp16, CPU vs Ascend."""
    root = tmp_path_factory.mktemp("sessions")
    same = _run(root, "--set", "align.steps=1", "--set", "align.weights_from=init")  # initial weights, chosen
    init = same[1] / "artifacts" / "init.ckpt"  # the later runs load the very same initial weights
    fp16 = _run(
        root,
        "--set",
        "align.candidate.mode=pynative",
        "--set",
        "align.candidate.precision=fp16",
        "--set",
        "align.weights_from=%s" % init,
    )
    ascend = _run(root, "--set", "align.candidate.target=Ascend", "--set", "align.weights_from=%s" % init)
    return {"same": same, "fp16": fp16, "ascend": ascend}


def _diffs(events):
    return [e for e in events if e["type"] == "tensor_diff"]


def _checks(events):
    return {e["id"]: e for e in events if e["type"] == "check"}


def _result(events):
    return [e for e in events if e["type"] == "result"][-1]["summary"]


def _finished(events):
    return events[-1]


def test_pynative_vs_graph_fp32_all_tensors_pass_with_measured_zero(runs):
    proc, job_dir, events = runs["same"]
    assert proc.returncode == 0, proc.stderr
    assert _finished(events)["status"] == "ok"
    diffs = _diffs(events)
    names = [d["name"] for d in diffs]
    assert names == [
        "input",
        "labels",
        "layer.0.Flatten",
        "layer.1.Dense",
        "layer.2.ReLU",
        "layer.3.Dense",
        "logits",
        "loss",
        "grad.1.weight",
        "grad.1.bias",
        "grad.3.weight",
        "grad.3.bias",
        "steps.loss",
        "after1.1.weight",
        "after1.1.bias",
        "after1.3.weight",
        "after1.3.bias",
    ]
    for d in diffs:
        assert d["passed"] is True, d
        assert isinstance(d["max_abs"], float)
        assert d["max_abs"] == 0.0  # measured on this machine: PYNATIVE and GRAPH agree bit for bit on CPU
        assert (d["ref"], d["cand"]) == ("CPU/pynative/fp32", "CPU/graph/fp32")
    logits = diffs[names.index("logits")]
    assert logits["flips"]["count"] == 0 and logits["flips"]["n"] == 8
    assert (logits["rtol"], logits["atol"]) == (1.3e-6, 1e-5)
    checks = _checks(events)
    assert checks["alignment"]["status"] == "observed-pass"
    assert all(c["status"] == "observed-pass" for cid, c in checks.items() if cid.startswith("match."))
    summary = _result(events)
    assert summary["verdict"] == "observed-pass" and summary["counts"]["failed"] == 0
    assert summary["first_failure"] is None


def test_matched_settings_come_before_any_diff(runs):
    events = runs["same"][2]
    first_diff = min(i for i, e in enumerate(events) if e["type"] == "tensor_diff")
    match_ids = [e["id"] for e in events[:first_diff] if e["type"] == "check" and e["id"].startswith("match.")]
    assert {
        "match.preprocessing",
        "match.class-order",
        "match.loss-reduction",
        "match.state",
        "match.seed",
        "match.inputs",
        "match.init",
    } <= set(match_ids)


def test_each_side_ran_in_its_own_process_with_read_back_settings(runs):
    _, job_dir, events = runs["same"]
    art = job_dir / "artifacts"
    ref, cand = read_json(art / "side-ref.json"), read_json(art / "side-cand.json")
    init = read_json(art / "init.json")
    job_pid = events[0]["pid"]
    assert len({ref["pid"], cand["pid"], init["pid"], job_pid}) == 4
    assert ref["effective"]["mode"] == "pynative" and cand["effective"]["mode"] == "graph"
    assert ref["effective"]["target"] == cand["effective"]["target"] == "CPU"
    assert ref["settings"]["state"] == {"forward": "eval", "loss_grads": "train"}
    assert ref["settings"]["loss_reduction"] == "mean"
    assert ref["tap_check"]["max_abs"] == 0.0
    # each side hashed the shared files it loaded; they match the job's artifact events
    hashes = {Path(e["path"]).name: e["sha256"] for e in events if e["type"] == "artifact"}
    for side in (ref, cand):
        assert side["settings"]["inputs_sha256"] == hashes["inputs.npz"]
        assert side["settings"]["init_sha256"] == hashes["init.ckpt"]
    with np.load(str(art / "inputs.npz")) as npz:
        x, y = npz["x"], npz["y"]
    assert x.dtype == np.float32 and x.shape == (8, 1, 28, 28) and 0.0 <= x.min() and x.max() <= 1.0
    assert y.dtype == np.int32 and y.shape == (8,)


def test_fp32_vs_fp16_differences_and_verdicts_follow_the_stated_tolerances(runs):
    proc, job_dir, events = runs["fp16"]
    assert proc.returncode == 0, proc.stderr  # differing tensors are a finding, not a job failure
    diffs = {d["name"]: d for d in _diffs(events)}
    assert diffs["logits"]["dtype"] == {"ref": "float32", "cand": "float16"}
    assert (diffs["logits"]["rtol"], diffs["logits"]["atol"]) == (1e-3, 1e-5)  # fp16's defaults win
    assert diffs["layer.1.Dense"]["max_abs"] > 0.0 and diffs["logits"]["max_abs"] > 0.0
    with (
        np.load(str(job_dir / "artifacts" / "side-ref.npz")) as r,
        np.load(str(job_dir / "artifacts" / "side-cand.npz")) as c,
    ):
        for name, d in diffs.items():
            ref, cand = r[name].astype(np.float64), c[name].astype(np.float64)
            outside = np.abs(cand - ref) > d["atol"] + d["rtol"] * np.abs(ref)
            assert d["passed"] == (not outside.any()), name
            assert d["mismatch_ratio"] == pytest.approx(outside.mean()), name
            assert d["max_abs"] == pytest.approx(float(np.abs(cand - ref).max())), name
            if d["worst_index"] is not None:
                idx = tuple(d["worst_index"])
                assert (d["worst"]["ref"], d["worst"]["cand"]) == (float(ref[idx]), float(cand[idx])), name
    flips = diffs["logits"]["flips"]
    assert isinstance(flips["count"], int) and flips["count"] == len(flips["pairs"])
    summary = _result(events)
    failed = [name for name, d in diffs.items() if not d["passed"]]
    assert summary["counts"]["failed"] == len(failed)
    assert summary["verdict"] == ("observed-fail" if failed else "observed-pass")
    if failed:
        assert summary["first_failure"]["name"] == [d["name"] for d in _diffs(events) if not d["passed"]][0]
    assert summary["class_flips"]["count"] == flips["count"]


def test_cpu_vs_ascend_blocks_the_candidate_and_compares_nothing(runs):
    proc, job_dir, events = runs["ascend"]
    assert proc.returncode == 1
    assert _diffs(events) == []
    checks = _checks(events)
    assert checks["side.ref"]["status"] == "observed-pass"
    assert checks["side.cand"]["status"] == "blocked"
    assert "Unsupported device target Ascend" in checks["side.cand"]["detail"]  # MindSpore's own message
    assert checks["side.cand"]["hint"]
    assert checks["alignment"]["status"] == "blocked"
    assert not any(cid.startswith("match.") for cid in checks)
    fin = _finished(events)
    assert fin["status"] == "failed" and fin["error"]["type"] == "Blocked"
    assert "Unsupported device target Ascend" in fin["error"]["message"]
    summary = _result(events)
    assert summary["verdict"] == "blocked" and summary["compared"] is False
    assert not (job_dir / "artifacts" / "side-cand.npz").exists()
    cand = read_json(job_dir / "artifacts" / "side-cand.json")
    assert cand["status"] == "blocked" and "effective" not in cand


def test_the_job_process_does_not_import_mindspore():
    code = "import sys, jobs.align; sys.exit(1 if 'mindspore' in sys.modules else 0)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=str(PROJECT_ROOT), env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr or "jobs.align.job imported mindspore"
