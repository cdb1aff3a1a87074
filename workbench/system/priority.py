"""The TUI yields the CPU to training: its threads run niced, the jobs it starts keep the original priority.

On Linux the nice value belongs to a thread, and a child process inherits it from the thread that
forked it. So a launcher thread is started first (it keeps the priority), then the UI's own thread
is niced; every thread the UI starts later inherits the lower priority, and jobs are started from
the launcher. An unprivileged process cannot raise its priority back, so this order is the only one.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional


class Launcher:
    """Runs calls (process starts) on one thread that kept the priority the process started with."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="launcher")
        self._pool.submit(lambda: None).result()  # the thread exists now, before any renice

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run fn on the launcher thread and return its result (exceptions propagate)."""
        return self._pool.submit(fn, *args, **kwargs).result()


def thread_nice() -> int:
    """The calling thread's nice value."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def lower_ui_priority(nice: int) -> Optional[Launcher]:
    """Make the launcher, then nice the calling (UI) thread by `nice`; None when nice is 0 or not Linux."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return None
    launcher = Launcher()
    os.setpriority(os.PRIO_PROCESS, 0, min(19, thread_nice() + nice))  # who=0: this thread only, on Linux
    return launcher
