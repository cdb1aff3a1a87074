"""The export job, run for real: a tiny training run, then exports of its checkpoint and of broken copies."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jobs.export.fresh_process import not_fresh
from jobs.export.loader.report import batch_rows
from jobs.export.reference import choose_samples, find_confusion
from tests.support.cli import PROJECT_ROOT, cli_env, run_cli
from tests.support.events import assert_events_valid
from workbench.analysis.metrics import most_confused_pairs
from workbench.analysis.tensordiff import diff_tensors
from workbench.data.dataset import CLASS_NAMES
from workbench.data.loader import load_fashion_mnist
from workbench.events.protocol import read_all
from workbench.session.store import SessionStore
from workbench.system.atomic import read_json

JOB_TIMEOUT_S = 600
TRAIN_SETS = ["train.epochs=1", "train.train_limit=512", "train.val_limit=256"]
RENAMES = {"1.weight": "dense1.weight", "1.bias": "dense1.bias", "3.weight": "dense2.weight", "3.bias": "dense2.bias"}


def run_job(root: Path, sid: str, kind: str, *sets: str) -> subprocess.CompletedProcess:
    """`ms-workbench run KIND` in a real subprocess, in session `sid`."""
    args = ["run", kind, "--sessions", root, "--session", sid]
    for item in sets:
        args += ["--set", item]
    return run_cli(*args, timeout=JOB_TIMEOUT_S)


def job_events(job_dir: Path) -> list:
    """Every event of a job, after checking each line against the protocol."""
    assert_events_valid(job_dir)
    return read_all(str(job_dir / "events.jsonl"))


def checks_of(events: list) -> dict:
    """Check events by id."""
    return {ev["id"]: ev for ev in events if ev["type"] == "check"}


def finished_of(events: list) -> dict:
    """The finished event."""
    done = [ev for ev in events if ev["type"] == "finished"]
    assert len(done) == 1, "expected one finished event, got %d" % len(done)
    return done[0]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """A session with one real training run (official data, 1 epoch on 512 images)."""
    root = tmp_path_factory.mktemp("export-sessions")
    sid = SessionStore(root).create(["pytest"])
    proc = run_job(root, sid, "train", *TRAIN_SETS)
    train_dir = root / sid / "jobs" / "train-001"
    assert proc.returncode == 0, "train failed:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:])
    assert (train_dir / "artifacts" / "best.ckpt").is_file()
    assert_events_valid(train_dir)
    return {"root": root, "sid": sid, "train": train_dir}


@pytest.fixture(scope="module")
def exported(session):
    """An export of the training run's best checkpoint (formats and batch sizes as configured by default)."""
    proc = run_job(session["root"], session["sid"], "export", "export.from=train-001")
    job_dir = _latest_export(session)
    assert proc.returncode == 0, "export failed:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-3000:])
    events = job_events(job_dir)
    return {
        "dir": job_dir,
        "events": events,
        "checks": checks_of(events),
        "result": [ev for ev in events if ev["type"] == "result"][-1]["summary"],
    }


def test_checkpoint_reload_in_fresh_process_gives_identical_outputs(exported):
    check = exported["checks"]["ckpt-reload"]
    assert check["status"] == "observed-pass", check["detail"]
    assert check["max_abs"] == 0.0
    assert check["evidence"]["param_not_load"] == [] and check["evidence"]["ckpt_not_load"] == []
    # The loader's own outputs, compared here again, give the reported difference.
    report = read_json(exported["dir"] / check["evidence"]["report"])
    forward = [s for s in report["steps"] if s["step"] == "forward"][0]
    reloaded = np.load(exported["dir"] / "loads" / forward["outputs"])
    reference = np.load(exported["dir"] / "artifacts" / "reference" / "logits.npy")
    assert reloaded.shape == reference.shape
    assert float(np.max(np.abs(reloaded - reference))) == 0.0


