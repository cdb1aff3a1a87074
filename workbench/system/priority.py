"""The TUI yields the CPU to training: its threads run niced, the jobs it starts keep the original priority.

On Linux the nice value belongs to a thread, and a child process inherits it from the thread that
forked it. So a launcher thread is started first (it keeps the priority), then the UI's threads are
niced; every thread the UI starts later inherits the lower priority, and jobs are started from the
launcher. An unprivileged process cannot raise its priority back, so this order is the only one.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional


class Launcher:
    """Runs calls (process starts) on one thread that kept the priority the process started with."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="launcher")
        self.tid = self._pool.submit(threading.get_native_id).result()  # the thread exists now, before any renice

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run fn on the launcher thread and return its result (exceptions propagate)."""
        return self._pool.submit(fn, *args, **kwargs).result()


def thread_nice() -> int:
    """The calling thread's nice value."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def start_launcher(nice: int) -> Optional[Launcher]:
    """The launcher, made before the UI is niced; None when nice is 0 or not Linux (nothing is niced then)."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return None
    return Launcher()


def lower_ui_threads(launcher: Launcher, nice: int) -> None:
    """Nice every thread of this process but the launcher's by `nice` (who=tid: one thread, on Linux).

    Threads started before (the UI's drawing and terminal threads) are niced with the calling one; threads
    started after inherit it. The TUI calls it once its first screen is drawn: its start does not wait behind
    the jobs it yields to afterwards.
    """
    for entry in os.listdir("/proc/self/task"):
        tid = int(entry)
        if tid == launcher.tid:
            continue
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
        except ProcessLookupError:
            pass  # a thread that ended meanwhile
