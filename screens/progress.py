"""The command line's rich progress bars, drawn only when the output is a terminal.

Only the entry point imports this module: the core reports progress through callbacks and events.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, TextIO

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from workbench.events.steps import expand_steps


class LiveBar:
    """Shows epoch/step progress; other lines print above it."""

    def __init__(self) -> None:
        self.console = Console()
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("{task.fields[info]}"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task("", total=None, info="")
        self.progress.start()

    def update(self, ev: Dict[str, Any]) -> None:
        """Advance on progress and step events."""
        if ev.get("type") == "progress":
            self.progress.update(
                self.task,
                completed=ev.get("done"),
                total=ev.get("total"),
                description=str(ev.get("phase") or ev.get("unit") or ""),
            )
        elif ev.get("type") in ("step", "steps"):
            ev = (expand_steps(ev) or [ev])[-1]  # a batched line: its last step
            self.progress.update(
                self.task, info="loss %.4g  %.2f ms" % (float(ev.get("loss") or 0), float(ev.get("step_ms") or 0))
            )

    def print(self, line: str) -> None:
        """Print a line above the bar."""
        self.progress.console.print(line, markup=False, highlight=False)

    def stop(self) -> None:
        """Remove the bar."""
        self.progress.stop()


class FetchBar:
    """A bar per downloaded file for `data fetch` (a `FetchDisplay` of workbench.data.fetch)."""

    def __init__(self, stream: TextIO) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(file=stream),
        )
        self.tasks: Dict[str, Any] = {}
        self.progress.start()

    def update(self, name: str, done_bytes: int, total_bytes: Optional[int]) -> None:
        """Progress callback of fetch()."""
        if name not in self.tasks:
            self.tasks[name] = self.progress.add_task(name, total=total_bytes)
        self.progress.update(self.tasks[name], completed=done_bytes, total=total_bytes)

    def stop(self) -> None:
        """Remove the live display."""
        self.progress.stop()
