"""Where the UI's CPU goes while it follows a real training job: cProfile of the headless app on the Training screen.

A real training job (MLP, CPU, graph mode) runs; once its steps are steady, the real app (Textual's
headless driver, 120×36) follows it on the Training screen, and after it has caught up, `--seconds`
of following are profiled. Prints the CPU share of the process in that span, polls and redraws per
second, and the top functions by own time and by cumulative time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ui_follow import start_steady_training  # noqa: E402
from screens.app import WorkbenchApp  # noqa: E402
from workbench.config.layers import defaults  # noqa: E402
from workbench.run.runner import LOCK_DIR_ENV, JobRunner  # noqa: E402
from workbench.session.store import SessionStore  # noqa: E402


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CountingApp(WorkbenchApp):
    """The workbench, counting its polls."""

    polls = 0

    def poll_jobs(self) -> bool:
        self.polls += 1
        return super().poll_jobs()


async def follow(store: SessionStore, sid: str, seconds: float, top: int) -> None:
    app = CountingApp(store, sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await pilot.pause(3.0)  # caught up: following, not starting
        screen = app.screen
        polls, redraws = app.polls, screen.redraws
        profile = cProfile.Profile()
        t0, c0 = time.perf_counter(), cpu_s()
        profile.enable()
        await pilot.pause(seconds)
        profile.disable()
        wall, cpu = time.perf_counter() - t0, cpu_s() - c0
        print(
            "following %.1f s: process CPU %.1f %% of a core (profiled); %.1f polls/s, %.2f redraws/s"
            % (wall, 100.0 * cpu / wall, (app.polls - polls) / wall, (screen.redraws - redraws) / wall)
        )
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(key).print_stats(top)
        print("\n== by %s ==\n%s" % (key, "\n".join(out.getvalue().splitlines()[6:])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")  # device locks of this run's own
        store = SessionStore(Path(tmp))
        sid, job = start_steady_training(store)
        try:
            asyncio.run(follow(store, sid, args.seconds, args.top))
        finally:
            JobRunner.cancel(job)
            JobRunner.wait(job, 60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
