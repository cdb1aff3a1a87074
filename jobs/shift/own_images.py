"""The user's own images for the `shift` job: a folder of image files with labels.csv, or an IDX pair.

Every image goes through the training contract: grayscale, 28×28, pixel / 255 in float32. Photos
usually show a dark garment on a light background, the reverse of Fashion-MNIST: an image whose
border is lighter than its middle is inverted, and the result says which were.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from workbench.data.fashion import CLASS_NAMES

LABELS_FILE = "labels.csv"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


class OwnImagesError(ValueError):
    """The folder cannot be read as a labelled image set: the message names the file and what was expected."""


@dataclass
class OwnImages:
    """Images in the training contract, their labels, and what was done or left out on the way."""

    images: np.ndarray  # float32 [N, 28, 28] in [0, 1]
    labels: np.ndarray  # int32 [N]
    files: List[str]
    inverted: List[str] = field(default_factory=list)
    skipped: List[Dict[str, str]] = field(default_factory=list)  # {"file", "why"}
    source: str = ""


def parse_label(text: str) -> Optional[int]:
    """A class index (0..9) or a class name (case and spaces ignored), None when it is neither."""
    value = text.strip()
    if value.isdigit() and int(value) < len(CLASS_NAMES):
        return int(value)
    wanted = value.lower().replace(" ", "")
    for k, name in enumerate(CLASS_NAMES):
        if name.lower().replace(" ", "") == wanted:
            return k
    return None


def to_contract(pixels: np.ndarray) -> Tuple[np.ndarray, bool]:
    """28×28 float32 grey in [0, 1] with a dark background (inverted when the border is the lighter part)."""
    grey = pixels.astype(np.float32) / 255.0
    border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
    light = float(border.mean()) > float(grey[4:-4, 4:-4].mean())
    return (1.0 - grey if light else grey), light


def _decode(path: Path) -> np.ndarray:
    """The image as 28×28 uint8 grey (Pillow: decode, convert to L, resize with LANCZOS)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            img.load()
            grey = img.convert("L")
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise OwnImagesError("%s: cannot be decoded as an image (%s)" % (path, exc)) from None
    if grey.size != (28, 28):
        # Pillow >= 10 sets LANCZOS at import (its stubs lack it); Image.Resampling needs 9.1, MindSpore asks 6.2
        grey = grey.resize((28, 28), Image.LANCZOS)  # type: ignore[attr-defined]
    return np.asarray(grey, dtype=np.uint8)


def _read_labels(folder: Path) -> Dict[str, str]:
    path = folder / LABELS_FILE
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise OwnImagesError(
            "%s: missing; write one `file,label` row per image (label: 0..9 or a class name)" % path
        ) from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise OwnImagesError("%s: cannot be read as UTF-8 CSV (%s)" % (path, exc)) from None
    out: Dict[str, str] = {}
    for number, row in enumerate(rows, 1):
        if not row or (number == 1 and [c.strip().lower() for c in row[:2]] == ["file", "label"]):
            continue
        if len(row) != 2:
            raise OwnImagesError("%s line %d: %r is not `file,label`" % (path, number, ",".join(row)))
        out[row[0].strip()] = row[1]
    return out


def _idx_pair(folder: Path) -> Optional[Tuple[Path, Path]]:
    images = sorted(folder.glob("*images-idx3-ubyte*"))
    labels = sorted(folder.glob("*labels-idx1-ubyte*"))
    if len(images) == 1 and len(labels) == 1:
        return images[0], labels[0]
    return None


def load(folder: Path, on_bad: str = "error") -> OwnImages:
    """Read the folder; with on_bad="error" the first unreadable or unlabelled image stops everything."""
    from workbench.data.errors import DataError
    from workbench.data.idx import parse_idx, read_content

    folder = Path(folder)
    pair = _idx_pair(folder)
    if pair is not None:
        try:
            images = parse_idx(read_content(pair[0])[0], pair[0], 0x00000803, (28, 28), None)
            idx_labels = parse_idx(read_content(pair[1])[0], pair[1], 0x00000801, (), len(images))
        except DataError as exc:
            raise OwnImagesError(str(exc)) from None
        if idx_labels.size and int(idx_labels.max()) >= len(CLASS_NAMES):
            raise OwnImagesError("%s: label %d is not a class index 0..9" % (pair[1], int(idx_labels.max())))
        return OwnImages(
            (images.astype(np.float32) / 255.0),
            idx_labels.astype(np.int32),
            ["%s[%d]" % (pair[0].name, i) for i in range(len(idx_labels))],
            source="IDX pair %s, %s" % (pair[0].name, pair[1].name),
        )
    labels_by_file = _read_labels(folder)
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not files:
        raise OwnImagesError("%s: no image files (%s) and no IDX pair" % (folder, ", ".join(IMAGE_SUFFIXES)))
    kept: List[np.ndarray] = []
    out = OwnImages(
        np.zeros((0, 28, 28), np.float32), np.zeros(0, np.int32), [], source="%s (%s)" % (folder, LABELS_FILE)
    )
    labels: List[int] = []

    def bad(path: Path, why: str) -> None:
        if on_bad == "error":
            raise OwnImagesError("%s: %s (shift.on_bad=skip leaves such files out and lists them)" % (path, why))
        out.skipped.append({"file": path.name, "why": why})

    for path in files:
        raw = labels_by_file.get(path.name)
        label = parse_label(raw) if raw is not None else None
        if raw is None:
            bad(path, "no row in %s" % LABELS_FILE)
            continue
        if label is None:
            bad(path, "label %r is neither 0..9 nor a class name (%s)" % (raw, ", ".join(CLASS_NAMES)))
            continue
        try:
            pixels = _decode(path)
        except OwnImagesError as exc:
            bad(path, str(exc).split(": ", 1)[1])
            continue
        image, light = to_contract(pixels)
        if light:
            out.inverted.append(path.name)
        kept.append(image)
        labels.append(label)
        out.files.append(path.name)
    for name in sorted(set(labels_by_file) - {p.name for p in files}):
        bad(folder / name, "listed in %s but not an image file in the folder" % LABELS_FILE)
    if not kept:
        raise OwnImagesError("%s: no image could be used (%d skipped)" % (folder, len(out.skipped)))
    out.images = np.stack(kept).astype(np.float32)
    out.labels = np.asarray(labels, dtype=np.int32)
    return out
