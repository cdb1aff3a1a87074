"""The Data screen's model: the latest data job's checks, counts, contract, split and preview pixels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from workbench.data.fashion import CLASS_NAMES, IMAGE_HW, NUM_CLASSES
from workbench.events.protocol import Evidence
from workbench.views.base import LatestJobView

if TYPE_CHECKING:
    import numpy as np  # numpy is imported when a preview is read, not at UI start-up


@dataclass(frozen=True)
class Preview:
    """Sample images of the training split: uint8 [n, 28, 28] with their labels and official indices."""

    images: np.ndarray
    labels: np.ndarray
    indices: np.ndarray

    def of_class(self, cls: int) -> List[Tuple[int, np.ndarray]]:
        """(official train index, 28×28 uint8 pixels) of every preview image of one class."""
        import numpy as np

        return [(int(self.indices[i]), self.images[i]) for i in np.flatnonzero(self.labels == cls)]


def read_preview(path: Any) -> Preview:
    """Load a preview.npz written by the data job; ValueError naming the file when it is not one."""
    import numpy as np

    try:
        with np.load(str(path), allow_pickle=False) as npz:
            images, labels, indices = npz["images"], npz["labels"], npz["indices"]
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError("%s: cannot be read as a preview (%s)" % (path, exc)) from None
    n = images.shape[0] if images.ndim == 3 else -1
    if images.dtype != np.uint8 or tuple(images.shape[1:]) != IMAGE_HW or labels.shape != (n,) or indices.shape != (n,):
        raise ValueError(
            "%s: images %s %s, labels %s, indices %s; expected uint8 [n, 28, 28] with n labels and "
            "n indices" % (path, images.dtype, images.shape, labels.shape, indices.shape)
        )
    return Preview(images=images, labels=labels.astype(np.int64), indices=indices.astype(np.int64))


class DataView(LatestJobView):
    """Reads the newest `data` job's record into what the Data screen draws."""

    kinds = ("data",)

    def reset(self, jid: Optional[str]) -> None:
        """A newer data job is followed: its preview is read when its artefact arrives."""
        self.preview: Optional[Preview] = None
        self.preview_error: Optional[str] = None
        self._preview_seen = False

    def refresh(self) -> None:
        """Follow the newest data job; read its preview once its artefact event is there."""
        super().refresh()
        if self._preview_seen:
            return
        for ev in self.record.artifacts:
            if ev.get("kind") == "preview":
                self._preview_seen = True
                self._load_preview(str(ev.get("path")))
                break

    def _load_preview(self, rel_path: str) -> None:
        # Once per job: the file is small (tens of KB) and written before its event.
        if self.record.dir is None:
            self.preview_error = "%s: the job folder is not known" % rel_path
            return
        try:
            self.preview = read_preview(Path(self.record.dir) / rel_path)
        except ValueError as exc:
            self.preview_error = str(exc)

    @property
    def synthetic(self) -> bool:
        """True when any line of the job said its data is synthetic."""
        return self.record.synthetic

    @property
    def artifacts(self) -> List[Dict[str, Any]]:
        """Artefact events in order."""
        return self.record.artifacts

    @property
    def logs(self) -> List[Dict[str, Any]]:
        """The latest log events."""
        return list(self.record.logs)

    # What the screen reads: the result when there is one, else what the checks said so far.

    @property
    def seed(self) -> Optional[int]:
        """Split seed of the followed job."""
        split = _dict(self.result.get("split"))
        value = split.get("seed", self.started.get("split_seed"))
        return value if type(value) is int else None

    @property
    def val_fraction(self) -> Optional[float]:
        """Validation fraction of the followed job."""
        split = _dict(self.result.get("split"))
        value: Any = split.get("val_fraction", self.started.get("val_fraction"))
        return float(value) if type(value) in (int, float) else None

    @property
    def counts(self) -> Dict[str, List[int]]:
        """Per-class counts {train, val, test} (empty until the counts check or the result)."""
        counts = _dict(self.result.get("counts")) or _dict((self.checks.get("data.counts") or {}).get("evidence"))
        return {
            k: [c if type(c) is int else 0 for c in counts[k]]
            for k in ("train", "val", "test")
            if isinstance(counts.get(k), list)
        }

    @property
    def files(self) -> List[Dict[str, Any]]:
        """Source files with hashes: from the result, else from the per-file checks so far."""
        if isinstance(self.result.get("files"), list) and self.result["files"]:
            return [f for f in self.result["files"] if isinstance(f, dict)]
        return [
            c.get("evidence") or {}
            for cid, c in self.checks.items()
            if cid.startswith("data.file.") and c.get("status") == Evidence.PASS
        ]

    @property
    def data_dir(self) -> Optional[str]:
        """Folder the files were read from."""
        found = _dict((self.checks.get("data.files") or {}).get("evidence"))
        value = self.result.get("dir") or found.get("dir")
        return str(value) if value else None

    @property
    def searched(self) -> List[str]:
        """Every folder the job looked in, in order."""
        found = _dict((self.checks.get("data.files") or {}).get("evidence"))
        searched = found.get("searched")
        return [str(p) for p in searched] if isinstance(searched, list) else []

    @property
    def class_names(self) -> List[str]:
        """Class names in label order."""
        names = self.result.get("class_names")
        return [str(n) for n in names] if isinstance(names, list) and names else list(CLASS_NAMES)

    def check_tally(self) -> Dict[str, int]:
        """How many checks have each evidence level."""
        tally: Dict[str, int] = {}
        for c in self.checks.values():
            status = str(c.get("status"))
            tally[status] = tally.get(status, 0) + 1
        return tally

    def samples(self, cls: int) -> List[Tuple[int, np.ndarray]]:
        """Preview images of one class (empty until the preview arrives)."""
        if self.preview is None or not 0 <= cls < NUM_CLASSES:
            return []
        return self.preview.of_class(cls)


def _dict(value: Any) -> Dict[str, Any]:
    """A job-specific payload as an object ({} when it is something else)."""
    return value if isinstance(value, dict) else {}
