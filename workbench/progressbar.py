"""A rich progress bar for `run` and `watch` when stdout is a terminal."""

from __future__ import annotations

from typing import Any, Dict

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


class LiveBar:
    """Shows epoch/step progress; other lines print above it."""

    def __init__(self) -> None:
        self.console = Console()
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                 TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=self.console)
        self.task = self.progress.add_task("", total=None, info="")
        self.progress.start()

    def update(self, ev: Dict[str, Any]) -> None:
        """Advance on progress and step events."""
        if ev.get("type") == "progress":
            self.progress.update(self.task, completed=ev.get("done"), total=ev.get("total"),
                                 description=str(ev.get("phase") or ev.get("unit") or ""))
        elif ev.get("type") == "step":
            self.progress.update(self.task, info="loss %.4g  %.2f ms" % (float(ev.get("loss") or 0), float(ev.get("step_ms") or 0)))

    def print(self, line: str) -> None:
        """Print a line above the bar."""
        self.progress.console.print(line, markup=False, highlight=False)

    def stop(self) -> None:
        """Remove the bar."""
        self.progress.stop()
