"""The `train` and `test` jobs with real MindSpore on CPU, on tiny configs, through the real CLI.

The jobs of this module share one sessions root and one session (resume and test refer to
earlier jobs by id) and run one at a time, because device jobs take the CPU:0 lock.
Every events.jsonl written here is validated at the end.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

from jobs.common.datafeed import SYNTHETIC_SEED
from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from tests.support.jobpython import expected_read_back, expected_set_with
from tests.support.waiting import wait_for
from workbench.analysis.metrics import weighted_mean
from workbench.data.split import stratified_split
from workbench.data.synthetic import synthetic_fashion
from workbench.events.protocol import read_all
from workbench.events.steps import expand_steps
from workbench.run.runner import JobRunner
from workbench.system.atomic import read_json

pytestmark = [pytest.mark.requires_mindspore, pytest.mark.slow]

# 2000 synthetic images -> 1800 train / 200 val; batch 64 gives 28 full batches + a tail of 8.
SYNTH = [
    "data.source=synthetic",
    "data.synthetic_train=2000",
    "data.synthetic_test=300",
    "train.val_limit=200",
    "train.warmup_steps=2",
]
JOB_TIMEOUT_S = 120


class Jobs:
    """Runs jobs one after another in one session and reads their events."""

    def __init__(self, root: Path):
        self.root = root
        self.sid = None

    def run(self, kind: str, *sets: str, detach: bool = False, again: bool = False) -> Path:
        """Run a job through `ms-workbench run`; return its folder (again: a repeated use of the test set, asked)."""
        args: List[Any] = ["run", kind, "--sessions", self.root]
        if self.sid:
            args += ["--session", self.sid]
        if detach:
            args.append("--detach")
        if again:
            args.append("--test-set-again")
        for item in sets:
            args += ["--set", item]
        proc = run_cli(*args, timeout=JOB_TIMEOUT_S)
        if detach:
            job_dir = Path(proc.stdout.strip().splitlines()[-1])
        else:
            found = re.search(r"job \S+ in session (\S+): (\S+)", proc.stderr)
            assert found, "no job line in stderr:\n%s\n%s" % (proc.stderr, proc.stdout)
            job_dir = Path(found.group(2))
        self.sid = job_dir.parent.parent.name
        return job_dir


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """One sessions root for the module; every events file must validate afterwards."""
    root = tmp_path_factory.mktemp("train-jobs") / "sessions"
    yield Jobs(root)
    for job_dir in sorted(root.glob("*/jobs/*")):
        assert_events_valid(job_dir)


def events(job_dir: Path, type_: str = None) -> List[Dict[str, Any]]:
    """The job's events, optionally of one type."""
    evs = read_all(str(job_dir / "events.jsonl"))
    if type_ == "step":  # the job writes batched `steps` lines: each stands for its steps
        return [s for e in evs if e["type"] in ("step", "steps") for s in expand_steps(e)]
    return [e for e in evs if type_ is None or e["type"] == type_]


def check(job_dir: Path, check_id: str) -> Dict[str, Any]:
    """The last check event with this id."""
    found = [e for e in events(job_dir, "check") if e["id"] == check_id]
    assert found, "%s: no check %r" % (job_dir.name, check_id)
    return found[-1]


def finished(job_dir: Path) -> Dict[str, Any]:
    """The job's finished event."""
    found = events(job_dir, "finished")
    assert found, "%s: no finished event; stderr tail:\n%s" % (
        job_dir.name,
        (job_dir / "stderr.log").read_text()[-3000:],
    )
    return found[-1]


def losses_by_epoch(job_dir: Path) -> Dict[int, List[float]]:
    """Step losses grouped by epoch, in order."""
    out: Dict[int, List[float]] = {}
    for ev in events(job_dir, "step"):
        out.setdefault(ev["epoch"], []).append(ev["loss"])
    return out


