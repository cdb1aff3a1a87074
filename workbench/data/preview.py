"""Which images a data screen shows: a few seeded examples of every class."""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from workbench.data.dataset import NUM_CLASSES


def preview_indices(
    labels: np.ndarray, per_class: int = 4, seed: int = 0, num_classes: int = NUM_CLASSES
) -> Dict[int, List[int]]:
    """Class -> up to `per_class` sorted sample indices, chosen by a seeded generator."""
    labels = np.asarray(labels)
    if per_class < 1:
        raise ValueError(f"per_class is {per_class}, expected at least 1")
    chosen: Dict[int, List[int]] = {}
    for cls in range(num_classes):
        members = np.flatnonzero(labels == cls)
        rng = np.random.default_rng([int(seed), cls])
        picked = rng.choice(members, size=min(per_class, members.size), replace=False)
        chosen[cls] = sorted(int(i) for i in picked)
    return chosen
