"""The in-memory dataset both the official loader and the synthetic source return."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from workbench.data.fashion import CLASS_NAMES, IMAGE_HW, NUM_CLASSES  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class FashionMnist:
    """Images uint8 [N, 28, 28], labels int32 [N] in 0..9, and where they came from."""

    # Official images are read-only views of the verified file content: copy before editing.
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    dir: Optional[Path]
    files: List[Dict[str, Any]] = field(default_factory=list)
    synthetic: bool = False
    # True when every file's SHA-256 was checked against the official value.
    verified: bool = False


def scale(images_uint8: np.ndarray) -> np.ndarray:
    """Model input contract: uint8 [N, 28, 28] -> float32 [N, 1, 28, 28] = pixel / 255."""
    images = np.asarray(images_uint8)
    if images.dtype != np.uint8:
        raise ValueError(f"scale: images have dtype {images.dtype}, expected uint8")
    if images.ndim != 3 or tuple(images.shape[1:]) != IMAGE_HW:
        raise ValueError(f"scale: images have shape {images.shape}, expected [N, 28, 28]")
    out = images.astype(np.float32).reshape(images.shape[0], 1, *IMAGE_HW)
    out /= np.float32(255.0)
    return out