@pytest.fixture(scope="module")
def straight(jobs):
    """Two uninterrupted epochs on synthetic data (the reference for the resume tests)."""
    job = jobs.run("train", *SYNTH, "train.epochs=2")
    assert finished(job)["status"] == "ok", finished(job)
    return job


def test_events_metrics_and_sample_weighted_loss(straight):
    started = events(straight, "started")[0]
    assert started["device"]["resolved"] == "CPU" and started["mode"] == "graph"
    # The runner decided `auto` before the job started; the job's config says what runs and what was asked.
    device = read_json(straight / "config.json")["device"]
    assert device["target"] == started["device"]["target"] == "CPU" and device["requested"] == "auto" and device["why"]
    assert started["precision"] == "fp32" and re.match(r"\d+\.\d+", started["mindspore"]["version"])
    eff = check(straight, "effective-config")
    assert eff["status"] == "observed-pass"
    assert eff["evidence"]["observed"]["target"] == "CPU" and eff["evidence"]["observed"]["mode"] == "graph"
    # which API selected the device and read it back depends on the job interpreter's MindSpore
    effective = [e for e in events(straight, "result")][-1]["summary"]["effective_device"]
    assert effective["source"] == expected_read_back() and effective["set_with"]["api"].startswith(expected_set_with())
    assert events(straight, "device") == []  # on CPU nothing is sampled: no live device telemetry
    activity = check(straight, "device-activity")
    assert activity["status"] == "not-run" and "Ascend only" in activity["detail"]
    assert "data.split_seed=37" in check(straight, "data-split")["detail"]

    steps = events(straight, "step")
    assert [s["global_step"] for s in steps] == list(range(1, 59))  # 2 epochs x 29 steps
    assert steps[0]["phase"] == "compile"
    assert [s["batch_size"] for s in steps[:29]] == [64] * 28 + [8]
    assert steps[28]["phase"] == "recompile" and steps[57]["phase"] != "recompile"  # tail shape compiles once
    assert [s["phase"] for s in steps[1:3]] == ["warmup", "warmup"]

    source = synthetic_fashion(2000, 300, SYNTHETIC_SEED)
    _, val_idx = stratified_split(source.train_labels, 0.1, 37)
    support = np.bincount(source.train_labels[val_idx[:200]], minlength=10)
    for ep in events(straight, "epoch"):
        mine = [s for s in steps if s["epoch"] == ep["epoch"]]
        losses, sizes = [s["loss"] for s in mine], [s["batch_size"] for s in mine]
        assert ep["samples"] == 1800
        assert ep["train_loss"] == weighted_mean(losses, sizes)
        assert ep["train_loss"] != pytest.approx(float(np.mean(losses)), abs=1e-9)  # the tail counts by its size
        val = ep["val"]
        conf = np.array(val["confusion"])
        assert conf.shape == (10, 10) and conf.sum() == 200
        assert np.array_equal(conf.sum(axis=1), support)  # rows are the true classes
        assert val["accuracy"] == pytest.approx(np.trace(conf) / 200)
        for k, row in enumerate(val["per_class"]):
            predicted = conf[:, k].sum()
            precision = conf[k, k] / predicted if predicted else 0.0
            assert row["precision"] == pytest.approx(precision) and row["support"] == support[k]
        assert val["macro_f1"] == pytest.approx(np.mean([r["f1"] for r in val["per_class"]]))
        assert "never predicted" in val["zero_division"]

    perfs = events(straight, "perf")
    assert [p.get("scope") for p in perfs] == ["epoch", "epoch", "run"]
    run_perf = perfs[-1]
    assert run_perf["first_step_s"] == pytest.approx(steps[0]["step_ms"] / 1000.0)
    assert run_perf["steady"]["n"] == 58 - 1 - 2 - 1  # minus compile, 2 warm-up steps, the tail recompile
    assert run_perf["recompile"][0]["global_step"] == 29
    assert run_perf["peak_device_mb"] is None and "report 0 on CPU" in run_perf["device_memory_note"]
    assert run_perf["sync"] == "loss.asnumpy() every step" and run_perf["peak_host_rss_mb"] > 100

    arts = {a["path"]: a for a in events(straight, "artifact")}
    assert {"artifacts/best.ckpt", "artifacts/best.json", "artifacts/state.ckpt", "artifacts/state.json"} <= set(arts)
    best = read_json(straight / "artifacts" / "best.json")
    assert best["val"]["macro_f1"] == max(e["val"]["macro_f1"] for e in events(straight, "epoch"))
    state = read_json(straight / "artifacts" / "state.json")
    assert state["next_epoch"] == 3 and state["step_in_epoch"] == 0 and state["global_step"] == 58
    result = events(straight, "result")[0]["summary"]
    assert result["best_epoch"] == best["epoch"] and result["effective_device"]["target"] == "CPU"


