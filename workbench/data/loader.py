"""Locate the four official Fashion-MNIST files and load them, verified (locate finds, official reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Union

import numpy as np

from workbench.data.dataset import FashionMnist
from workbench.data.errors import DataError
from workbench.data.locate import locate
from workbench.data.official import OFFICIAL_FILES, find_file, read_official_file


def load_fashion_mnist(data_dir: Optional[Union[str, Path]] = None, verify: bool = True) -> FashionMnist:
    """Locate and load the official files; verify=False skips only the SHA-256 check."""
    directory, _tried = locate(data_dir)
    arrays: Dict[str, np.ndarray] = {}
    files = []
    for spec in OFFICIAL_FILES:
        path = find_file(directory, spec)
        if path is None:
            # locate saw it a moment ago; report rather than guess.
            raise DataError(directory / spec.name, "file is missing", "the file or its .gz")
        arrays[spec.key], record = read_official_file(path, spec, verify=verify)
        files.append(record)
    return FashionMnist(
        train_images=arrays["train_images"],
        train_labels=arrays["train_labels"],
        test_images=arrays["test_images"],
        test_labels=arrays["test_labels"],
        dir=directory,
        files=files,
        synthetic=False,
        verified=verify,
    )
