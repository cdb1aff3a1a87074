"""UI load: events ingested per second, UI CPU, key latency, and the job's throughput with the TUI.

Headless part: the real app (Textual's headless driver) follows a drill job writing 100, 1 000
and 10 000 events/s, and a pre-written burst file in both shapes the jobs write (batched `steps`
lines, and one `step` line per step: the worst case, labelled); a key binding is pressed every 100 ms and the
time until its handler runs is recorded. tmux part (bench/ui_follow.py): the real
`ms-workbench attach` follows one long real training job in windows, each window's UI CPU share
read from /proc, next to a control TUI on a finished copy of the session and the all-frozen floor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.binding import Binding  # noqa: E402

from bench.scale_sessions import SID, build_session  # noqa: E402
from bench.ui_follow import follow_training, print_following  # noqa: E402
from screens.app import WorkbenchApp  # noqa: E402
from workbench.config.layers import defaults  # noqa: E402
from workbench.run.runner import LOCK_DIR_ENV, JobRunner  # noqa: E402
from workbench.session.store import SessionStore  # noqa: E402


class ProbeApp(WorkbenchApp):
    """The workbench with one extra binding that records when its handler runs."""

    BINDINGS = WorkbenchApp.BINDINGS + [Binding("f12", "probe", "probe", show=False)]

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.handled = []

    def action_probe(self) -> None:
        self.handled.append(time.perf_counter())


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def follow_drill(rate: float, seconds: float, mode: str) -> dict:
    """Run a drill at `rate` events/s for `seconds` with the app following it on screen `mode`."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")  # device locks of this run's own
        store = SessionStore(Path(tmp))
        sid = store.create()
        cfg = defaults()
        cfg["drill"].update(steps=int(rate * seconds), rate=rate)
        cfg["limits"]["stall_s"] = 0
        job = JobRunner(store).start(sid, "drill", cfg)
        app = ProbeApp(store, sid, defaults())
        latencies = []
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press(mode)
            t0, c0 = time.perf_counter(), cpu_s()
            while time.perf_counter() - t0 < seconds:
                before = time.perf_counter()
                n = len(app.handled)
                await pilot.press("f12")
                while len(app.handled) == n:
                    await asyncio.sleep(0.001)
                latencies.append((app.handled[-1] - before) * 1000.0)
                await asyncio.sleep(0.1)
            wall, cpu = time.perf_counter() - t0, cpu_s() - c0
            ingested = app.events_ingested
        JobRunner.cancel(job)
        JobRunner.wait(job, 30)
    latencies.sort()
    return {
        "rate": rate,
        "ingested_per_s": ingested / wall,
        "ui_cpu_pct": 100.0 * cpu / wall,
        "key_p50_ms": statistics.median(latencies),
        "key_p95_ms": latencies[int(0.95 * (len(latencies) - 1))],
    }


async def burst(n_events: int, mix: str) -> dict:
    """How fast the app ingests a file that already holds n_events (the ingest ceiling), in a shape the jobs write.

    `train`: the train job's batched `steps` lines; `train-per-line`: one `step` line per step, the worst
    case (bench/scale_sessions.py). A step counts one event whichever way it is written.
    """
    with tempfile.TemporaryDirectory() as tmp:
        events = build_session(Path(tmp), mix, n_events)
        with open(str(events), "rb") as fh:
            lines = sum(1 for _ in fh)
        app = ProbeApp(SessionStore(Path(tmp)), SID, defaults())
        t0 = time.perf_counter()
        async with app.run_test(size=(120, 36)) as pilot:
            while app.events_ingested < lines:  # the app counts the lines it has read
                await pilot.pause(0.01)
            wall = time.perf_counter() - t0
    return {"mix": mix, "events": n_events, "lines": lines, "seconds": wall, "per_s": n_events / wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-train", action="store_true", help="skip the tmux training comparison")
    parser.add_argument("--train-only", action="store_true", help="only the tmux training comparison")
    parser.add_argument("--windows", type=int, default=121, help="windows in turn: frozen, an arm following, …")
    parser.add_argument("--window-s", type=float, default=2.0, help="length of each window")
    parser.add_argument("--ui-nice", type=int, default=defaults()["ui"]["nice"], help="ui.nice of the followed TUI")
    parser.add_argument("--before-tree", type=Path, help="a second source tree whose TUI follows the same job")
    parser.add_argument("--seed", type=int, default=None, help="the tmux arms' order per cycle (random when not given)")
    args = parser.parse_args()
    train = (args.windows, args.window_s, args.ui_nice, args.before_tree, args.seed)
    if args.train_only:
        return print_following(follow_training(*train))
    print("load average before: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    print("| drill rate (events/s) | screen | ingested/s | UI CPU % | key p50 ms | key p95 ms |")
    print("|---|---|---|---|---|---|")
    for rate in (100, 1000, 10000):
        for mode, name in (("6", "Session (visible)"), ("3", "Training (Session hidden)")):
            r = asyncio.run(follow_drill(rate, args.seconds, mode))
            print(
                "| %d | %s | %.0f | %.1f | %.1f | %.1f |"
                % (rate, name, r["ingested_per_s"], r["ui_cpu_pct"], r["key_p50_ms"], r["key_p95_ms"])
            )
    print()
    for mix in ("train", "train-per-line"):
        b = asyncio.run(burst(200_000, mix))
        print(
            "burst (%s%s): %d events (%d lines) ingested in %.2f s = %.0f events/s (goal >= 20 000)"
            % (
                mix,
                ", the worst case" if mix == "train-per-line" else ", as the job writes",
                b["events"],
                b["lines"],
                b["seconds"],
                b["per_s"],
            )
        )
    print("load average after the headless part: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    if not args.no_train:
        print_following(follow_training(*train))
    return 0


if __name__ == "__main__":
    sys.exit(main())
