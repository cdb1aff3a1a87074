"""How the product's cost grows with a session's size: export, `watch --json`, `sessions`, against json.loads.

For sessions of 10 000, 100 000 and 1 000 000 events (bench/scale_sessions.py: the real drill job's
lines at full rate, and the recorded real training job repeated to size) this measures in one run:
`ms-workbench export` wall time and peak RSS (the child's own VmHWM, see HWM), `watch --json`
replay rate, the `sessions` listing time, the TUI's `attach` (bench/attach_probe.py: first paint, time
until caught up with the last event, CPU seconds and peak RSS, in a 120x36 pseudo-terminal), and the
baseline: one pass of json.loads over the same file in a fresh interpreter. Writes a JSON result, a
Markdown table and two log-log SVG figures. Each command is the real CLI in a subprocess
(`python -m workbench`, this tree first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.attach_probe import attach  # noqa: E402
from bench.scale_sessions import ROOT, SID, build_session, drill_template  # noqa: E402

BASELINE = "import json,sys\nwith open(sys.argv[1],'rb') as fh:\n    for line in fh: json.loads(line)\n"
# Runs `python -m module args` or `python -c code args` and writes its peak RSS (VmHWM, kB) to argv[1] at exit.
# VmHWM starts afresh at exec; wait4's ru_maxrss does not: it carries the forking parent's peak across exec
# (a 10 MB child of a parent that once held 300 MB reports 300 MB), so a small child would show this bench's peak.
HWM = (
    "import atexit,runpy,sys\nout=sys.argv.pop(1)\n"
    "def hwm():\n    with open('/proc/self/status') as fh:\n"
    "        kb=[l.split()[1] for l in fh if l.startswith('VmHWM:')]\n"
    "    with open(out,'w') as fh: fh.write(kb[0] if kb else '')\n"
    "atexit.register(hwm)\nflag,what=sys.argv.pop(1),sys.argv.pop(1)\n"
    "if flag=='-m':\n    sys.argv[0]=what\n    runpy.run_module(what,run_name='__main__',alter_sys=True)\n"
    "else:\n    sys.argv[0]='-c'\n    exec(compile(what,'<string>','exec'),{'__name__':'__main__'})\n"
)
GOALS = {
    "export_ratio": 3.0,
    "export_rss_mb": 250.0,
    "attach_paint_s": 1.0,
    "attach_ratio": 3.0,
    "attach_rss_mb": 300.0,
}


def timed(cmd: List[str], out: Any = subprocess.DEVNULL) -> Tuple[float, float, float, int]:
    """Run a Python command (`py -m ...` or `py -c ...`) -> (wall s, CPU s, its own peak RSS MB, return code)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    fd, hwm_path = tempfile.mkstemp(prefix="scale-hwm-")
    os.close(fd)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [cmd[0], "-c", HWM, hwm_path] + cmd[1:], cwd=str(ROOT), stdout=out, stderr=subprocess.DEVNULL, env=env
    )
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(hwm_path) as fh:
        kb = fh.read().strip()
    os.unlink(hwm_path)
    return wall, ru.ru_utime + ru.ru_stime, int(kb) / 1024.0 if kb else float("nan"), proc.returncode