def test_reload_really_happens_in_another_process(exported):
    started = [ev for ev in exported["events"] if ev["type"] == "started"][0]
    for check_id in ("ckpt-reload", "mindir-load"):
        pids = exported["checks"][check_id]["evidence"]["pids"]
        assert pids["job"] == started["pid"]
        assert isinstance(pids["loader"], int) and pids["loader"] != pids["job"]
        assert pids["loader_parent"] == pids["job"]  # a child this job started, not some other process
        report = read_json(exported["dir"] / exported["checks"][check_id]["evidence"]["report"])
        assert report["pid"] == pids["loader"]
    loaders = exported["result"]["pids"]["loaders"]
    assert loaders["ckpt"]["pid"] != loaders["mindir"]["pid"]


def test_mindir_reports_each_batch_size_truthfully(exported):
    checks, summary = exported["checks"], exported["result"]
    assert checks["mindir-export"]["status"] == "observed-pass"
    assert checks["mindir-export"]["evidence"]["signature"] == [64, 1, 28, 28]
    reference = np.load(exported["dir"] / "artifacts" / "reference" / "logits.npy")
    report = read_json(exported["dir"] / "loads" / "mindir.json")
    runs = {s["batch_size"]: s for s in report["steps"] if s["step"] == "run"}
    for size in (64, 1, 32):
        check = checks["mindir-b%d" % size]
        assert check["batch_size"] == size and check["format"] == "mindir"
        assert summary["checks"]["mindir"]["batches"][str(size)]["status"] == check["status"]
        run = runs[size]
        if run["ok"]:
            # Whatever MindSpore computed is compared again here: the verdict follows the numbers.
            outputs = np.load(exported["dir"] / "loads" / run["outputs"])
            rows = np.load(exported["dir"] / "loads" / run["rows"])
            assert outputs.shape == (rows.size, 10)
            assert run["calls"] == batch_rows(reference.shape[0], size).shape[0]
            diff = diff_tensors("again", reference[rows], outputs, 1e-5, 1.3e-6)
            assert check["max_abs"] == diff["max_abs"]
            assert check["status"] == ("observed-pass" if diff["passed"] else "observed-fail")
        else:
            assert check["status"] == "observed-fail"
            assert run["error"] in check["detail"]  # MindSpore's own message, as it came
    assert "exported signature is batch 64" in checks["mindir-b1"]["detail"]


def test_lite_is_not_run_with_its_reason_when_it_does_not_import(exported):
    if importlib.util.find_spec("mindspore_lite") is not None:
        pytest.skip("mindspore_lite is installed in this interpreter: the not-installed path does not apply")
    for check_id in ("lite-cpu", "lite-target"):
        check = exported["checks"][check_id]
        assert check["status"] == "not-run"
        assert "mindspore_lite does not import" in check["detail"]
        assert "No module named 'mindspore_lite'" in check["detail"]
        assert "cp37" in check["hint"]
    assert exported["result"]["lite"]["reason"]


def test_reference_package_covers_every_class_and_the_confused_pairs(exported, session):
    ref_dir = exported["dir"] / "artifacts" / "reference"
    ref = read_json(ref_dir / "reference.json")
    inputs = np.load(ref_dir / "inputs.npy")
    logits = np.load(ref_dir / "logits.npy")
    n = len(ref["samples"])
    assert inputs.dtype == np.float32 and inputs.shape == (n, 1, 28, 28)
    assert 0.0 <= float(inputs.min()) and float(inputs.max()) <= 1.0
    assert logits.dtype == np.float32 and logits.shape == (n, 10)
    assert ref["class_names"] == list(CLASS_NAMES)
    assert ref["preprocessing"] == "/255, float32, NCHW [N,1,28,28]"
    assert ref["tolerance"]["atol"] > 0 and "atol" in ref["tolerance"]["rule"]
    assert ref["classes_covered"] == list(range(10))
    assert (
        ref["checkpoint_sha256"]
        == hashlib.sha256((session["train"] / "artifacts" / "best.ckpt").read_bytes()).hexdigest()
    )
    # Indices point into the official training file: the labels and pixels recorded must be those.
    data = load_fashion_mnist(verify=False)
    for row, sample in enumerate(ref["samples"]):
        assert data.train_labels[sample["index"]] == sample["label"]
        assert np.array_equal(inputs[row, 0], data.train_images[sample["index"]].astype(np.float32) / np.float32(255))
        assert sample["predicted"] == int(np.argmax(logits[row]))
    best = read_json(session["train"] / "artifacts" / "best.json")
    pairs = most_confused_pairs(find_confusion(best), 3)
    assert [(p["true"], p["pred"], p["count"]) for p in ref["confused_pairs"]] == pairs
    for pair in ref["confused_pairs"]:
        if pair["row"] is not None:
            sample = ref["samples"][pair["row"]]
            assert (sample["label"], sample["predicted"]) == (pair["true"], pair["pred"])


