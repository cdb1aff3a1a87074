"""The four official Fashion-MNIST files: what they must contain, and a verifying reader of one file."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from workbench.data.dataset import IMAGE_HW, NUM_CLASSES
from workbench.data.errors import DataError
from workbench.data.idx import parse_idx, read_content


@dataclass(frozen=True)
class OfficialFile:
    """One official file: base name (without .gz), IDX layout and content hash."""

    key: str
    name: str
    magic: int
    item_shape: Tuple[int, ...]
    count: int
    # SHA-256 of the UNCOMPRESSED content, so re-gzipped copies are accepted.
    content_sha256: str
    # Size of the official .gz download, used for progress when a server sends no length.
    gz_bytes: int

    @property
    def is_labels(self) -> bool:
        """True for the two label files."""
        return self.magic == 2049


# Hashes and sizes as listed in data/fashion-mnist/README.md (Zalando's official release).
OFFICIAL_FILES = (
    OfficialFile(
        "train_images",
        "train-images-idx3-ubyte",
        2051,
        IMAGE_HW,
        60000,
        "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
        26421880,
    ),
    OfficialFile(
        "train_labels",
        "train-labels-idx1-ubyte",
        2049,
        (),
        60000,
        "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
        29515,
    ),
    OfficialFile(
        "test_images",
        "t10k-images-idx3-ubyte",
        2051,
        IMAGE_HW,
        10000,
        "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        4422102,
    ),
    OfficialFile(
        "test_labels",
        "t10k-labels-idx1-ubyte",
        2049,
        (),
        10000,
        "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        5148,
    ),
)
OFFICIAL_BY_KEY = {spec.key: spec for spec in OFFICIAL_FILES}


def find_file(directory: Path, spec: OfficialFile) -> Optional[Path]:
    """The file for `spec` in `directory`: raw name preferred (faster), then name.gz."""
    for candidate in (directory / spec.name, directory / (spec.name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def read_official_file(
    path: Union[str, Path],
    spec: OfficialFile,
    verify: bool = True,
    expect_gzip: Optional[bool] = None,
) -> Tuple[np.ndarray, Dict[str, Any]]:
    """Read and check one official file; return (array, file record). Raises DataError."""
    path = Path(path)
    content, compressed, disk_bytes = read_content(path, expect_gzip=expect_gzip)
    array = parse_idx(content, path, spec.magic, spec.item_shape, spec.count)
    if spec.is_labels:
        _check_label_range(array, path)
        array = array.astype(np.int32)
    sha256 = None
    if verify:
        sha256 = hashlib.sha256(content).hexdigest()
        if sha256 != spec.content_sha256:
            raise DataError(
                path,
                f"wrong hash: SHA-256 of the uncompressed content is {sha256}",
                f"{spec.content_sha256} (official {spec.name})",
            )
    record = {
        "name": path.name,
        "path": str(path.resolve()),
        "sha256": sha256,
        "bytes": disk_bytes,
        "compressed": compressed,
    }
    return array, record


def _check_label_range(labels: np.ndarray, path: Path) -> None:
    bad = np.flatnonzero(labels >= NUM_CLASSES)
    if bad.size:
        first = int(bad[0])
        raise DataError(
            path,
            f"label out of range: item {first} has label {int(labels[first])} "
            f"({bad.size} labels out of range in total)",
            f"labels 0..{NUM_CLASSES - 1}",
        )