def measure(root: Path, events: Path, n: int) -> Dict[str, Any]:
    """One session size: every command once, the baseline first."""
    py = sys.executable
    base = timed([py, "-c", BASELINE, str(events)])
    export = timed([py, "-m", "workbench", "export", SID, "--sessions", str(root), "--no-screenshots"])
    watch = timed(
        [py, "-m", "workbench", "watch", "%s/%s" % (SID, events.parent.name), "--json", "--sessions", str(root)]
    )
    listing = timed([py, "-m", "workbench", "sessions", "--sessions", str(root)])
    tui = attach(root, SID)
    return {
        "attach_paint_s": tui["first_paint_s"],
        "attach_paint_seen_s": tui["paint_seen_s"],
        "attach_caught_up_s": tui["caught_up_s"],
        "attach_cpu_s": tui["caught_up_cpu_s"],
        "attach_paint_cpu_s": tui["first_paint_cpu_s"],
        "attach_rss_mb": tui["hwm_mb"],
        "attach_events": tui["caught_up_events"],
        "attach_timed_out": tui["timed_out"],
        "attach_ratio": (tui["caught_up_s"] or float("nan")) / base[0],
        "attach_cpu_ratio": (tui["caught_up_cpu_s"] or float("nan")) / base[1],
        "events": n,
        "bytes": events.stat().st_size,
        "baseline_s": base[0],
        "baseline_cpu_s": base[1],
        "baseline_rss_mb": base[2],
        "export_s": export[0],
        "export_cpu_s": export[1],
        "export_rss_mb": export[2],
        "export_rc": export[3],
        "export_ratio": export[0] / base[0],
        "export_cpu_ratio": export[1] / base[1],
        "watch_cpu_s": watch[1],
        "sessions_cpu_s": listing[1],
        "watch_s": watch[0],
        "watch_events_per_s": n / watch[0],
        "watch_rc": watch[3],
        "sessions_s": listing[0],
        "sessions_rc": listing[3],
    }


