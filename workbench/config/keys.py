"""Dotted config keys ('train.epochs'): the one walker that reads, sets and nests them."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Tuple

_RAISE = object()


def get(tree: Any, dotted: str, default: Any = _RAISE) -> Any:
    """The value of a dotted key in nested mappings; KeyError when absent, unless a `default` is given."""
    node = tree
    for part in dotted.split("."):
        try:
            node = node[part]
        except (KeyError, TypeError):  # TypeError: a value (a number, a list) stands where a mapping was expected
            if default is _RAISE:
                raise KeyError(dotted) from None
            return default
    return node


def put(tree: Dict[str, Any], dotted: str, value: Any, create: bool = True) -> None:
    """Set a dotted key in nested dicts; create=False only replaces a key that exists (KeyError otherwise)."""
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if create else node[part]
    if not create and parts[-1] not in node:
        raise KeyError(dotted)
    node[parts[-1]] = value


def nest(pairs: Iterable[Tuple[str, Any]]) -> Dict[str, Any]:
    """Dotted keys and values as nested dicts ({'train': {'epochs': 3}} from ('train.epochs', 3))."""
    out: Dict[str, Any] = {}
    for dotted, value in pairs:
        put(out, dotted, value)
    return out
