"""The synthetic stand-in: marked as such, deterministic, learnable; and preview selection."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.data.dataset import scale
from workbench.data.preview import preview_indices
from workbench.data.split import stratified_split
from workbench.data.synthetic import synthetic_fashion


def test_synthetic_is_marked_and_shaped_like_the_real_data():
    ds = synthetic_fashion(200, 50, seed=3)
    assert ds.synthetic is True and ds.files == [] and ds.dir is None and ds.verified is False
    assert ds.train_images.shape == (200, 28, 28) and ds.train_images.dtype == np.uint8
    assert ds.test_images.shape == (50, 28, 28)
    assert ds.train_labels.dtype == np.int32 and set(ds.train_labels.tolist()) == set(range(10))
    assert np.bincount(ds.train_labels).tolist() == [20] * 10
    assert scale(ds.train_images).shape == (200, 1, 28, 28)


def test_same_seed_same_data_other_seed_other_data():
    a, b, c = synthetic_fashion(100, 20, 7), synthetic_fashion(100, 20, 7), synthetic_fashion(100, 20, 8)
    assert np.array_equal(a.train_images, b.train_images) and np.array_equal(a.test_labels, b.test_labels)
    assert not np.array_equal(a.train_images, c.train_images)
    # The test set does not depend on the training set's size.
    assert np.array_equal(synthetic_fashion(30, 20, 7).test_images, a.test_images)


def test_patterns_are_learnable_by_a_simple_classifier():
    ds = synthetic_fashion(2000, 500, seed=0)
    x_train = scale(ds.train_images).reshape(2000, -1)
    x_test = scale(ds.test_images).reshape(500, -1)
    # Nearest class mean: weaker than the tiny MLP the jobs train, so a high score here is a floor.
    means = np.stack([x_train[ds.train_labels == c].mean(axis=0) for c in range(10)])
    predicted = np.argmin(((x_test[:, None, :] - means[None]) ** 2).sum(axis=2), axis=1)
    assert (predicted == ds.test_labels).mean() > 0.95


def test_synthetic_needs_samples():
    with pytest.raises(ValueError, match="n_train"):
        synthetic_fashion(0, 10, 1)


def test_smallest_configured_synthetic_set_splits():
    ds = synthetic_fashion(20, 10, seed=1)
    train_idx, val_idx = stratified_split(ds.train_labels, 0.1, 37)
    assert train_idx.size == 10 and val_idx.size == 10


def test_preview_indices_pick_each_class_reproducibly():
    labels = np.repeat(np.arange(10), 30)
    picked = preview_indices(labels, per_class=4, seed=0)
    assert sorted(picked) == list(range(10))
    for cls, indices in picked.items():
        assert len(indices) == 4 and len(set(indices)) == 4
        assert all(labels[i] == cls for i in indices)
        assert indices == sorted(indices)
    assert preview_indices(labels, 4, 0) == picked
    assert preview_indices(labels, 4, 1) != picked


def test_preview_with_scarce_or_absent_classes():
    labels = np.array([0, 0, 1])
    picked = preview_indices(labels, per_class=4)
    assert picked[0] == [0, 1] and picked[1] == [2] and picked[9] == []
