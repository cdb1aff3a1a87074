"""The training feed's pure parts: epoch order, batches with the tail kept, RNG state, split loading."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jobs.common import datafeed
from jobs.common.datafeed import SYNTHETIC_SEED
from workbench.config.layers import defaults
from workbench.data.dataset import scale
from workbench.data.split import save_split, stratified_split
from workbench.data.synthetic import synthetic_fashion
from workbench.jobkit.context import JobFailed


def test_steps_keep_the_tail_batch_and_max_steps_caps():
    assert datafeed.steps_per_epoch(54000, 64) == 844  # 843 full batches + a tail of 48
    assert datafeed.steps_per_epoch(128, 64) == 2
    assert datafeed.steps_per_epoch(300, 64, max_steps=3) == 3
    assert datafeed.steps_per_epoch(300, 64, max_steps=50) == 5
    assert datafeed.batch_bounds(300, 64, 4) == (256, 300)
    with pytest.raises(IndexError):
        datafeed.batch_bounds(300, 64, 5)
    with pytest.raises(ValueError):
        datafeed.steps_per_epoch(0, 64)


def test_numpy_feed_visits_every_sample_once_in_the_epoch_order():
    x = np.arange(300, dtype=np.float32).reshape(300, 1, 1, 1) * np.ones((1, 1, 28, 28), np.float32)
    y = (np.arange(300) % 10).astype(np.int32)
    feed = datafeed.NumpyFeed(x, y, 64)
    order = datafeed.epoch_order(np.random.default_rng(5), 300)
    batches = list(feed.numpy_batches(order, 0, datafeed.steps_per_epoch(300, 64)))
    assert [len(b[1]) for b in batches] == [64, 64, 64, 64, 44]
    seen = np.concatenate([b[0][:, 0, 0, 0] for b in batches]).astype(np.int64)
    assert np.array_equal(seen, order)  # sliced in exactly the drawn order
    assert np.array_equal(np.concatenate([b[1] for b in batches]), y[order])
    # Starting mid-epoch yields the same later batches (what a resume relies on).
    later = list(feed.numpy_batches(order, 3, 5))
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(later, batches[3:]))


def test_generator_state_survives_json_and_continues_the_same_orders():
    rng = np.random.default_rng(1)
    datafeed.epoch_order(rng, 1000)
    saved = json.loads(json.dumps(datafeed.generator_state(rng)))
    expected = [datafeed.epoch_order(rng, 1000) for _ in range(3)]
    restored = datafeed.generator_from_state(saved)
    assert all(np.array_equal(datafeed.epoch_order(restored, 1000), e) for e in expected)
    with pytest.raises(ValueError, match="NoSuchBitGen"):
        datafeed.generator_from_state({"bit_generator": "NoSuchBitGen"})


def _cfg(**data):
    cfg = defaults()
    cfg["data"].update(source="synthetic", synthetic_train=400, synthetic_test=50)
    cfg["data"].update(data)
    return cfg


def test_split_made_on_the_fly_says_so_and_applies_limits(tmp_path):
    cfg = _cfg()
    cfg["train"].update(train_limit=100, val_limit=30)
    data = datafeed.load_run_data(tmp_path / "jobs" / "train-001", cfg)
    assert "split made on the fly with data.split_seed=37" in data.how
    assert data.train_x.shape == (100, 1, 28, 28) and data.train_x.dtype == np.float32
    assert float(data.train_x.max()) <= 1.0 and data.val_y.shape == (30,)
    assert data.description["n_train_split"] == 360 and data.description["source"] == "synthetic"
    source = synthetic_fashion(400, 50, SYNTHETIC_SEED)
    train_idx, val_idx = stratified_split(source.train_labels, 0.1, 37)
    assert np.array_equal(data.train_y, source.train_labels[train_idx[:100]])
    assert np.array_equal(data.val_y, source.train_labels[val_idx[:30]])


def test_split_from_a_data_job_is_used_and_checked(tmp_path):
    jobs = tmp_path / "sid" / "jobs"
    data_job = jobs / "data-001"
    source = synthetic_fashion(400, 50, SYNTHETIC_SEED)
    # A different split than the on-the-fly one (seed 5), so using it is visible.
    train_idx, val_idx = stratified_split(source.train_labels, 0.2, 5)
    save_split(data_job / "artifacts", train_idx, val_idx, {"seed": 5, "val_fraction": 0.2, "synthetic": True})
    (data_job / "config.json").write_text(json.dumps(_cfg()))
    cfg = _cfg(**{"from": "data-001"})
    data = datafeed.load_run_data(jobs / "train-002", cfg)
    assert "split loaded from" in data.how and data.description["seed"] == 5
    assert np.array_equal(data.val_y, source.train_labels[val_idx])

    # A split whose indices point past the data it is used with is refused, naming the file.
    save_split(jobs / "data-002" / "artifacts", np.arange(10), np.array([100000]), {"seed": 1, "val_fraction": 0.1})
    with pytest.raises(JobFailed, match=r"split\.json: index 100000 is outside the 400 training images"):
        datafeed.load_run_data(jobs / "train-002", _cfg(**{"from": "data-002"}))
    with pytest.raises(JobFailed, match="data.from is 'data-404'"):
        datafeed.load_run_data(jobs / "train-002", _cfg(**{"from": "data-404"}))


def test_synthetic_split_record_names_its_seed_and_counts(tmp_path):
    jobs = tmp_path / "sid" / "jobs"
    source = synthetic_fashion(300, 20, 9)
    train_idx, val_idx = stratified_split(source.train_labels, 0.1, 37)
    save_split(
        jobs / "data-001" / "artifacts",
        train_idx,
        val_idx,
        {
            "seed": 37,
            "val_fraction": 0.1,
            "synthetic": True,
            "synthetic_seed": 9,
            "synthetic_counts": {"train": 300, "test": 20},
        },
    )
    data = datafeed.load_run_data(jobs / "train-001", _cfg(**{"from": "data-001"}))  # config says 400
    assert np.array_equal(data.train_x, scale(source.train_images[train_idx]))
