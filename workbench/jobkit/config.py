"""The config a job reads: the validated effective config, frozen, with attribute access."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, Mapping

from workbench.config import keys


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return JobConfig(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class JobConfig(Mapping):
    """A read-only view of a validated config: `cfg.train.epochs`, `cfg["train"]["epochs"]`, `cfg.at("train.epochs")`.

    The values already have the schema's types (the config was validated before it was written),
    so a job never recasts them; a key the schema does not have raises AttributeError/KeyError.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]):
        object.__setattr__(self, "_data", {str(k): _freeze(v) for k, v in data.items()})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError("config has no key %r (known: %s)" % (name, ", ".join(sorted(self._data))))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a job's config is frozen")

    def __repr__(self) -> str:
        return "JobConfig(%r)" % (self.plain(),)

    def at(self, dotted: str) -> Any:
        """The value of a dotted key such as 'train.epochs'."""
        return keys.get(self, dotted)

    def plain(self) -> Dict[str, Any]:
        """A plain, mutable deep copy (for writing JSON or building a derived config)."""

        def thaw(value: Any) -> Any:
            if isinstance(value, JobConfig):
                return {k: thaw(v) for k, v in value.items()}
            if isinstance(value, tuple):
                return [thaw(v) for v in value]
            return value

        return thaw(self)


def load_job_config(job_dir: Path) -> JobConfig:
    """Read a job folder's config.json (JSON, so a board interpreter needs no YAML library)."""
    with open(Path(job_dir) / "config.json", encoding="utf-8") as fh:
        return JobConfig(json.load(fh))
