"""Where to look for the four official files, in a fixed and reported order."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple, Union

from workbench.data.errors import DataError, DataNotFound
from workbench.data.official import OFFICIAL_FILES, find_file

# The copy shipped in the repository (data/fashion-mnist next to the workbench package).
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "data" / "fashion-mnist"
# Debian's dataset-fashion-mnist package installs the same content here, re-gzipped.
SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")


def cache_dir() -> Path:
    """Per-user download location used by fetch."""
    return Path.home() / ".cache" / "ms-workbench" / "fashion-mnist"


def candidate_dirs(data_dir: Optional[Union[str, Path]] = None) -> List[Path]:
    """Search order: data.dir, ./data/fashion-mnist, bundled copy, system copy, user cache."""
    ordered = []
    if data_dir is not None:
        ordered.append(Path(data_dir).expanduser())
    ordered += [Path.cwd() / "data" / "fashion-mnist", BUNDLED_DIR, SYSTEM_DIR, cache_dir()]
    unique: List[Path] = []
    seen = set()
    for path in ordered:
        # From the repo root ./data/fashion-mnist *is* the bundled copy: list it once.
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(path.absolute())
    return unique


def locate(data_dir: Optional[Union[str, Path]] = None) -> Tuple[Path, List[Path]]:
    """First place holding all four files -> (dir, places tried up to and including it).

    A place that does not exist or holds none of the files is passed over (every
    copy is verified by content hash on load, so any complete copy is the same data).
    A place holding only some of the files is a damaged copy and raises DataError.
    """
    tried: List[Path] = []
    reasons: List[str] = []
    for directory in candidate_dirs(data_dir):
        tried.append(directory)
        if not directory.is_dir():
            reasons.append("does not exist" if not directory.exists() else "not a directory")
            continue
        found = {spec.name: find_file(directory, spec) for spec in OFFICIAL_FILES}
        missing = [name for name, path in found.items() if path is None]
        if not missing:
            return directory, tried
        if len(missing) < len(OFFICIAL_FILES):
            raise DataError(
                directory / missing[0],
                f"file is missing from an incomplete copy (missing: {', '.join(missing)})",
                "all four official files (raw or .gz) in this folder",
            )
        reasons.append("holds none of the four files")
    raise DataNotFound(tried, reasons)
