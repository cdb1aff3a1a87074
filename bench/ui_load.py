"""UI load: events ingested per second, UI CPU, key latency, and the job's throughput with the TUI.

Headless part: the real app (Textual's headless driver) follows a drill job writing 100, 1 000
and 10 000 events/s, and a pre-written burst file; a key binding is pressed every 100 ms and the
time until its handler runs is recorded. tmux part: the real `ms-workbench` in a terminal follows
a real training job; the job's steady images/s with the TUI attached is compared with the same
job detached, in the same run (alternating, so drift hits both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.binding import Binding  # noqa: E402

from workbench.app import WorkbenchApp  # noqa: E402
from workbench.config import defaults  # noqa: E402
from workbench.protocol import encode  # noqa: E402
from workbench.runner import JobRunner  # noqa: E402
from workbench.session import SessionStore  # noqa: E402


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
    return {"rate": rate, "ingested_per_s": ingested / wall, "ui_cpu_pct": 100.0 * cpu / wall,
            "key_p50_ms": statistics.median(latencies), "key_p95_ms": latencies[int(0.95 * (len(latencies) - 1))]}


async def burst(n_events: int) -> dict:
    """How fast the app ingests a file that already holds n_events (the ingest ceiling)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        sid = store.create()
        job_dir = store.new_job_dir(sid, "drill")
        (job_dir / "job.json").write_text(json.dumps({"jid": job_dir.name, "kind": "drill", "created": time.time(),
                                                      "device": {"requested": "CPU", "resolved": "CPU", "id": 0}}))
        with open(job_dir / "events.jsonl", "w") as fh:
            for i in range(n_events):
                fh.write(encode({"v": 1, "seq": i, "t": 0.0, "type": "step", "epoch": 1, "step": i, "loss": 1.0,
                                 "step_ms": 1.0, "batch_size": 64}))
        (job_dir / "exit.json").write_text(json.dumps({"returncode": 0, "duration_s": 1.0}))
        app = ProbeApp(store, sid, defaults())
        t0 = time.perf_counter()
        async with app.run_test(size=(120, 36)) as pilot:
            while app.events_ingested < n_events:
                await pilot.pause(0.01)
            wall = time.perf_counter() - t0
    return {"events": n_events, "seconds": wall, "per_s": n_events / wall}


def tmux_training(epochs: int) -> dict:
    """Steady images/s of a real training job detached vs followed by the TUI in tmux (same run)."""
    if not shutil.which("tmux"):
        return {"skipped": "tmux not installed"}
    out = {"detached": [], "attached": [], "ui_cpu_pct": []}
    with tempfile.TemporaryDirectory() as tmp:
        for attached in (False, True, False, True):
            store = SessionStore(Path(tmp))
            sid = store.create()
            cfg = defaults()
            cfg["train"].update(epochs=epochs)
            cfg["device"]["target"] = "CPU"
            job = JobRunner(store).start(sid, "train", cfg)
            ui_pid = None
            if attached:
                subprocess.run(["tmux", "kill-session", "-t", "wbbench"], capture_output=True)
                subprocess.run(["tmux", "new-session", "-d", "-s", "wbbench", "-x", "120", "-y", "36",
                                "%s -m workbench --sessions %s attach %s" % (sys.executable, tmp, sid)], check=True)
                time.sleep(2)
                subprocess.run(["tmux", "send-keys", "-t", "wbbench", "3"])
                pane_pid = subprocess.run(["tmux", "display", "-p", "-t", "wbbench", "#{pane_pid}"],
                                          capture_output=True, text=True).stdout.strip()
                ui_pid = int(pane_pid) if pane_pid else None
                t_ui0 = time.time()
                cpu_ui0 = _proc_cpu_s(ui_pid)
            JobRunner.wait(job, 3600)
            if attached:
                out["ui_cpu_pct"].append(100.0 * (_proc_cpu_s(ui_pid) - cpu_ui0) / (time.time() - t_ui0))
                subprocess.run(["tmux", "kill-session", "-t", "wbbench"], capture_output=True)
            perf = [json.loads(l) for l in open(job / "events.jsonl") if '"type":"perf"' in l]
            out["attached" if attached else "detached"].append(perf[-1]["steady"]["images_per_s"])
    return out


def _proc_cpu_s(pid) -> float:
    if not pid:
        return 0.0
    with open("/proc/%d/stat" % pid) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-train", action="store_true", help="skip the tmux training comparison")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    print("| drill rate (events/s) | screen | ingested/s | UI CPU % | key p50 ms | key p95 ms |")
    print("|---|---|---|---|---|---|")
    for rate in (100, 1000, 10000):
        for mode, name in (("6", "Session (visible)"), ("3", "Training (Session hidden)")):
            r = asyncio.run(follow_drill(rate, args.seconds, mode))
            print("| %d | %s | %.0f | %.1f | %.1f | %.1f |" % (rate, name, r["ingested_per_s"], r["ui_cpu_pct"],
                                                          r["key_p50_ms"], r["key_p95_ms"]))
    b = asyncio.run(burst(200_000))
    print("\nburst: %d events ingested in %.2f s = %.0f events/s (goal >= 20 000)" % (b["events"], b["seconds"], b["per_s"]))
    if not args.no_train:
        t = tmux_training(args.epochs)
        if "skipped" in t:
            print("training comparison skipped: %s" % t["skipped"])
        else:
            det, att = statistics.mean(t["detached"]), statistics.mean(t["attached"])
            print("\n| training, steady images/s | runs | mean |")
            print("|---|---|---|")
            print("| detached | %s | %.0f |" % (", ".join("%.0f" % v for v in t["detached"]), det))
            print("| TUI attached (tmux, Training screen) | %s | %.0f |" % (", ".join("%.0f" % v for v in t["attached"]), att))
            print("| ratio attached / detached | | %.3f (goal >= 0.97) |" % (att / det))
            print("| UI process CPU while following | %s | %.1f %% of a core (goal <= 15 %%) |" % (
                ", ".join("%.1f" % v for v in t["ui_cpu_pct"]), statistics.mean(t["ui_cpu_pct"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