def loglog_svg(title: str, y_label: str, series: Dict[str, List[Tuple[float, float]]], goal: float = None) -> str:
    """A small log-log line chart (x: events) as a standalone SVG."""
    w, h, left, bottom, top, right = 560, 340, 70, 50, 34, 150
    pts = [p for s in series.values() for p in s if p[1] > 0]
    if goal:
        pts.append((pts[0][0], goal))
    lx = [math.log10(p[0]) for p in pts]
    ly = [math.log10(p[1]) for p in pts]
    x0, x1 = math.floor(min(lx)), math.ceil(max(lx))
    y0, y1 = math.floor(min(ly)), math.ceil(max(ly))
    y1 = y1 if y1 > y0 else y0 + 1
    x1 = x1 if x1 > x0 else x0 + 1

    def px(x: float) -> float:
        return left + (math.log10(x) - x0) / (x1 - x0) * (w - left - right)

    def py(y: float) -> float:
        return h - bottom - (math.log10(y) - y0) / (y1 - y0) * (h - top - bottom)

    out = [
        "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='DejaVu Sans, sans-serif' "
        "font-size='11'>" % (w, h),
        "<rect width='100%' height='100%' fill='white'/>",
        "<text x='%d' y='20' font-size='13' font-weight='bold'>%s</text>" % (left, title),
    ]
    for e in range(x0, x1 + 1):
        out.append(
            "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ddd'/>" % (px(10**e), top, px(10**e), h - bottom)
        )
        out.append("<text x='%.1f' y='%d' text-anchor='middle'>1e%d</text>" % (px(10**e), h - bottom + 14, e))
    for e in range(y0, y1 + 1):
        out.append(
            "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>" % (left, py(10**e), w - right, py(10**e))
        )
        out.append("<text x='%d' y='%.1f' text-anchor='end'>%g</text>" % (left - 4, py(10**e) + 4, 10**e))
    out.append(
        "<text x='%d' y='%d' text-anchor='middle'>events in the session</text>" % ((left + w - right) // 2, h - 12)
    )
    out.append(
        "<text transform='translate(14 %d) rotate(-90)' text-anchor='middle'>%s</text>"
        % ((h - bottom + top) // 2, y_label)
    )
    colours = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
    for i, (name, s) in enumerate(series.items()):
        c = colours[i % len(colours)]
        s = [p for p in s if p[1] > 0]
        out.append(
            "<polyline fill='none' stroke='%s' stroke-width='2' points='%s'/>"
            % (c, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in s))
        )
        for x, y in s:
            out.append("<circle cx='%.1f' cy='%.1f' r='3' fill='%s'/>" % (px(x), py(y), c))
        out.append("<text x='%d' y='%d' fill='%s'>%s</text>" % (w - right + 8, top + 14 * i + 10, c, name))
    if goal:
        out.append(
            "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#999' stroke-dasharray='4 3'/>"
            % (left, py(goal), w - right, py(goal))
        )
        out.append("<text x='%d' y='%.1f' fill='#666'>goal %g</text>" % (left + 4, py(goal) - 4, goal))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--mixes", default="drill,train")
    ap.add_argument("--out", default=str(ROOT / "docs"), help="folder for scale.json and the two figures")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ms-workbench-scale-"))
    rows = []
    try:
        templates = {"drill": drill_template(work), "train": None}
        for mix in args.mixes.split(","):
            for n in [int(s) for s in args.sizes.split(",")]:
                root = work / ("%s-%d" % (mix, n))
                events = build_session(root, mix, n, templates[mix])
                row = dict(measure(root, events, n), mix=mix, load=os.getloadavg()[0])
                rows.append(row)
                print(json.dumps(row), flush=True)
                shutil.rmtree(str(root), ignore_errors=True)
    finally:
        shutil.rmtree(str(work), ignore_errors=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    by = lambda mix, key: [(r["events"], r[key]) for r in rows if r["mix"] == mix]  # noqa: E731
    mixes = sorted({r["mix"] for r in rows})
    time_series = {}
    for mix in mixes:
        time_series["export (%s)" % mix] = by(mix, "export_s")
        time_series["watch --json (%s)" % mix] = by(mix, "watch_s")
        time_series["json.loads (%s)" % mix] = by(mix, "baseline_s")
        time_series["export CPU (%s)" % mix] = by(mix, "export_cpu_s")
        time_series["json.loads CPU (%s)" % mix] = by(mix, "baseline_cpu_s")
        time_series["sessions (%s)" % mix] = by(mix, "sessions_s")
        time_series["attach caught up (%s)" % mix] = by(mix, "attach_caught_up_s")
        time_series["attach first paint (%s)" % mix] = by(mix, "attach_paint_s")
    (out / "scale-time.svg").write_text(
        loglog_svg("Time vs events (one run)", "seconds", time_series), encoding="utf-8"
    )
    mem_series = {}
    for mix in mixes:
        mem_series["export peak RSS (%s)" % mix] = by(mix, "export_rss_mb")
        mem_series["json.loads RSS (%s)" % mix] = by(mix, "baseline_rss_mb")
        mem_series["attach UI peak RSS (%s)" % mix] = by(mix, "attach_rss_mb")
    (out / "scale-memory.svg").write_text(
        loglog_svg("Peak memory vs events (one run)", "MB", mem_series, goal=GOALS["export_rss_mb"]), encoding="utf-8"
    )
    print(
        "| mix | events | MB | json.loads wall / CPU s | export wall s (ratio) | export CPU s (ratio) | "
        "export peak RSS MB | watch --json events/s (CPU s) | sessions wall / CPU s | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            "| %s | %d | %.1f | %.2f / %.2f | %.1f (%.1f×) | %.2f (%.1f×) | %.0f | %.0f (%.2f) | %.2f / %.2f | %.1f |"
            % (
                r["mix"],
                r["events"],
                r["bytes"] / 1e6,
                r["baseline_s"],
                r["baseline_cpu_s"],
                r["export_s"],
                r["export_ratio"],
                r["export_cpu_s"],
                r["export_cpu_ratio"],
                r["export_rss_mb"],
                r["watch_events_per_s"],
                r["watch_cpu_s"],
                r["sessions_s"],
                r["sessions_cpu_s"],
                r["load"],
            )
        )
    print()
    print(
        "| mix | events | json.loads wall / CPU s | attach first paint s (seen) | caught up s (ratio) | "
        "attach CPU s (ratio) | UI peak RSS MB | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            "| %s | %d | %.2f / %.2f | %.2f (%.2f) | %.2f (%.2f×) | %.2f (%.2f×) | %.0f | %.1f |"
            % (
                r["mix"],
                r["events"],
                r["baseline_s"],
                r["baseline_cpu_s"],
                r["attach_paint_s"] or -1,
                r["attach_paint_seen_s"] or -1,
                r["attach_caught_up_s"] or -1,
                r["attach_ratio"],
                r["attach_cpu_s"] or -1,
                r["attach_cpu_ratio"],
                r["attach_rss_mb"] or -1,
                r["load"],
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
