"""The `data` job run for real through `ms-workbench run data` on the bundled official files."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.data.loader import load_fashion_mnist
from workbench.data.locate import BUNDLED_DIR
from workbench.data.official import OFFICIAL_FILES
from workbench.data.split import index_sha256, load_split, stratified_split
from workbench.events.protocol import validate_file
from workbench.views.data import read_preview

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIRST_TEN = [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]


def run_data(run_cli, sessions: Path, *sets: str):
    """Run the data job with --json; return (process, events, job folder)."""
    args = ["run", "data", "--json", "--sessions", sessions]
    for item in sets:
        args += ["--set", item]
    proc = run_cli(*args, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    job_dirs = sorted(sessions.glob("*/jobs/data-*"), key=lambda p: p.stat().st_mtime)
    assert job_dirs, "no job folder: stderr %s" % proc.stderr
    return proc, events, job_dirs[-1]


def by_type(events, kind):
    return [e for e in events if e["type"] == kind]


def checks(events):
    return {e["id"]: e for e in by_type(events, "check")}


@pytest.fixture(scope="module")
def official():
    """The bundled files, read in this process for comparison."""
    return load_fashion_mnist(BUNDLED_DIR)


def test_bundled_files_give_the_course_split(sessions, run_cli, official):
    proc, events, job = run_data(run_cli, sessions)
    assert proc.returncode == 0, proc.stderr
    assert validate_file(str(job / "events.jsonl")) == []
    assert [e["type"] for e in events][0] == "started" and events[-1]["type"] == "finished"
    assert events[-1]["status"] == "ok" and events[-1]["error"] is None

    found = checks(events)
    assert all(c["status"] == "observed-pass" for c in found.values()), found
    for spec in OFFICIAL_FILES:
        evidence = found["data.file." + spec.key]["evidence"]
        assert evidence["sha256"] == spec.content_sha256 == evidence["official_sha256"]
    assert found["data.files"]["evidence"]["dir"] == str(BUNDLED_DIR)
    assert found["data.files"]["evidence"]["searched"][-1].endswith(".cache/ms-workbench/fashion-mnist")
    assert found["data.scale"]["evidence"]["dtype"] == "float32"
    assert found["data.scale"]["evidence"]["min"] == 0.0 and found["data.scale"]["evidence"]["max"] == 1.0
    assert found["data.split.disjoint"]["evidence"]["overlap"] == 0

    summary = by_type(events, "result")[0]["summary"]
    assert summary["first_train_labels"] == FIRST_TEN
    assert summary["totals"] == {"train": 54000, "val": 6000, "test": 10000}
    assert summary["counts"] == {"train": [5400] * 10, "val": [600] * 10, "test": [1000] * 10}
    assert summary["synthetic"] is False and summary["source"] == "official" and summary["scale"] == "/255"
    assert [f["sha256"] for f in summary["files"]] == [s.content_sha256 for s in OFFICIAL_FILES]
    assert summary["class_names"][0] == "T-shirt/top" and summary["class_names"][9] == "Ankle boot"

    # Pixel statistics of the train split only, recomputed here the plain way.
    split = load_split(job / "artifacts")
    total = total_sq = 0.0
    for start in range(0, split.train_idx.size, 6000):
        pixels = official.train_images[split.train_idx[start : start + 6000]].astype(np.float64) / 255.0
        total, total_sq = total + pixels.sum(), total_sq + np.square(pixels).sum()
    n = split.train_idx.size * 28 * 28
    mean = total / n
    assert summary["pixel"]["mean"] == pytest.approx(mean, abs=1e-9)
    assert summary["pixel"]["std"] == pytest.approx(np.sqrt(total_sq / n - mean * mean), abs=1e-7)

    # The split artifact: loadable, 5 400 / 600 per class, the same as a split made in this process.
    assert split.seed == 37 and split.val_fraction == 0.1
    assert np.bincount(official.train_labels[split.train_idx]).tolist() == [5400] * 10
    assert np.bincount(official.train_labels[split.val_idx]).tolist() == [600] * 10
    here_train, here_val = stratified_split(official.train_labels, 0.1, 37)
    assert np.array_equal(here_train, split.train_idx) and np.array_equal(here_val, split.val_idx)
    assert summary["split"]["train_sha256"] == index_sha256(here_train)
    assert summary["split"]["val_sha256"] == index_sha256(here_val)
    artifacts = {e["path"]: e for e in by_type(events, "artifact")}
    assert set(artifacts) == {"artifacts/split.npz", "artifacts/split.json", "artifacts/preview.npz"}

    # The preview carries the real pixels of training-split images, some of every class.
    preview = read_preview(job / summary["preview"])
    assert np.array_equal(preview.images, official.train_images[preview.indices])
    assert np.array_equal(preview.labels, official.train_labels[preview.indices])
    assert np.bincount(preview.labels, minlength=10).tolist() == [4] * 10
    assert not np.isin(preview.indices, split.val_idx).any()


def test_missing_file_in_configured_dir_fails_naming_it(sessions, run_cli, tmp_path):
    copy = tmp_path / "fashion-mnist"
    copy.mkdir()
    for spec in OFFICIAL_FILES:
        os.symlink(BUNDLED_DIR / (spec.name + ".gz"), copy / (spec.name + ".gz"))
    (copy / "train-labels-idx1-ubyte.gz").unlink()
    proc, events, job = run_data(run_cli, sessions, "data.dir=%s" % copy)
    assert proc.returncode == 1
    finished = events[-1]
    assert finished["type"] == "finished" and finished["status"] == "failed"
    assert "train-labels-idx1-ubyte" in finished["error"]["message"] and str(copy) in finished["error"]["message"]
    assert "ms-workbench data fetch" in finished["error"]["hint"]
    files = checks(events)["data.files"]
    assert files["status"] == "observed-fail" and "train-labels-idx1-ubyte" in files["detail"]
    # The bundled copy next door was not used instead.
    assert not by_type(events, "result") and not (job / "artifacts" / "split.json").exists()
    assert validate_file(str(job / "events.jsonl")) == []


def test_existing_empty_data_dir_is_an_error_not_a_fallback(sessions, run_cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc, events, job = run_data(run_cli, sessions, "data.dir=%s" % empty)
    assert proc.returncode == 1
    message = events[-1]["error"]["message"]
    assert str(empty / "train-images-idx3-ubyte") in message and "no other copy is used" in message
    assert checks(events)["data.files"]["status"] == "observed-fail"
    assert not by_type(events, "result")


def test_corrupt_file_fails_its_own_check_with_the_hash(sessions, run_cli, tmp_path):
    copy = tmp_path / "fashion-mnist"
    copy.mkdir()
    for spec in OFFICIAL_FILES:
        if spec.key != "test_labels":
            os.symlink(BUNDLED_DIR / (spec.name + ".gz"), copy / (spec.name + ".gz"))
    labels = bytearray(gzip.decompress((BUNDLED_DIR / "t10k-labels-idx1-ubyte.gz").read_bytes()))
    labels[100] = (labels[100] + 1) % 10  # still a valid label: only the hash can tell
    (copy / "t10k-labels-idx1-ubyte").write_bytes(bytes(labels))
    proc, events, job = run_data(run_cli, sessions, "data.dir=%s" % copy)
    assert proc.returncode == 1
    found = checks(events)
    assert [found["data.file." + s.key]["status"] for s in OFFICIAL_FILES] == ["observed-pass"] * 3 + ["observed-fail"]
    failed = found["data.file.test_labels"]
    assert "wrong hash" in failed["detail"] and str(copy / "t10k-labels-idx1-ubyte") in failed["detail"]
    assert "wrong hash" in events[-1]["error"]["message"]


def test_synthetic_is_marked_in_every_event_and_seeds_differ(sessions, run_cli):
    proc, events, job = run_data(run_cli, sessions, "data.source=synthetic")
    assert proc.returncode == 0, proc.stderr
    assert events and all(e.get("synthetic") is True for e in events)
    assert any("SYNTHETIC" in e["message"] for e in by_type(events, "log"))
    assert all(c["detail"].startswith("SYNTHETIC") for c in by_type(events, "check"))
    assert checks(events)["data.files"]["status"] == "not-run"
    summary = by_type(events, "result")[0]["summary"]
    assert summary["synthetic"] is True and summary["files"] == [] and summary["totals"]["train"] == 1800
    record = json.loads((job / "artifacts" / "split.json").read_text())
    assert record["synthetic"] is True and record["source"] == "synthetic"

    other, other_events, _ = run_data(run_cli, sessions, "data.source=synthetic", "data.split_seed=38")
    assert other.returncode == 0
    other_split = by_type(other_events, "result")[0]["summary"]["split"]
    assert other_split["seed"] == 38
    assert other_split["train_sha256"] != summary["split"]["train_sha256"]


def test_importing_the_job_loads_no_ui_and_no_mindspore():
    code = (
        "import sys, json\nimport jobs.data\n"
        "print(json.dumps(sorted({k.split('.')[0] for k in sys.modules} & {'rich', 'textual', 'mindspore'})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=str(PROJECT_ROOT), capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_job_and_what_it_imports_run_on_python_39():
    vermin = Path(sys.executable).with_name("vermin")
    if not vermin.exists():
        pytest.skip("vermin is not installed (pip install -e '.[test]')")
    targets = [
        "jobs/data.py",
        "workbench/data",
        "workbench/jobkit/context.py",
        "workbench/events/protocol.py",
        "workbench/system/atomic.py",
    ]
    out = subprocess.run(
        # the script run by this interpreter: its #! line names the path the venv was made at, which a
        # moved or bind-mounted venv does not have
        [sys.executable, str(vermin), "-t=3.9-", "--no-tips", "--violations"] + targets,
        cwd=str(PROJECT_ROOT),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
