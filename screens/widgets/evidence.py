"""Colours and short labels for the evidence levels, shared by every screen."""

from __future__ import annotations

from rich.text import Text

STYLE = {
    "observed-pass": "bold green",
    "observed-fail": "bold red",
    "blocked": "bold yellow",
    "not-run": "dim",
    "not-required": "dim italic",
    "ok": "green",
    "running": "cyan",
    "failed": "red",
    "crashed": "bold red",
    "timed-out": "red",
    "stalled": "red",
    "cancelled": "yellow",
    "damaged": "bold red",
}
SHORT = {
    "observed-pass": "PASS",
    "observed-fail": "FAIL",
    "blocked": "BLOCKED",
    "not-run": "NOT RUN",
    "not-required": "NOT REQ",
}


def badge(status: str) -> Text:
    """A coloured label for an evidence level or a job state."""
    return Text(SHORT.get(status, status), style=STYLE.get(status, ""))
