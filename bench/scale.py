"""How the product's cost grows with a session's size: the default export, `watch --json`, `sessions`, attach.

For sessions of 10 000, 100 000 and 1 000 000 events (bench/scale_sessions.py: `train` as the train job
writes it, batched `steps` lines of about 30 steps; `train-per-line`, one `step` line per step, the
worst case; `drill`, the real drill job's lines) this measures, in rounds whose arms run in a random
order each round, the baseline (one pass of json.loads over the same file in a fresh interpreter) and:
`ms-workbench export` as users run it (screenshots drawn by its renderer child: CPU and peak memory of
every process it starts are counted), `export --no-screenshots` (an extra arm), `watch --json`, the
`sessions` listing, `attach` in a 120x36 pseudo-terminal (bench/attach_probe.py: first paint, and
caught up = the frame showing the whole backlog is out) and, as the baseline of the first paint, a
minimal Textual app in the same pseudo-terminal (bench/minimal_app.py). Every ratio is to a baseline
of the same round; the export's time is judged on the 95 % interval of its per-round ratios (every round over
counted), its memory and attach in every round. The tree is byte-compiled first, as an installed package is (with PYTHONDONTWRITEBYTECODE
set, each of the export's three processes would otherwise compile every module changed since its bytecode).
Results go to a scratch folder; --write puts scale.json and the figures in docs/.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.attach_probe import attach, baseline_paint, compile_tree  # noqa: E402
from bench.scale_sessions import MIXES, ROOT, SID, build_session, drill_template  # noqa: E402
from bench.stats import interval_verdict, load, ratio, scratch, shuffled, spread  # noqa: E402

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
    "attach_ratio": 2.0,
    "attach_rss_mb": 300.0,
}
ARMS = ("json.loads", "export", "export --no-screenshots", "watch --json", "sessions", "attach", "minimal app")
SAMPLE_S = 0.05


def _status_kb(pid: int, key: str) -> Optional[int]:
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _children(pid: int) -> List[int]:
    out: List[int] = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as fh:
                out += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return out


def _cmdline(pid: int) -> Optional[bytes]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return fh.read()
    except OSError:
        return None


class TreeMemory(threading.Thread):
    """Samples a process's descendants every SAMPLE_S: each one's peak (VmHWM, the last seen) and the summed RSS."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.done = pid, threading.Event()
        self.hwm_kb: Dict[int, int] = {}  # descendants only: the top process reports its own exactly
        self.names: Dict[int, str] = {}
        self.peak_sum_kb = 0

    def run(self) -> None:
        top_cmd = _cmdline(self.pid)
        while not self.done.is_set():
            total, todo = 0, _children(self.pid)
            top = _status_kb(self.pid, "VmRSS")
            total += top or 0
            while todo:
                pid = todo.pop()
                todo += _children(pid)
                cmd = _cmdline(pid)
                if cmd is None or cmd == top_cmd:
                    # Forked, not yet exec'd (subprocess's vfork shares the parent's memory until exec): its RSS is
                    # the parent's, already counted. Under load that window is long enough to be sampled.
                    continue
                hwm, rss = _status_kb(pid, "VmHWM"), _status_kb(pid, "VmRSS")
                if hwm is not None:
                    self.hwm_kb[pid] = max(hwm, self.hwm_kb.get(pid, 0))
                    if pid not in self.names:
                        self.names[pid] = cmd.replace(b"\0", b" ").decode("utf-8", "replace")[:120]
                total += rss or 0
            self.peak_sum_kb = max(self.peak_sum_kb, total)
            self.done.wait(SAMPLE_S)


