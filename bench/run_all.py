"""Every corrected bench, one after another, into one scratch folder, with the machine and the commit they ran on.

Meant for one quiet run on a 2-core machine (the full set takes about 39 minutes there, 12 of them the job-vs-bare rounds): the
export/attach scale bench at up to 1 M events in both shapes (the job's batched `steps` lines and
the per-line worst case), start-up, loading the data, train throughput (job vs bare loop with enough rounds for a
5 % question, and the course recipe), the monitor's cost, the UI following a job (headless and in
tmux), attaching mid-run, and the CNN with and without the ISA cap. Each bench runs with this
checkout on PYTHONPATH, writes its output (log, and its JSON or folder) under the run's folder, and
the run records the CPU (model name, the AVX-512/AMX flags), the load averages before and after
each bench, the commit and the time taken. docs/ is only touched with --update-docs (scale.py
--write). `--quick` runs every bench with tiny parameters (a check of the driver, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8")
# what the summary quotes from each log: goal/verdict lines and the job-vs-bare interval
KEY_LINE = re.compile(
    r"^(?!round |[{\[])(goal|job vs|job-uncapped vs|final val|verdict|[a-z]+ arm: |.*\bnot settled\b|.*\bwithin 5\b|burst|frozen by|.*: export ÷)",
    re.I,
)


def benches(quick: bool, update_docs: bool) -> List[Dict[str, Any]]:
    """Each bench: a name, its argv ({out} = its own folder under the run's), and the minutes it is expected to take."""
    b = "bench/"
    if quick:
        scale = ["--sizes", "10000", "--mixes", "train,train-per-line", "--rounds", "1"]
        mlp = ["--slices", "0.25", "--arms", "job,bare", "--epochs", "3", "--rounds", "1", "--limit", "640"]
        mlp += ["--max-busy", "1"]
        course = ["--arms", "course,job", "--epochs", "2", "--rounds", "2", "--limit", "640", "--max-busy", "1"]
        cnn = ["--model", "cnn", "--arms", "job,job-uncapped", "--epochs", "2", "--rounds", "1", "--limit", "192"]
        cnn += ["--val-limit", "200"]
        cnn += ["--max-busy", "1"]
        monitor = ["--pairs", "20", "--resamples", "200", "--rounds", "2", "--job-epochs", "2", "--job-limit", "640"]
        monitor += ["--slice", "0.1"]
        ui = ["--seconds", "1", "--windows", "5", "--window-s", "1"]
        midrun = ["--at", "5,15", "--rounds", "1", "--epochs", "30"]
        startup = ["--rounds", "2"]
        data = ["--runs", "2"]
    else:
        scale = ["--sizes", "100000,1000000", "--mixes", "train,train-per-line", "--rounds", "8"]
        # the two arms at once, taking turns of 0.25 s: the machine's drift hits both (docstring of the bench)
        mlp = ["--slices", "0.25", "--arms", "job,bare", "--epochs", "3", "--rounds", "200", "--until-settled"]
        mlp += ["--min-rounds", "10", "--budget-min", "15", "--val-limit", "600", "--max-busy", "1"]
        course = ["--arms", "course,job", "--epochs", "3", "--rounds", "3", "--max-busy", "0.5"]
        course += ["--quiet-timeout", "20"]
        cnn = ["--model", "cnn", "--arms", "job,job-uncapped", "--epochs", "3", "--rounds", "3", "--limit", "1920"]
        cnn += ["--val-limit", "1000"]
        cnn += ["--max-busy", "0.5", "--quiet-timeout", "20"]
        monitor = ["--pairs", "1000", "--rounds", "16"]  # both arms: the bare cell and the jobs users run, sliced
        ui = ["--seconds", "3", "--windows", "25", "--window-s", "2"]
        midrun = ["--at", "10,40,80", "--rounds", "3", "--epochs", "60"]
        startup = ["--rounds", "10"]
        data = ["--runs", "7"]
    scale_arms = ["--arms", "json.loads,export,export --no-screenshots,attach,minimal app"]
    scale_out = ["--write"] if update_docs else ["--out", "{out}"]
    return [
        {"name": "scale", "argv": [b + "scale.py"] + scale + scale_arms + scale_out, "minutes": 9.5},
        {"name": "startup", "argv": [b + "startup.py", "--out", "{out}"] + startup, "minutes": 1},
        {"name": "data_load", "argv": [b + "data_load.py"] + data, "minutes": 0.5},
        {
            "name": "train_throughput",
            "argv": [b + "train_throughput.py", "--json", "{out}/raw.json"] + mlp,
            "minutes": 15,
        },
        {
            "name": "train_course",
            "argv": [b + "train_throughput.py", "--json", "{out}/raw.json"] + course,
            "minutes": 2.5,
        },
        {
            "name": "monitor_overhead",
            "argv": [b + "monitor_overhead.py", "--json", "{out}/monitor.json"] + monitor,
            "minutes": 3.5,
        },
        {"name": "ui_follow", "argv": [b + "ui_load.py"] + ui, "minutes": 2.6},
        {"name": "attach_midrun", "argv": [b + "attach_midrun.py", "--out", "{out}"] + midrun, "minutes": 2.5},
        {"name": "cnn_isa_cap", "argv": [b + "train_throughput.py", "--json", "{out}/raw.json"] + cnn, "minutes": 4.5},
    ]


def unknown_options(chosen: List[Dict[str, Any]]) -> List[str]:
    """Options the driver passes that a bench's --help does not list (a bench renamed or dropped one)."""
    helps: Dict[str, str] = {}
    out = []
    for bench in chosen:
        script = bench["argv"][0]
        if script not in helps:
            done = subprocess.run(
                [PY, script, "--help"],
                cwd=str(ROOT),
                capture_output=True,
                text=True,
                env=dict(os.environ, PYTHONPATH=str(ROOT)),
            )
            helps[script] = done.stdout
        listed = set(re.findall(r"--[a-z][a-z0-9-]*", helps[script]))
        out += [
            "%s: %s" % (bench["name"], opt) for opt in bench["argv"][1:] if opt.startswith("--") and opt not in listed
        ]
    return out


def cpu_info(text: str) -> Dict[str, Any]:
    """The model name, the logical CPUs and which of FLAGS the first processor of /proc/cpuinfo lists."""
    model: Optional[str] = None
    flags: Set[str] = set()
    count = 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            count += 1
        elif key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return {"model_name": model, "logical_cpus": count, "flags": {f: f in flags for f in FLAGS}}


def commit() -> Dict[str, Any]:
    """The checkout's commit and whether its tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT)] + list(args), capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {
        "commit": git("rev-parse", "HEAD") or None,
        "subject": git("log", "-1", "--format=%s")[:120],
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def versions() -> Dict[str, Optional[str]]:
    """The installed versions of what the benches time (read from the package metadata: nothing is imported)."""
    from importlib import metadata

    out: Dict[str, Optional[str]] = {}
    for name in ("mindspore", "textual", "rich", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def loads() -> List[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_bench(bench: Dict[str, Any], out: Path) -> Dict[str, Any]:
    """Run one bench with its output under out/NAME (log: out/NAME.log); return what the summary needs."""
    folder = out / bench["name"]
    folder.mkdir(parents=True, exist_ok=True)
    argv = [PY] + [a.replace("{out}", str(folder)) for a in bench["argv"]]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log_path = out / (bench["name"] + ".log")
    row: Dict[str, Any] = {"name": bench["name"], "argv": argv, "load_before": loads(), "started": time.time()}
    print("== %s: %s (load %s)" % (bench["name"], " ".join(argv[1:]), row["load_before"]), flush=True)
    t0 = time.monotonic()
    with open(str(log_path), "wb") as log:
        log.write(("$ PYTHONPATH=%s %s\n" % (ROOT, " ".join(argv))).encode())
        log.flush()
        rc = subprocess.call(argv, cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT)
    row.update(rc=rc, seconds=round(time.monotonic() - t0, 1), load_after=loads(), log=str(log_path))
    text = log_path.read_text(encoding="utf-8", errors="replace")
    row["key_lines"] = [line for line in text.splitlines() if KEY_LINE.match(line.strip())]
    tables: List[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("|"):
            if tables and not inside:
                tables.append("")  # a blank line between two tables
            tables.append(line)
        inside = line.startswith("|")
    row["tables"] = tables
    print(
        "   rc %d in %.0f s; load after %s; log %s" % (rc, row["seconds"], row["load_after"], log_path),
        flush=True,
    )
    for line in row["key_lines"]:
        print("   " + line, flush=True)
    return row


def summary(doc: Dict[str, Any]) -> str:
    """The run as Markdown: machine, commit, each bench's status, its key lines and its tables."""
    cpu = doc["cpu"]
    out = [
        "# Bench run %s" % doc["started_utc"],
        "",
        "- CPU: %s, %d logical CPUs; %s"
        % (
            cpu["model_name"],
            cpu["logical_cpus"],
            ", ".join("%s %s" % (f, "yes" if v else "no") for f, v in cpu["flags"].items()),
        ),
        "- commit %s%s (%s)"
        % (
            doc["commit"]["commit"],
            " + uncommitted changes" if doc["commit"]["dirty"] else "",
            doc["commit"]["subject"],
        ),
        "- %s" % ", ".join("%s %s" % kv for kv in doc["versions"].items()),
        "- python %s; mode %s; load average before %s, after %s; %.1f minutes"
        % (
            doc["python"],
            "quick (not a measurement)" if doc["quick"] else "full",
            doc["load_before"],
            doc["load_after"],
            doc["seconds"] / 60,
        ),
        "",
        "| bench | rc | minutes | load before | load after |",
        "|---|---|---|---|---|",
    ]
    for r in doc["benches"]:
        out.append(
            "| %s | %s | %.1f | %s | %s |" % (r["name"], r["rc"], r["seconds"] / 60, r["load_before"], r["load_after"])
        )
    for r in doc["benches"]:
        out += ["", "## %s (rc %s)" % (r["name"], r["rc"]), "", "`%s`" % " ".join(r["argv"][1:]), ""]
        out += r["key_lines"] + [""] + r["tables"]
    return "\n".join(out) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    names = [b["name"] for b in benches(False, False)]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny parameters: checks the driver and every bench run")
    ap.add_argument("--out", default=None, help="the run's folder (default: a new scratch folder)")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ", ".join(names))
    ap.add_argument("--skip", default="", help="comma-separated benches to leave out")
    ap.add_argument("--update-docs", action="store_true", help="let scale.py write docs/scale.json and its figures")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and the expected minutes, run nothing")
    args = ap.parse_args(argv)
    wanted = [n for n in args.only.split(",") if n] or names
    unknown = sorted(set(wanted + [n for n in args.skip.split(",") if n]) - set(names))
    if unknown:
        ap.error("unknown bench(es) %s; known: %s" % (", ".join(unknown), ", ".join(names)))
    chosen = [
        b
        for b in benches(args.quick, args.update_docs)
        if b["name"] in wanted and b["name"] not in args.skip.split(",")
    ]
    wrong = unknown_options(chosen)
    if wrong:
        print("options a bench does not take (its --help does not list them): %s" % "; ".join(wrong))
        return 2
    if args.dry_run:
        for b in chosen:
            print("%-17s ~%4.1f min  %s" % (b["name"], b["minutes"], " ".join(b["argv"])))
        full = {b["name"]: b["minutes"] for b in benches(False, False)}
        print("full parameters on a quiet 2-core machine: ~%.0f minutes" % sum(full[b["name"]] for b in chosen))
        return 0
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ms-workbench-bench-all-"))
    out.mkdir(parents=True, exist_ok=True)
    with open("/proc/cpuinfo") as fh:
        cpu = cpu_info(fh.read())
    doc: Dict[str, Any] = {
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "quick": args.quick,
        "cpu": cpu,
        "commit": commit(),
        "python": sys.version.split()[0],
        "versions": versions(),
        "platform": platform.platform(),
        "load_before": loads(),
        "benches": [],
    }
    print(
        "results to %s; CPU %s (%s); commit %s; load %s"
        % (
            out,
            cpu["model_name"],
            " ".join(f for f, v in cpu["flags"].items() if v),
            doc["commit"]["commit"],
            doc["load_before"],
        ),
        flush=True,
    )
    if doc["load_before"][0] > 1.0:
        print("note: load average %.2f before the run: the machine is not quiet" % doc["load_before"][0], flush=True)
    t0 = time.monotonic()
    for bench in chosen:
        doc["benches"].append(run_bench(bench, out))
        doc["seconds"], doc["load_after"] = time.monotonic() - t0, loads()
        (out / "run.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")  # kept up to date as it goes
    doc["seconds"], doc["load_after"] = time.monotonic() - t0, loads()
    (out / "run.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    text = summary(doc)
    (out / "summary.md").write_text(text, encoding="utf-8")
    print()
    print(text)
    print("written: %s (run.json, summary.md, one log and folder per bench)" % out)
    return 0 if all(r["rc"] == 0 for r in doc["benches"]) else 1


if __name__ == "__main__":
    sys.exit(main())