def test_artifact_hashes_match_the_files(exported):
    artifacts = [ev for ev in exported["events"] if ev["type"] == "artifact"]
    kinds = sorted(ev["kind"] for ev in artifacts)
    assert kinds == ["checkpoint", "mindir", "reference-inputs", "reference-json", "reference-logits"]
    for ev in artifacts:
        path = exported["dir"] / ev["path"]
        data = path.read_bytes()
        assert ev["bytes"] == len(data), ev["path"]
        assert ev["sha256"] == hashlib.sha256(data).hexdigest(), ev["path"]
    listed = {(a["path"], a["sha256"]) for a in exported["result"]["artifacts"]}
    assert listed == {(ev["path"], ev["sha256"]) for ev in artifacts}


def _rename_layers(src: Path, dst: Path) -> None:
    """Write a copy of a checkpoint whose layer names were changed (in a separate MindSpore process)."""
    script = (
        "import sys, json, mindspore as ms\n"
        "renames = json.loads(sys.argv[3])\n"
        "params = ms.load_checkpoint(sys.argv[1])\n"
        "ms.save_checkpoint([{'name': renames.get(k, k), 'data': v} for k, v in params.items()], sys.argv[2])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(src), str(dst), json.dumps(RENAMES)],
        env=cli_env(),
        cwd=str(PROJECT_ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def _latest_export(session) -> Path:
    return sorted(
        (session["root"] / session["sid"] / "jobs").glob("export-*"), key=lambda p: int(p.name.split("-")[1])
    )[-1]


def test_renamed_layers_are_an_observed_fail_naming_them(session, tmp_path):
    renamed = tmp_path / "renamed.ckpt"
    _rename_layers(session["train"] / "artifacts" / "best.ckpt", renamed)
    proc = run_job(session["root"], session["sid"], "export", "export.from=%s" % renamed, "export.formats=[ckpt]")
    assert proc.returncode == 1, proc.stdout[-3000:]
    events = job_events(_latest_export(session))
    checks = checks_of(events)
    for check_id in ("source-load", "ckpt-reload"):
        check = checks[check_id]
        assert check["status"] == "observed-fail", (check_id, check["detail"])
        assert check["evidence"]["param_not_load"] == list(RENAMES)
        assert sorted(check["evidence"]["ckpt_not_load"]) == sorted(RENAMES.values())
        for name in list(RENAMES) + list(RENAMES.values()):
            assert name in check["detail"]
    # The fresh process saw the same lists itself, and never reported a pass.
    assert checks["ckpt-reload"]["evidence"]["pids"]["loader"] != checks["ckpt-reload"]["evidence"]["pids"]["job"]
    assert not any(
        ev["status"] == "observed-pass"
        for ev in checks.values()
        if ev["id"] in ("source-load", "ckpt-reload", "reference")
    )
    assert checks["reference"]["status"] == "not-run"
    finished = finished_of(events)
    assert finished["status"] == "failed"
    assert "dense1.weight" in finished["error"]["message"]


def test_truncated_checkpoint_fails_naming_the_file(session, tmp_path):
    truncated = tmp_path / "truncated.ckpt"
    data = (session["train"] / "artifacts" / "best.ckpt").read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    proc = run_job(session["root"], session["sid"], "export", "export.from=%s" % truncated)
    assert proc.returncode == 1
    events = job_events(_latest_export(session))
    finished = finished_of(events)
    assert finished["status"] == "failed"
    assert str(truncated) in finished["error"]["message"]
    check = checks_of(events)["source-load"]
    assert check["status"] == "observed-fail" and str(truncated) in check["detail"]
    assert not any(ev["type"] == "artifact" for ev in events)  # nothing is handed over


def test_fresh_net_with_dynamic_batch_says_so_and_runs_every_size(session):
    proc = run_job(
        session["root"],
        session["sid"],
        "export",
        "export.from=init",
        "export.dynamic_batch=true",
        "data.source=synthetic",
    )
    job_dir = _latest_export(session)
    events = job_events(job_dir)
    checks = checks_of(events)
    assert checks["source"]["status"] == "not-run" and checks["source"]["subject"] == "initial weights"
    assert (
        "freshly initialised" in checks["source"]["detail"]
        and "never count for acceptance" in checks["source"]["detail"]
    )
    export = checks["mindir-export"]
    if export["status"] == "observed-fail":  # a MindSpore without None dimensions says so, and nothing runs
        assert "None batch dimension" in export["detail"] or "mindspore.export failed" in export["detail"]
        assert proc.returncode == 1
        return
    assert export["evidence"]["signature"] == [-1, 1, 28, 28]
    for size in (64, 1, 32):
        assert checks["mindir-b%d" % size]["status"] == "observed-pass", checks["mindir-b%d" % size]["detail"]
        assert "dynamic batch signature" in checks["mindir-b%d" % size]["detail"]
    assert checks["ckpt-reload"]["status"] == "observed-pass" and checks["ckpt-reload"]["max_abs"] == 0.0
    ref = read_json(job_dir / "artifacts" / "reference" / "reference.json")
    assert ref["source"]["kind"] == "fresh-init" and ref["confused_pairs"] == []
    assert ref["data"]["source"] == "synthetic"
    assert proc.returncode == 0, proc.stdout[-3000:]


# ----- pure helpers ---------------------------------------------------------------------------


def test_batch_rows_cover_every_row_with_exact_batches():
    rows = batch_rows(23, 64)
    assert rows.shape == (1, 64) and set(rows.ravel()) == set(range(23))
    rows = batch_rows(23, 1)
    assert rows.shape == (23, 1) and list(rows.ravel()) == list(range(23))
    rows = batch_rows(23, 10)
    assert (
        rows.shape == (3, 10)
        and list(rows.ravel()[:23]) == list(range(23))
        and list(rows.ravel()[23:]) == list(range(7))
    )
    with pytest.raises(ValueError, match="batch_size=0"):
        batch_rows(23, 0)


def test_choose_samples_takes_first_per_class_then_one_per_confused_pair():
    labels = np.array([0, 1, 0, 1, 2, 2, 0, 1, 2])
    pred = np.array([0, 1, 1, 1, 2, 0, 1, 1, 2])
    chosen, pairs = choose_samples(labels, pred, per_class=1, pairs=[(0, 1, 2), (2, 0, 1), (1, 2, 5)], n_classes=3)
    assert [c["pos"] for c in chosen] == [0, 1, 4, 2, 5]
    assert [c["role"] for c in chosen] == ["class", "class", "class", "confused", "confused"]
    assert pairs[0]["row"] == 3 and pairs[1]["row"] == 4
    assert pairs[2]["row"] is None  # no class-1 sample predicted 2: said, not invented
    chosen, pairs = choose_samples(labels, None, per_class=2, pairs=[], n_classes=3)
    assert [c["pos"] for c in chosen] == [0, 2, 1, 3, 4, 5] and pairs == []


def test_find_confusion_reads_the_validation_matrix():
    matrix = [[1, 0], [2, 3]]
    assert find_confusion({"val": {"confusion": matrix}}) == matrix
    assert find_confusion({"metrics": {"val": {"confusion": matrix}}}) == matrix
    assert find_confusion({"val": {}}) is None and find_confusion(None) is None


def test_a_load_in_this_process_or_by_a_stranger_is_never_fresh():
    def outcome(loader, parent):
        return {"report": {"pid": loader}, "pids": {"job": 100, "loader": loader, "loader_parent": parent}}

    assert not_fresh(outcome(101, 100), "loader") is None
    assert "not in a new child of this job (100)" in not_fresh(outcome(100, 99), "loader")
    assert "not in a new child" in not_fresh(outcome(101, 1), "loader")