def test_resume_at_epoch_boundary_reproduces_the_losses_exactly(jobs, straight):
    first = jobs.run("train", *SYNTH, "train.epochs=1")
    assert finished(first)["status"] == "ok"
    resumed = jobs.run("train", *SYNTH, "train.epochs=2", "train.resume_from=%s" % first.name)
    assert finished(resumed)["status"] == "ok", finished(resumed)
    assert check(resumed, "resume")["status"] == "observed-pass"
    want, got = losses_by_epoch(straight), losses_by_epoch(resumed)
    assert list(got) == [2]
    assert got[2] == want[2]  # bit for bit: JSON floats round-trip float32 values exactly
    assert events(resumed, "epoch")[0]["train_loss"] == events(straight, "epoch")[1]["train_loss"]
    assert events(resumed, "epoch")[0]["val"] == events(straight, "epoch")[1]["val"]


def test_cancel_saves_a_mid_epoch_state_that_resumes_exactly(jobs, straight):
    job = jobs.run("train", *SYNTH, "train.epochs=2", "train.mode=pynative", detach=True)
    wait_for(
        lambda: any(e["global_step"] >= 3 for e in events(job, "step")),
        timeout_s=60,
        what="three steps of %s" % job.name,
    )
    assert JobRunner.cancel(job)
    assert JobRunner.wait(job, timeout_s=60)
    fin = finished(job)
    assert fin["status"] == "cancelled" and "state saved" in fin["error"]["message"]
    assert read_json(job / "exit.json")["cancelled"] is True
    state = read_json(job / "artifacts" / "state.json")
    done = events(job, "step")
    assert state["global_step"] == done[-1]["global_step"]
    assert [a["path"] for a in events(job, "artifact")][-2:] == ["artifacts/state.ckpt", "artifacts/state.json"]

    resumed = jobs.run("train", *SYNTH, "train.epochs=2", "train.resume_from=%s" % job.name)
    assert finished(resumed)["status"] == "ok", finished(resumed)
    want = [s["loss"] for s in events(straight, "step")]
    got = [s["loss"] for s in events(resumed, "step")]
    assert got == want[state["global_step"] :]
    # The interrupted epoch's loss includes the steps before the cancel, weighted as usual.
    assert events(resumed, "epoch")[-1]["train_loss"] == events(straight, "epoch")[-1]["train_loss"]


def test_data_job_split_and_dataset_feed_give_the_same_losses(jobs, straight):
    data_job = jobs.run("data", *SYNTH[:3])
    assert finished(data_job)["status"] == "ok", finished(data_job)
    # The data job's split + the dataset pipeline must reproduce the numpy-fed run made with the
    # on-the-fly split: same images, same order, same losses.
    job = jobs.run("train", *SYNTH, "train.epochs=1", "train.feed=dataset", "data.from=%s" % data_job.name)
    assert finished(job)["status"] == "ok", finished(job)
    assert "split loaded from" in check(job, "data-split")["detail"]
    assert losses_by_epoch(job)[1] == losses_by_epoch(straight)[1]


