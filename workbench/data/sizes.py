"""How many images a split holds: the balanced sets' class sizes and the split rule's counts (no numpy here)."""

from __future__ import annotations

import math
from typing import List, Sequence

OFFICIAL_TRAIN = 60000  # Fashion-MNIST's training file: 6000 images of each of the 10 classes
CLASSES = 10


def val_count(n: int, val_fraction: float) -> int:
    """Images of a class of n that go to validation: round half up, at least one and not all when n >= 2."""
    n_val = int(math.floor(val_fraction * n + 0.5))
    if n >= 2:
        n_val = min(max(n_val, 1), n - 1)
    return n_val


def balanced(n: int, classes: int = CLASSES) -> List[int]:
    """Class sizes of n images spread evenly over the classes, as in the official and the synthetic sets."""
    return [n // classes + (1 if c < n % classes else 0) for c in range(classes)]


def train_split_size(class_sizes: Sequence[int], val_fraction: float) -> int:
    """Images the stratified split leaves for training from classes of these sizes."""
    return sum(n - val_count(n, float(val_fraction)) for n in class_sizes)
