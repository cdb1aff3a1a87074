"""Seeded stratified train/validation split, and its record on disk (split.npz + split.json)."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple, Union

import numpy as np

from workbench.data.errors import DataError
from workbench.data.sizes import val_count as _val_count
from workbench.system.atomic import write_bytes, write_json

SPLIT_FORMAT = "ms-workbench split v1"
NPZ_NAME = "split.npz"
JSON_NAME = "split.json"
# Index arrays are hashed in this exact byte layout, whatever the platform.
INDEX_DTYPE = np.dtype("<i8")


@dataclass(frozen=True)
class Split:
    """Sorted int64 indices into the official training set, with the record they came from."""

    train_idx: np.ndarray
    val_idx: np.ndarray
    seed: int
    val_fraction: float
    meta: Dict[str, Any]
    path: Optional[Path] = None


def stratified_split(labels: np.ndarray, val_fraction: float = 0.1, seed: int = 37) -> Tuple[np.ndarray, np.ndarray]:
    """Per class, a seeded random round(fraction * n) go to validation; both index arrays sorted.

    Sorted, because order carries no information here: shuffling for training is the
    training loop's job, with its own seed. Each class draws from its own generator
    seeded by (seed, class), so a class's choice does not depend on the other classes.
    A class with two or more samples always gives at least one to validation.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be a 1-D integer array, got {labels.dtype} {labels.shape}")
    if not 0.0 < float(val_fraction) < 1.0:
        raise ValueError(f"val_fraction is {val_fraction}, expected a value between 0 and 1 (exclusive)")
    if int(seed) < 0:
        raise ValueError(f"seed is {seed}, expected a non-negative integer")
    val_parts = []
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        n_val = _val_count(members.size, float(val_fraction))
        rng = np.random.default_rng([int(seed), int(cls)])
        val_parts.append(members[rng.permutation(members.size)[:n_val]])
    val_idx = np.sort(np.concatenate(val_parts)).astype(np.int64) if val_parts else np.zeros(0, np.int64)
    in_val = np.zeros(labels.size, dtype=bool)
    in_val[val_idx] = True
    train_idx = np.flatnonzero(~in_val).astype(np.int64)
    return train_idx, val_idx


def index_sha256(indices: np.ndarray) -> str:
    """SHA-256 of an index array as little-endian int64 bytes."""
    return hashlib.sha256(np.ascontiguousarray(indices, dtype=INDEX_DTYPE).tobytes()).hexdigest()


def describe_split(
    labels: np.ndarray,
    train_idx: np.ndarray,
    val_idx: np.ndarray,
    seed: int,
    val_fraction: float,
    source_files: Iterable[Dict[str, Any]] = (),
    synthetic: bool = False,
) -> Dict[str, Any]:
    """The meta dict save_split records: seed, fraction, per-class counts, source hashes."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    train_counts = np.bincount(labels[train_idx], minlength=int(classes.max()) + 1 if classes.size else 0)
    val_counts = np.bincount(labels[val_idx], minlength=train_counts.size)
    return {
        "seed": int(seed),
        "val_fraction": float(val_fraction),
        "synthetic": bool(synthetic),
        "per_class": [{"label": int(c), "train": int(train_counts[c]), "val": int(val_counts[c])} for c in classes],
        "source_files": [{"name": f["name"], "sha256": f["sha256"]} for f in source_files],
    }


def save_split(
    directory: Union[str, Path],
    train_idx: np.ndarray,
    val_idx: np.ndarray,
    meta: Dict[str, Any],
) -> Path:
    """Write split.npz then split.json (each atomically) into `directory`; return the json path."""
    directory = Path(directory)
    train = np.ascontiguousarray(train_idx, dtype=INDEX_DTYPE)
    val = np.ascontiguousarray(val_idx, dtype=INDEX_DTYPE)
    if train.ndim != 1 or val.ndim != 1:
        raise ValueError(f"index arrays must be 1-D, got {train.shape} and {val.shape}")
    overlap = np.intersect1d(train, val)
    if overlap.size:
        raise ValueError(f"{overlap.size} indices are in both train and val (first: {int(overlap[0])})")
    buffer = io.BytesIO()
    np.savez(buffer, train_idx=train, val_idx=val)
    write_bytes(directory / NPZ_NAME, buffer.getvalue())
    record = dict(meta)
    # The computed fields win over anything of the same name in meta.
    record.update(
        {
            "format": SPLIT_FORMAT,
            "index_file": NPZ_NAME,
            "index_dtype": INDEX_DTYPE.str,
            "n_train": int(train.size),
            "n_val": int(val.size),
            "train_idx_sha256": index_sha256(train),
            "val_idx_sha256": index_sha256(val),
        }
    )
    # split.json goes last: a record only exists once its index file is complete.
    return write_json(directory / JSON_NAME, record)


def load_split(path_or_dir: Union[str, Path]) -> Split:
    """Read a split written by save_split, checking the index hashes recorded in split.json."""
    path = Path(path_or_dir)
    if path.is_dir():
        json_path = path / JSON_NAME
    elif path.suffix == ".json":
        json_path = path
    else:  # the .npz itself: its record sits next to it
        json_path = path.with_name(JSON_NAME)
    try:
        record = json.loads(json_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(json_path, "file is missing", "a split.json written by save_split") from None
    except (OSError, ValueError) as exc:
        raise DataError(json_path, f"cannot be read as JSON: {exc}") from None
    if not isinstance(record, dict):
        raise DataError(json_path, f"top level is {type(record).__name__}", "a JSON object")
    for key in ("format", "seed", "val_fraction", "train_idx_sha256", "val_idx_sha256"):
        if key not in record:
            raise DataError(json_path, f"key '{key}' is missing", "a split.json written by save_split")
    if record["format"] != SPLIT_FORMAT:
        raise DataError(json_path, f"key 'format' is {record['format']!r}", repr(SPLIT_FORMAT))
    npz_path = json_path.with_name(str(record.get("index_file", NPZ_NAME)))
    arrays = _read_npz(npz_path)
    for name in ("train_idx", "val_idx"):
        actual = index_sha256(arrays[name])
        expected = record[f"{name}_sha256"]
        if actual != expected:
            raise DataError(
                npz_path,
                f"{name} does not match its record: SHA-256 {actual}",
                f"{expected} as recorded in {json_path}",
            )
    overlap = np.intersect1d(arrays["train_idx"], arrays["val_idx"])
    if overlap.size:
        raise DataError(npz_path, f"{overlap.size} indices are in both train_idx and val_idx", "no overlap")
    return Split(
        train_idx=arrays["train_idx"],
        val_idx=arrays["val_idx"],
        seed=int(record["seed"]),
        val_fraction=float(record["val_fraction"]),
        meta=record,
        path=json_path.parent,
    )


def _read_npz(npz_path: Path) -> Dict[str, np.ndarray]:
    try:
        with np.load(npz_path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise DataError(npz_path, "file is missing", "the index file next to split.json") from None
    except Exception as exc:  # zipfile/ValueError/OSError: all mean the same to the user
        raise DataError(npz_path, f"cannot be read as .npz: {exc}") from None
    for name in ("train_idx", "val_idx"):
        if name not in arrays:
            raise DataError(npz_path, f"array '{name}' is missing", "arrays train_idx and val_idx")
        array = arrays[name]
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise DataError(npz_path, f"array '{name}' is {array.dtype} {array.shape}", "1-D int64")
    return arrays
