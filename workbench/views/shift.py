"""The new-distribution overlay's model: the newest shift job's heat map, scope of use and failure thumbnails."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench.analysis import shift as shiftmod
from workbench.views.base import LatestJobView


class ShiftView(LatestJobView):
    """Folds `shift` job events into what the new-distribution overlay draws."""

    kinds = ("shift",)

    def reset(self, jid: Optional[str]) -> None:
        """A newer shift job is followed: its thumbnails are read when asked for."""
        self._thumbs: Optional[Dict[str, Any]] = None
        self.thumbs_error: Optional[str] = None

    @property
    def summary(self) -> Dict[str, Any]:
        """The job's result ({} while it runs or when it failed)."""
        return self.record.result if isinstance(self.record.result, dict) else {}

    def heat_map(self) -> Tuple[List[str], List[int], List[List[Optional[float]]]]:
        """(sets, severities, macro-F1 grid) of the result."""
        return shiftmod.heat_map(self.summary)

    def scope(self) -> Dict[str, List[str]]:
        """Where the candidate holds and where it does not."""
        return shiftmod.scope(self.summary)

    def failures(self, name: str) -> List[Dict[str, Any]]:
        """The kept failure cases of one set (most confident first)."""
        blocks = self.summary.get("failures")
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("set") == name and isinstance(block.get("cases"), list):
                return [c for c in block["cases"] if isinstance(c, dict)]
        return []

    def thumbnails(self, name: str) -> Any:
        """The 28×28 uint8 images of a set's failure cases (numpy is imported here, not at UI start)."""
        if self._thumbs is None:
            import numpy as np

            rel = next((a.get("path") for a in self.record.artifacts if a.get("kind") == "failure-cases"), None)
            self._thumbs = {}
            if rel and self.record.dir is not None:
                try:
                    with np.load(str(Path(self.record.dir) / rel)) as npz:
                        self._thumbs = {k: npz[k] for k in npz.files}
                except (OSError, ValueError) as exc:
                    self.thumbs_error = "%s: cannot be read (%s)" % (rel, exc)
        return self._thumbs.get(name)
