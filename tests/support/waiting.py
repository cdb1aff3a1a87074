"""Waiting on a condition by polling it (never a sleep a result depends on)."""

from __future__ import annotations

import time
from typing import Any, Callable


def poll_until(predicate: Callable[[], Any], timeout_s: float, poll_s: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; return its last value (falsy after timeout_s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(poll_s)  # the poll interval of this condition wait, not a delay anything relies on


def wait_for(predicate: Callable[[], Any], timeout_s: float, poll_s: float = 0.05, what: str = "") -> Any:
    """Poll `predicate` until it returns something truthy and return that; fail after timeout_s."""
    value = poll_until(predicate, timeout_s, poll_s)
    if not value:
        raise AssertionError(
            "timed out after %.1f s waiting for %s" % (timeout_s, what or getattr(predicate, "__name__", "a condition"))
        )
    return value
