"""A bounded history of a whole run's samples: when full, every other one is dropped and the stride doubles."""

from __future__ import annotations

from typing import Any, Iterator, List, Tuple


class ThinnedHistory:
    """Every `stride`-th sample of the run (numbered from 0) plus the latest one, in at most `max_kept` + 1 entries."""

    def __init__(self, max_kept: int) -> None:
        if max_kept < 2:
            raise ValueError("ThinnedHistory max_kept: expected at least 2, got %r" % (max_kept,))
        self.max_kept = max_kept
        self.stride = 1  # the history keeps samples 0, stride, 2·stride, …
        self.seen = 0  # samples offered over the whole run
        self._kept: List[Tuple[int, Any]] = []
        self._latest: Any = None

    def append(self, sample: Any) -> None:
        """Offer the run's next sample."""
        index, self.seen = self.seen, self.seen + 1
        self._latest = sample
        if index % self.stride:
            return
        self._kept.append((index, sample))
        if len(self._kept) >= self.max_kept:
            # Indices stay multiples of the new stride, so the kept samples remain evenly spaced.
            self.stride *= 2
            self._kept = [(i, s) for i, s in self._kept if i % self.stride == 0]

    def items(self) -> List[Tuple[int, Any]]:
        """(sample number, sample) from the first sample to the latest, oldest first."""
        if self.seen and (not self._kept or self._kept[-1][0] != self.seen - 1):
            return self._kept + [(self.seen - 1, self._latest)]
        return list(self._kept)

    def __iter__(self) -> Iterator[Any]:
        return iter([s for _, s in self.items()])

    def __len__(self) -> int:
        return len(self.items())

    def __bool__(self) -> bool:
        return self.seen > 0
