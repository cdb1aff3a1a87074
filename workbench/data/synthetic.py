"""A labelled-synthetic stand-in for Fashion-MNIST, for tests and demos only when asked for."""

from __future__ import annotations

import numpy as np

from workbench.data.dataset import IMAGE_HW, NUM_CLASSES, FashionMnist


def class_templates() -> np.ndarray:
    """Ten fixed 28×28 masks: five horizontal bands (classes 0-4), five vertical (5-9)."""
    templates = np.zeros((NUM_CLASSES,) + IMAGE_HW, dtype=np.float32)
    for cls in range(NUM_CLASSES):
        start = 2 + 5 * (cls % 5)
        if cls < 5:
            templates[cls, start : start + 5, 2:26] = 1.0
        else:
            templates[cls, 2:26, start : start + 5] = 1.0
    return templates


def synthetic_images(n: int, rng: np.random.Generator):
    """n balanced, shuffled (uint8 images [n, 28, 28], int32 labels [n]) drawn from `rng`."""
    labels = rng.permutation(np.arange(n) % NUM_CLASSES).astype(np.int32)
    brightness = rng.uniform(150.0, 230.0, size=(n, 1, 1)).astype(np.float32)
    images = class_templates()[labels] * brightness
    # Shift by up to one pixel each way so no single pixel gives the class away.
    shifts = rng.integers(-1, 2, size=(n, 2))
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            rows = np.flatnonzero((shifts[:, 0] == dy) & (shifts[:, 1] == dx))
            if rows.size and (dy or dx):
                images[rows] = np.roll(images[rows], (dy, dx), axis=(1, 2))
    images += rng.uniform(0.0, 60.0, size=images.shape).astype(np.float32)
    return np.clip(images, 0, 255).astype(np.uint8), labels


def synthetic_fashion(n_train: int, n_test: int, seed: int) -> FashionMnist:
    """Deterministic class-dependent patterns in the FashionMnist shape, marked synthetic=True."""
    if n_train < 1 or n_test < 1:
        raise ValueError(f"synthetic_fashion needs n_train and n_test >= 1, got {n_train} and {n_test}")
    # Separate streams, so the test set does not change when n_train does.
    train_images, train_labels = synthetic_images(n_train, np.random.default_rng([int(seed), 0]))
    test_images, test_labels = synthetic_images(n_test, np.random.default_rng([int(seed), 1]))
    return FashionMnist(
        train_images=train_images,
        train_labels=train_labels,
        test_images=test_images,
        test_labels=test_labels,
        dir=None,
        files=[],
        synthetic=True,
        verified=False,
    )
