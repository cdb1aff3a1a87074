"""Stratified split of the real training labels: counts, coverage, reproducibility across
processes, and the split record on disk with its tamper check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.data.errors import DataError
from workbench.data.loader import load_fashion_mnist
from workbench.data.locate import BUNDLED_DIR
from workbench.data.split import describe_split, index_sha256, load_split, save_split, stratified_split

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def real():
    """The bundled official data, loaded and verified once for this module."""
    return load_fashion_mnist(BUNDLED_DIR, verify=True)


@pytest.fixture(scope="module")
def default_split(real):
    return stratified_split(real.train_labels)


def test_default_split_is_5400_600_per_class(real, default_split):
    train_idx, val_idx = default_split
    assert train_idx.dtype == np.int64 and val_idx.dtype == np.int64
    assert np.bincount(real.train_labels[train_idx]).tolist() == [5400] * 10
    assert np.bincount(real.train_labels[val_idx]).tolist() == [600] * 10


def test_no_overlap_and_union_covers_all(default_split):
    train_idx, val_idx = default_split
    assert np.intersect1d(train_idx, val_idx).size == 0
    assert np.array_equal(np.union1d(train_idx, val_idx), np.arange(60000))
    assert np.all(np.diff(train_idx) > 0) and np.all(np.diff(val_idx) > 0)  # sorted, unique


def test_same_seed_same_split_in_two_separate_processes(tmp_path, real, default_split):
    np.save(tmp_path / "labels.npy", real.train_labels)
    code = (
        "import json, sys, numpy as np\n"
        "from workbench.data.split import stratified_split, index_sha256\n"
        "t, v = stratified_split(np.load(sys.argv[1]), 0.1, 37)\n"
        "print(json.dumps([index_sha256(t), index_sha256(v)]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    runs = []
    for hash_seed in ("1", "2"):
        env["PYTHONHASHSEED"] = hash_seed
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "labels.npy")],
            env=env,
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        runs.append(json.loads(out.stdout))
    here = [index_sha256(default_split[0]), index_sha256(default_split[1])]
    assert runs[0] == runs[1] == here


def test_different_seed_gives_different_split(real, default_split):
    _, val_37 = default_split
    _, val_38 = stratified_split(real.train_labels, 0.1, 38)
    assert not np.array_equal(val_37, val_38)
    assert np.bincount(real.train_labels[val_38]).tolist() == [600] * 10


def test_other_fraction_and_tiny_classes():
    labels = np.repeat(np.arange(10), 2)  # 2 per class, as in the smallest synthetic config
    train_idx, val_idx = stratified_split(labels, 0.1, 1)
    assert np.bincount(labels[val_idx], minlength=10).tolist() == [1] * 10
    assert np.bincount(labels[train_idx], minlength=10).tolist() == [1] * 10
    labels = np.repeat(np.arange(3), 100)
    assert stratified_split(labels, 0.25, 5)[1].size == 75


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_bad_fraction_is_rejected(fraction):
    with pytest.raises(ValueError, match="val_fraction"):
        stratified_split(np.arange(10) % 2, fraction)


def test_save_load_round_trip(tmp_path, real, default_split):
    train_idx, val_idx = default_split
    meta = describe_split(real.train_labels, train_idx, val_idx, 37, 0.1, real.files)
    json_path = save_split(tmp_path, train_idx, val_idx, meta)
    assert json_path == tmp_path / "split.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["split.json", "split.npz"]  # no temp left
    record = json.loads(json_path.read_text())
    assert record["seed"] == 37 and record["val_fraction"] == 0.1
    assert record["per_class"][3] == {"label": 3, "train": 5400, "val": 600}
    assert record["n_train"] == 54000 and record["n_val"] == 6000
    assert [f["sha256"] for f in record["source_files"]] == [f["sha256"] for f in real.files]
    for where in (tmp_path, json_path, tmp_path / "split.npz"):
        split = load_split(where)
        assert np.array_equal(split.train_idx, train_idx) and np.array_equal(split.val_idx, val_idx)
        assert split.seed == 37 and split.val_fraction == 0.1 and split.path == tmp_path


def test_tampered_index_file_is_detected(tmp_path, default_split):
    train_idx, val_idx = default_split
    save_split(tmp_path, train_idx, val_idx, {"seed": 37, "val_fraction": 0.1})
    moved = val_idx.copy()
    moved[0] = train_idx[0]  # one image moved from train to val
    np.savez(tmp_path / "split.npz", train_idx=train_idx, val_idx=np.sort(moved))
    with pytest.raises(DataError) as info:
        load_split(tmp_path)
    message = str(info.value)
    assert str(tmp_path / "split.npz") in message and "val_idx does not match" in message


def test_tampered_record_is_detected(tmp_path, default_split):
    save_split(tmp_path, *default_split, {"seed": 37, "val_fraction": 0.1})
    record = json.loads((tmp_path / "split.json").read_text())
    record["train_idx_sha256"] = "0" * 64
    (tmp_path / "split.json").write_text(json.dumps(record))
    with pytest.raises(DataError, match="train_idx does not match"):
        load_split(tmp_path)


def test_missing_and_broken_records_name_the_file(tmp_path, default_split):
    with pytest.raises(DataError) as info:
        load_split(tmp_path)
    assert str(tmp_path / "split.json") in str(info.value)
    save_split(tmp_path, *default_split, {"seed": 37, "val_fraction": 0.1})
    (tmp_path / "split.npz").unlink()
    with pytest.raises(DataError) as info:
        load_split(tmp_path)
    assert str(tmp_path / "split.npz") in str(info.value) and "missing" in str(info.value)
    (tmp_path / "split.json").write_text("{not json")
    with pytest.raises(DataError, match="JSON"):
        load_split(tmp_path)
    (tmp_path / "split.json").write_text(json.dumps({"format": "ms-workbench split v1"}))
    with pytest.raises(DataError, match="'seed' is missing"):
        load_split(tmp_path)


def test_save_refuses_overlapping_indices(tmp_path):
    with pytest.raises(ValueError, match="both train and val"):
        save_split(tmp_path, np.array([0, 1, 2]), np.array([2, 3]), {})
    assert not (tmp_path / "split.json").exists()
