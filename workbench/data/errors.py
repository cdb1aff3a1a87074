"""The one error type of the data layer: which file, what is wrong, what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Union


class DataError(Exception):
    """A data file or split record is missing, malformed or not the one expected."""

    def __init__(
        self,
        path: Optional[Union[str, Path]],
        problem: str,
        expected: Optional[str] = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.problem = problem
        self.expected = expected
        message = problem if self.path is None else f"{self.path}: {problem}"
        if expected:
            message += f"; expected {expected}"
        super().__init__(message)


class DataNotFound(DataError):
    """No search location holds the dataset; `tried` lists every place looked at."""

    def __init__(self, tried: List[Path], reasons: List[str]) -> None:
        self.tried = list(tried)
        lines = [f"  {p}: {why}" for p, why in zip(tried, reasons)]
        super().__init__(
            None,
            "Fashion-MNIST files not found. Places tried, in order:\n" + "\n".join(lines),
            "the four files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
            "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each raw or .gz) in one folder",
        )