def test_test_set_evaluation_is_counted(jobs, straight):
    first = jobs.run("test", "test.from=%s" % straight.name)
    assert finished(first)["status"] == "ok", finished(first)
    summary = events(first, "result")[0]["summary"]
    assert summary["from"] == straight.name and summary["test_evaluations"] == 1
    conf = np.array(summary["confusion"])
    assert conf.sum() == 300 and np.array_equal(
        conf.sum(axis=1), np.bincount(synthetic_fashion(2000, 300, SYNTHETIC_SEED).test_labels, minlength=10)
    )
    assert summary["accuracy"] == pytest.approx(np.trace(conf) / 300)
    assert check(first, "test-evaluations")["status"] == "observed-pass"
    assert check(first, "checkpoint")["status"] == "observed-pass"

    second = jobs.run("test", "test.from=%s" % straight.name, again=True)  # the CLI refuses it unasked
    assert finished(second)["status"] == "ok"
    warn = check(second, "test-evaluations")
    assert warn["status"] == "observed-fail" and warn["severity"] == "warning" and "2 times" in warn["detail"]
    counter = read_json(straight / "test_evaluations.json")
    assert counter["count"] == 2 and [e["job"] for e in counter["evaluations"]] == [first.name, second.name]
    assert events(second, "result")[0]["summary"]["confusion"] == summary["confusion"]  # same frozen weights


def test_non_finite_loss_stops_the_job_naming_the_step(jobs):
    job = jobs.run("train", *SYNTH, "train.optimizer=sgd", "train.lr=1e30", "train.epochs=1")
    fin = finished(job)
    assert fin["status"] == "failed" and fin["error"]["type"] == "NonFiniteLoss"
    bad = check(job, "finite-loss")
    assert bad["status"] == "observed-fail"
    last = events(job, "step")[-1]
    assert "step %d (global step %d)" % (last["step"], last["global_step"]) in bad["detail"]
    assert last["loss"] in ("nan", "inf", "-inf")
    assert not events(job, "epoch")


def test_ascend_request_fails_at_once_without_a_step(jobs):
    job = jobs.run("train", "device.target=Ascend", *SYNTH)
    fin = finished(job)
    assert fin["status"] == "failed" and fin["error"]["type"] == "DeviceError"
    assert "Unsupported device target Ascend" in fin["error"]["message"]  # MindSpore's own words
    assert fin["error"]["hint"] and "CPU" in fin["error"]["hint"]
    assert events(job, "started")[0]["device"]["requested"] == "Ascend"
    assert not events(job, "step") and not events(job, "check")
    # Nothing ran after the device call: no data loaded, no network built.
    assert fin["t"] - events(job, "started")[0]["t"] < 10


def test_fp16_trains_and_its_checkpoint_evaluates(jobs):
    job = jobs.run("train", *SYNTH, "train.precision=fp16", "train.epochs=1")
    assert finished(job)["status"] == "ok", finished(job)
    assert all(isinstance(s["loss"], float) for s in events(job, "step"))
    assert events(job, "epoch")[0]["val"]["accuracy"] > 0.5
    # This module's one session may have spent its test set in an earlier test: the evaluation is asked for.
    tested = jobs.run("test", "test.from=%s" % job.name, again=True)
    assert finished(tested)["status"] == "ok", finished(tested)
    assert events(tested, "result")[0]["summary"]["precision"]["precision"] == "fp16"


def test_real_data_with_limits(jobs):
    job = jobs.run("train", "train.train_limit=640", "train.val_limit=500", "train.epochs=1")
    assert finished(job)["status"] == "ok", finished(job)
    split = check(job, "data-split")
    assert split["evidence"]["source"] == "official" and split["evidence"]["n_train"] == 640
    assert split["evidence"]["n_train_split"] == 54000 and split["evidence"]["n_val_split"] == 6000
    assert all(len(f["sha256"]) == 64 for f in split["evidence"]["source_files"])
    epoch = events(job, "epoch")[0]
    assert epoch["samples"] == 640 and epoch["val"]["samples"] == 500
    assert epoch["val"]["accuracy"] > 0.3  # ten batches of Adam already beat chance (0.1) by far
