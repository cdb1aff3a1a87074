"""The Data screen's model: the latest data job's checks, counts, contract, split and preview pixels."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Optional, Tuple

from workbench.fashion import CLASS_NAMES, IMAGE_HW, NUM_CLASSES
from workbench.views import View

if TYPE_CHECKING:
    import numpy as np  # numpy is imported when a preview is read, not at UI start-up

LOG_LINES = 50


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
    if images.dtype != np.uint8 or tuple(images.shape[1:]) != IMAGE_HW or labels.shape != (n,) \
            or indices.shape != (n,):
        raise ValueError("%s: images %s %s, labels %s, indices %s; expected uint8 [n, 28, 28] with n labels and "
                         "n indices" % (path, images.dtype, images.shape, labels.shape, indices.shape))
    return Preview(images=images, labels=labels.astype(np.int64), indices=indices.astype(np.int64))


class DataView(View):
    """Folds the latest `data` job's events into what the Data screen draws."""

    kinds = ("data",)

    def __init__(self) -> None:
        super().__init__()
        self.reset(None, 0.0)

    def reset(self, jid: Optional[str], created: float) -> None:
        """Start following a new data job."""
        self.jid = jid
        self.created = created
        self.status = ""
        self.state = ""
        self.started: Dict[str, Any] = {}
        self.synthetic = False
        self.checks: Dict[str, Dict[str, Any]] = {}
        self.progress: Dict[str, Any] = {}
        self.artifacts: List[Dict[str, Any]] = []
        self.result: Dict[str, Any] = {}
        self.error: Optional[Dict[str, Any]] = None
        self.logs: Deque[Dict[str, Any]] = deque(maxlen=LOG_LINES)
        self.preview: Optional[Preview] = None
        self.preview_error: Optional[str] = None

    def _follow(self, job: Any) -> bool:
        """Switch to `job` when it is newer than the one followed; False for events of older jobs."""
        if job.jid == self.jid:
            return True
        created = float(job.spec.get("created") or 0.0)
        if self.jid is not None and created < self.created:
            return False
        self.reset(job.jid, created)
        return True

    def apply(self, job: Any, ev: Dict[str, Any]) -> None:
        """Fold one event of a data job."""
        if not self._follow(job):
            return
        if ev.get("synthetic") is True:
            self.synthetic = True
        kind = ev.get("type")
        if kind == "started":
            self.started = ev
        elif kind == "check":
            self.checks[str(ev.get("id"))] = ev
        elif kind == "progress":
            self.progress = ev
        elif kind == "log":
            self.logs.append(ev)
        elif kind == "artifact":
            self.artifacts.append(ev)
            if ev.get("kind") == "preview" and self.preview is None:
                self._load_preview(job, str(ev.get("path")))
        elif kind == "result":
            self.result = ev.get("summary") or {}
        elif kind == "finished":
            self.error = ev.get("error")

    def _load_preview(self, job: Any, rel_path: str) -> None:
        # Once per job: the file is small (tens of KB) and written before its event.
        try:
            self.preview = read_preview(job.dir / rel_path)
        except ValueError as exc:
            self.preview_error = str(exc)

    def job_changed(self, job: Any) -> None:
        """Follow a newly started data job at once; track the followed job's status."""
        if self._follow(job):
            self.status = job.status.label()
            self.state = job.status.state
        self.version += 1

    # What the screen reads: the result when there is one, else what the checks said so far.

    @property
    def seed(self) -> Optional[int]:
        """Split seed of the followed job."""
        split = self.result.get("split") or {}
        value = split.get("seed", self.started.get("split_seed"))
        return int(value) if isinstance(value, int) else None

    @property
    def val_fraction(self) -> Optional[float]:
        """Validation fraction of the followed job."""
        split = self.result.get("split") or {}
        value = split.get("val_fraction", self.started.get("val_fraction"))
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def counts(self) -> Dict[str, List[int]]:
        """Per-class counts {train, val, test} (empty until the counts check or the result)."""
        counts = self.result.get("counts") or (self.checks.get("data.counts") or {}).get("evidence") or {}
        return {k: list(counts[k]) for k in ("train", "val", "test") if isinstance(counts.get(k), list)}

    @property
    def files(self) -> List[Dict[str, Any]]:
        """Source files with hashes: from the result, else from the per-file checks so far."""
        if self.result.get("files"):
            return list(self.result["files"])
        return [c.get("evidence") or {} for cid, c in self.checks.items()
                if cid.startswith("data.file.") and c.get("status") == "observed-pass"]

    @property
    def data_dir(self) -> Optional[str]:
        """Folder the files were read from."""
        found = (self.checks.get("data.files") or {}).get("evidence") or {}
        return self.result.get("dir") or found.get("dir")

    @property
    def searched(self) -> List[str]:
        """Every folder the job looked in, in order."""
        found = (self.checks.get("data.files") or {}).get("evidence") or {}
        return list(found.get("searched") or [])

    @property
    def class_names(self) -> List[str]:
        """Class names in label order."""
        return list(self.result.get("class_names") or CLASS_NAMES)

    def failed_checks(self) -> List[Dict[str, Any]]:
        """Checks that observed a failure."""
        return [c for c in self.checks.values() if c.get("status") == "observed-fail"]

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