def timed(cmd: List[str], out: Any = subprocess.DEVNULL) -> Dict[str, Any]:
    """Run a Python command (`py -m ...` or `py -c ...`): wall s, CPU s (its waited-for children included), memory."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    fd, hwm_path = tempfile.mkstemp(prefix="scale-hwm-")
    os.close(fd)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [cmd[0], "-c", HWM, hwm_path] + cmd[1:], cwd=str(ROOT), stdout=out, stderr=subprocess.DEVNULL, env=env
    )
    tree = TreeMemory(proc.pid)
    tree.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    tree.done.set()
    tree.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(hwm_path) as fh:
        kb = fh.read().strip()
    os.unlink(hwm_path)
    own = int(kb) / 1024.0 if kb else float("nan")
    children = sum(tree.hwm_kb.values()) / 1024.0
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,  # wait4: the process and every descendant it waited for
        "rss_mb": own,
        "children_rss_mb": children,  # sum of each descendant's own peak (sampled)
        "all_rss_mb": own + children,  # an upper bound of every process's memory at once
        "sampled_sum_rss_mb": tree.peak_sum_kb / 1024.0,  # the largest summed RSS seen at one sample
        "children": sorted(set(tree.names.values())),
        "rc": proc.returncode,
    }


def _screenshots(root: Path) -> Dict[str, Any]:
    try:
        report = json.loads((root / SID / "export" / "report.json").read_text(encoding="utf-8"))
        return report["files"]["screenshots"]
    except (OSError, ValueError, KeyError) as exc:
        return {"files": [], "error": "no report: %s" % exc}


def run_arm(arm: str, root: Path, events: Path) -> Dict[str, Any]:
    """One measurement of one arm on one session."""
    py = sys.executable
    if arm == "json.loads":
        return timed([py, "-c", BASELINE, str(events)])
    if arm in ("export", "export --no-screenshots"):
        extra = ["--no-screenshots"] if arm != "export" else []
        got = timed([py, "-m", "workbench", "export", SID, "--sessions", str(root)] + extra)
        shots = _screenshots(root)
        got["screenshots"] = len(shots.get("files") or [])
        got["screenshot_error"] = shots.get("error")
        return got
    if arm == "watch --json":
        return timed(
            [py, "-m", "workbench", "watch", "%s/%s" % (SID, events.parent.name), "--json", "--sessions", str(root)]
        )
    if arm == "sessions":
        return timed([py, "-m", "workbench", "sessions", "--sessions", str(root)])
    if arm == "attach":
        return attach(root, SID)
    if arm == "minimal app":
        return baseline_paint()
    raise ValueError(arm)


def measure(
    root: Path, events: Path, rounds: int, rng: random.Random, arms: List[str], seen: set
) -> List[Dict[str, Any]]:
    """`rounds` rounds over one session, the arms in a new random order each round; one row per round."""
    rows = []
    for r in range(rounds):
        row: Dict[str, Any] = {"round": r, "order": [], "load_start": load()}
        for arm in shuffled(arms, rng):
            got = run_arm(arm, root, events)
            got["cold"] = arm not in seen  # the first run of this program in this bench run
            seen.add(arm)
            row[arm] = got
            row["order"].append(arm)
        row["load_end"] = load()
        base = row["json.loads"]
        for arm in ("export", "export --no-screenshots"):
            if arm in row:
                row[arm]["ratio"] = ratio(row[arm]["wall_s"], base["wall_s"])
                row[arm]["cpu_ratio"] = ratio(row[arm]["cpu_s"], base["cpu_s"])
        if "attach" in row:
            a = row["attach"]
            a["ratio"] = ratio(a.get("caught_up_s"), base["wall_s"])
            a["cpu_ratio"] = ratio(a.get("caught_up_cpu_s"), base["cpu_s"])
            if "minimal app" in row:
                a["paint_ratio"] = ratio(a.get("first_paint_s"), row["minimal app"].get("first_paint_s"))
                a["paint_cpu_ratio"] = ratio(a.get("first_paint_cpu_s"), row["minimal app"].get("first_paint_cpu_s"))
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)
    return rows


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


def _values(rows: List[Dict[str, Any]], arm: str, key: str) -> List[Optional[float]]:
    return [r[arm].get(key) for r in rows if arm in r]


def tables(results: List[Dict[str, Any]]) -> str:
    """The Markdown tables: medians [min–max] over the rounds of each session, ratios per round."""
    out = [
        "| mix | events | lines | MB | json.loads wall s | export wall s | export ÷ json.loads (wall) | "
        "export ÷ json.loads (CPU) | all-process peak RSS MB | --no-screenshots ÷ json.loads (wall) | "
        "screenshots | load before / after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        rows = res["rounds"]
        shots = sorted(
            {
                "%s%s" % (r["export"]["screenshots"], "" if not r["export"]["screenshot_error"] else " (error)")
                for r in rows
                if "export" in r
            }
        )
        out.append(
            "| %s | %d | %d | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |"
            % (
                res["mix"],
                res["events"],
                res["lines"],
                res["bytes"] / 1e6,
                spread(_values(rows, "json.loads", "wall_s")),
                spread(_values(rows, "export", "wall_s")),
                spread(_values(rows, "export", "ratio")),
                spread(_values(rows, "export", "cpu_ratio")),
                spread(_values(rows, "export", "all_rss_mb"), "%.0f"),
                spread(_values(rows, "export --no-screenshots", "ratio")),
                "/".join(shots) or "-",
                "%s / %s"
                % (spread([r["load_start"] for r in rows], "%.1f"), spread([r["load_end"] for r in rows], "%.1f")),
            )
        )
    out += [
        "",
        "| mix | events | watch --json events/s | sessions s | minimal app first paint s | attach first paint s | "
        "paint ÷ minimal app | attach caught up s | caught up ÷ json.loads (wall) | (CPU) | UI peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        rows = res["rounds"]
        out.append(
            "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
            % (
                res["mix"],
                res["events"],
                spread([res["events"] / w if w else None for w in _values(rows, "watch --json", "wall_s")], "%.0f"),
                spread(_values(rows, "sessions", "wall_s")),
                spread(_values(rows, "minimal app", "first_paint_s")),
                spread(_values(rows, "attach", "first_paint_s")),
                spread(_values(rows, "attach", "paint_ratio")),
                spread(_values(rows, "attach", "caught_up_s")),
                spread(_values(rows, "attach", "ratio")),
                spread(_values(rows, "attach", "cpu_ratio")),
                spread(_values(rows, "attach", "hwm_mb"), "%.0f"),
            )
        )
    cold = [
        (res["mix"], res["events"], arm, r[arm])
        for res in results
        for r in res["rounds"]
        for arm in ("attach", "minimal app")
        if arm in r and r[arm].get("cold")
    ]
    for mix, n, arm, got in cold:
        out.append("")
        out.append(
            "cold (first in this run): %s on %s/%d: first paint %.2f s" % (arm, mix, n, got.get("first_paint_s") or -1)
        )
    return "\n".join(out)


def _judged(values: List[float], ok: Any) -> str:
    """'met' when the worst value passes, 'NOT met' when not, 'not measured' when the arm was not run."""
    if not values:
        return "not measured"
    return "met" if ok(max(values)) else "NOT met"


def goals(results: List[Dict[str, Any]]) -> List[str]:
    """The goals at the largest size of each mix: the export's time on the 95 % interval of its per-round ratios (as
    startup and train_throughput judge; every round over is counted), its memory and attach in every round."""
    lines = []
    for res in results:
        if res["events"] != max(r["events"] for r in results if r["mix"] == res["mix"]):
            continue
        rows = res["rounds"]
        ex = [v for v in _values(rows, "export", "ratio") if v is not None]
        ex_cpu = [v for v in _values(rows, "export", "cpu_ratio") if v is not None]
        mem = [v for v in _values(rows, "export", "all_rss_mb") if v is not None]
        att = [v for v in _values(rows, "attach", "ratio") if v is not None]
        # an attach that never caught up has no ratio: it fails "every round" instead of dropping out of it
        hung = sum(1 for r in rows if "attach" in r and r["attach"].get("ratio") is None)
        lines.append(
            "%s/%d: export ÷ json.loads wall (goal ≤ %.1f): %s; CPU max %.2f; all-process peak RSS max %.0f MB "
            "(goal < %.0f: %s); attach caught up ÷ json.loads max %.2f (goal ≤ %.1f in every round: %s)"
            % (
                res["mix"],
                res["events"],
                GOALS["export_ratio"],
                interval_verdict(ex, GOALS["export_ratio"]),
                max(ex_cpu or [float("nan")]),
                max(mem or [float("nan")]),
                GOALS["export_rss_mb"],
                _judged(mem, lambda v: v < GOALS["export_rss_mb"]),
                max(att or [float("nan")]),
                GOALS["attach_ratio"],
                _judged(att, lambda v: v <= GOALS["attach_ratio"])
                if not hung
                else "NOT met: %d attach(es) never caught up" % hung,
            )
        )
    return lines


def figures(results: List[Dict[str, Any]], out: Path) -> None:
    """Two log-log figures of the medians against the events."""
    import statistics

    def by(mix: str, arm: str, key: str) -> List[Tuple[float, float]]:
        pts = []
        for res in results:
            if res["mix"] == mix:
                vals = [v for v in _values(res["rounds"], arm, key) if v is not None]
                if vals:
                    pts.append((float(res["events"]), statistics.median(vals)))
        return pts

    mixes = sorted({r["mix"] for r in results})
    time_series = {}
    for mix in mixes:
        time_series["export (%s)" % mix] = by(mix, "export", "wall_s")
        time_series["json.loads (%s)" % mix] = by(mix, "json.loads", "wall_s")
        time_series["attach caught up (%s)" % mix] = by(mix, "attach", "caught_up_s")
    (out / "scale-time.svg").write_text(
        loglog_svg("Time vs events (medians of one run)", "seconds", time_series), encoding="utf-8"
    )
    mem_series = {}
    for mix in mixes:
        mem_series["export, all processes (%s)" % mix] = by(mix, "export", "all_rss_mb")
        mem_series["attach UI (%s)" % mix] = by(mix, "attach", "hwm_mb")
    (out / "scale-memory.svg").write_text(
        loglog_svg("Peak memory vs events (medians of one run)", "MB", mem_series, goal=GOALS["export_rss_mb"]),
        encoding="utf-8",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--mixes", default=",".join(MIXES))
    ap.add_argument("--rounds", type=int, default=3, help="rounds per session, arms in a random order each round")
    ap.add_argument("--arms", default=",".join(ARMS), help="a subset of: " + ", ".join(ARMS))
    ap.add_argument("--seed", type=int, default=None, help="the arm order's random seed (printed)")
    ap.add_argument(
        "--out", default=None, help="folder for scale.json, the tables and the figures (default: a new scratch folder)"
    )
    ap.add_argument(
        "--write", action="store_true", help="write scale.json and the figures into docs/ (the committed ones)"
    )
    args = ap.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown or "json.loads" not in arms:
        ap.error(
            "--arms: unknown %s; the json.loads baseline is always needed" % unknown
            if unknown
            else "--arms needs json.loads"
        )
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    out = ROOT / "docs" if args.write else scratch("ms-workbench-scale-out-", args.out)
    print("seed %d; results to %s; load %.1f" % (seed, out, load()), flush=True)
    compile_tree()  # every process the arms start reads bytecode, as from an install (not the compiler's time)
    work = Path(tempfile.mkdtemp(prefix="ms-workbench-scale-"))
    results: List[Dict[str, Any]] = []
    seen: set = set()
    try:
        template = drill_template(work) if "drill" in args.mixes.split(",") else None
        for mix in args.mixes.split(","):
            for n in [int(s) for s in args.sizes.split(",")]:
                root = work / ("%s-%d" % (mix, n))
                events = build_session(root, mix, n, template if mix == "drill" else None)
                with open(str(events), "rb") as fh:
                    lines = sum(1 for _ in fh)
                rounds = measure(root, events, args.rounds, rng, arms, seen)
                results.append(
                    {"mix": mix, "events": n, "lines": lines, "bytes": events.stat().st_size, "rounds": rounds}
                )
                shutil.rmtree(str(root), ignore_errors=True)
    finally:
        shutil.rmtree(str(work), ignore_errors=True)
    doc = {"seed": seed, "arms": arms, "python": sys.version.split()[0], "cpus": os.cpu_count(), "results": results}
    (out / "scale.json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    figures(results, out)
    text = tables(results) + "\n\n" + "\n".join(goals(results)) + "\n"
    if not args.write:  # docs/PERFORMANCE.md carries the tables that count
        (out / "scale.md").write_text(text, encoding="utf-8")
    print(text)
    print("written: %s (scale.json, scale-time.svg, scale-memory.svg%s)" % (out, "" if args.write else ", scale.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
