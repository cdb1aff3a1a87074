"""UI load: events ingested per second, UI CPU, key latency, and the job's throughput with the TUI.

Headless part: the real app (Textual's headless driver) follows a drill job writing 100, 1 000
and 10 000 events/s, and a pre-written burst file; a key binding is pressed every 100 ms and the
time until its handler runs is recorded. tmux part: the real `ms-workbench attach` follows one
long real training job and is frozen and thawed in alternating windows; the job's steady images/s
while the TUI follows is compared with the frozen windows either side, next to a frozen-vs-frozen
control that shows the machine's noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.binding import Binding  # noqa: E402

from screens.app import WorkbenchApp  # noqa: E402
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


def tmux_training(windows: int, window_s: float, ui_nice: int) -> dict:
    """One long real training run followed by the TUI in tmux (Training screen), in alternating windows.

    The TUI starts once and is then frozen (SIGSTOP: no CPU, as if detached) and thawed (SIGCONT:
    following, catching up on what it missed) in windows of `window_s`, so windows seconds apart are
    compared. A control sequence in the same run keeps the TUI frozen in both kinds of window: its
    ratio shows what this machine's noise alone does to the comparison. Each window's images/s comes
    from the job's own steady steps inside it (batch sizes over summed step times).
    """
    if not shutil.which("tmux"):
        return {"skipped": "tmux not installed"}
    spans = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        sid = store.create()
        cfg = defaults()
        cfg["train"].update(epochs=1000)  # stopped after the last window
        cfg["device"]["target"] = "CPU"
        job = JobRunner(store).start(sid, "train", cfg)
        events = job / "events.jsonl"
        deadline = time.time() + 120
        while time.time() < deadline and not (events.exists() and '"phase":"steady"' in events.read_text()):
            time.sleep(0.2)
        subprocess.run(["tmux", "-L", "wbbench", "kill-session", "-t", "wbbench"], capture_output=True)
        subprocess.run(["tmux", "-L", "wbbench", "new-session", "-d", "-s", "wbbench", "-x", "120", "-y", "36",
                        "exec %s -m workbench --sessions %s --set ui.nice=%d attach %s" % (
                            sys.executable, tmp, ui_nice, sid)], check=True)
        time.sleep(1)
        ui_pid, server_pid = _tmux_int("#{pane_pid}"), _tmux_int("#{pid}")
        try:
            subprocess.run(["tmux", "-L", "wbbench", "send-keys", "-t", "wbbench", "3"])
            _settled(ui_pid)
            for sequence in ("ui", "control"):
                for k in range(windows):
                    running = k % 2 == 1 and sequence == "ui"
                    os.kill(ui_pid, signal.SIGCONT if running else signal.SIGSTOP)
                    t0, ui0, tmux0 = time.time(), _proc_cpu_s(ui_pid), _proc_cpu_s(server_pid)
                    time.sleep(window_s)
                    t1 = time.time()
                    spans.append({"sequence": sequence, "attached": k % 2 == 1, "t0": t0, "t1": t1,
                                  "ui_cpu_pct": 100.0 * (_proc_cpu_s(ui_pid) - ui0) / (t1 - t0),
                                  "tmux_cpu_pct": 100.0 * (_proc_cpu_s(server_pid) - tmux0) / (t1 - t0)})
        finally:
            os.kill(ui_pid, signal.SIGCONT)
            subprocess.run(["tmux", "-L", "wbbench", "kill-session", "-t", "wbbench"], capture_output=True)
            JobRunner.cancel(job)
            JobRunner.wait(job, 60)
        steps = [json.loads(line) for line in open(events) if '"phase":"steady"' in line]
    for span in spans:
        inside = [e for e in steps if span["t0"] <= e["t"] < span["t1"]]
        ms = sum(e["step_ms"] for e in inside)
        span["steps"] = len(inside)
        span["images_per_s"] = 1000.0 * sum(e["batch_size"] for e in inside) / ms if ms else 0.0
    return {"spans": spans, "ui_nice": ui_nice}


def _settled(pid, below_pct: float = 30.0, limit_s: float = 10.0) -> None:
    """Wait until the UI has started and caught up (a 0.5 s sample under `below_pct`): following, not starting."""
    end = time.time() + limit_s
    while time.time() < end:
        c0 = _proc_cpu_s(pid)
        time.sleep(0.5)
        if 100.0 * (_proc_cpu_s(pid) - c0) / 0.5 < below_pct:
            return


def _tmux_int(fmt: str):
    out = subprocess.run(["tmux", "-L", "wbbench", "display", "-p", "-t", "wbbench", fmt], capture_output=True, text=True).stdout.strip()
    return int(out) if out.isdigit() else None


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
    parser.add_argument("--train-only", action="store_true", help="only the tmux training comparison")
    parser.add_argument("--windows", type=int, default=61, help="alternating windows (frozen first and last)")
    parser.add_argument("--window-s", type=float, default=1.0, help="length of each window")
    parser.add_argument("--ui-nice", type=int, default=defaults()["ui"]["nice"], help="ui.nice of the followed TUI")
    args = parser.parse_args()
    if args.train_only:
        return print_training(tmux_training(args.windows, args.window_s, args.ui_nice))
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
        print_training(tmux_training(args.windows, args.window_s, args.ui_nice))
    return 0


def _ratios(spans: list) -> list:
    """Each odd window's images/s over the mean of its two neighbours."""
    return [s["images_per_s"] / statistics.mean([spans[i - 1]["images_per_s"], spans[i + 1]["images_per_s"]])
            for i, s in enumerate(spans) if s["attached"] and i + 1 < len(spans)]


def _quartiles(values: list) -> str:
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return "median %.3f (quartiles %.3f–%.3f, n=%d)" % (q[1], q[0], q[2], len(values))


def print_training(t: dict) -> int:
    """The following-vs-frozen table, with the frozen-vs-frozen control next to it."""
    if "skipped" in t:
        print("training comparison skipped: %s" % t["skipped"])
        return 0
    ui = [s for s in t["spans"] if s["sequence"] == "ui"]
    control = [s for s in t["spans"] if s["sequence"] == "control"]
    following = [s for s in ui if s["attached"]]
    frozen = [s for s in ui if not s["attached"]]
    print("\n| one training run, %d-s windows | steady images/s, mean | ratio to the neighbouring windows |" % round(
        ui[0]["t1"] - ui[0]["t0"]))
    print("|---|---|---|")
    print("| TUI frozen (SIGSTOP) | %.0f | |" % statistics.mean(s["images_per_s"] for s in frozen))
    print("| TUI following (tmux, Training screen) | %.0f | %s (goal >= 0.97) |" % (
        statistics.mean(s["images_per_s"] for s in following), _quartiles(_ratios(ui))))
    print("| control: TUI frozen in both kinds of window | | %s |" % _quartiles(_ratios(control)))
    print("\nUI process CPU while following (ui.nice=%d): %.1f %% of a core (goal <= 15 %%); tmux server meanwhile: %.1f %%"
          % (t["ui_nice"], statistics.mean(s["ui_cpu_pct"] for s in following),
             statistics.mean(s["tmux_cpu_pct"] for s in following)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
