"""Read what MindSpore's profiler wrote into a summary: top operators, launches per step, host/device time.

Pure: no mindspore, no textual; Python 3.9. The files are found by name anywhere under the
profile folder, because the layout moved between releases (2.4: <out>/profiler/; 2.5 and
newer: <out>/<host>_<pid>_<time>_ascend_ms/FRAMEWORK and ASCEND_PROFILER_OUTPUT/). Sources:

- cpu_op_execute_timestamp_<id>.txt: one line per operator, "<full name>;<kind>;" then one
  "<start ns>,<duration ms>,<thread>" triple per launch (the raw record: counts and times
  come from here);
- cpu_op_detail_info_<id>.csv: MindSpore's own per-operator table (op_type per full name, and
  a cross-check of the counts);
- op_statistic*.csv (Ascend, CANN layout "OP Type, Core Type, Count, Total Time(us), ..."):
  device time by operator type;
- trace_view.json / cpu_timeline_display_*.json (Chrome trace JSON), *.db: listed as trace files.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from workbench.analysis.metrics import median

_OP_SUFFIX_RE = re.compile(r"-op\d+$")
TRACE_TOOLS = {
    "chrome-trace": "Chrome trace JSON: open in Perfetto (ui.perfetto.dev), chrome://tracing or MindStudio Insight",
    "profiler-db": "SQLite profiler database: open in MindStudio Insight",
    "csv-table": "CSV table: MindStudio Insight or a spreadsheet",
    "raw-timestamps": "MindSpore's raw CPU operator timestamps (text): read by this summary",
}


class ProfileParseError(ValueError):
    """A profiler output file is missing or not in the expected shape (the message names it)."""


def _find(root: Path, pattern: str) -> List[Path]:
    """Files under root whose name matches a glob pattern, in a stable order."""
    return sorted(p for p in root.rglob(pattern) if p.is_file())


def _num(text: str, path: Path, what: str) -> float:
    """A float from a table cell; ProfileParseError naming the file and the field otherwise."""
    try:
        return float(text)
    except (TypeError, ValueError):
        raise ProfileParseError("%s: %s is %r, expected a number" % (path, what, text))


def parse_timestamps(path: Path) -> Dict[str, Dict[str, Any]]:
    """{full op name: {kind, launches: [(start_ns, dur_ms, thread)]}} from cpu_op_execute_timestamp_*.txt."""
    ops: Dict[str, Dict[str, Any]] = {}
    with open(str(path), encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            parts = line.split(";", 2)
            if len(parts) != 3:
                raise ProfileParseError(
                    "%s line %d: expected '<name>;<kind>;<start,dur,thread> ...', got %r" % (path, number, line[:120])
                )
            name, kind, rest = parts
            entry = ops.setdefault(name, {"kind": kind, "launches": []})
            for triple in rest.split():
                fields = triple.split(",")
                if len(fields) < 2:
                    raise ProfileParseError(
                        "%s line %d: launch %r is not 'start_ns,duration_ms[,thread]'" % (path, number, triple)
                    )
                start_ns = int(_num(fields[0], path, "start (line %d)" % number))
                dur_ms = _num(fields[1], path, "duration (line %d)" % number)
                entry["launches"].append((start_ns, dur_ms, fields[2] if len(fields) > 2 else ""))
    return ops


def parse_detail_csv(path: Path) -> Dict[str, Dict[str, Any]]:
    """{full_op_name: {type, side, count, total_ms}} from cpu_op_detail_info_*.csv (columns found by header)."""
    out: Dict[str, Dict[str, Any]] = {}
    with open(str(path), encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.DictReader(fh)
        need = ("op_type", "full_op_name", "op_occurrences", "op_total_time(ms)")
        missing = [k for k in need if k not in (reader.fieldnames or [])]
        if missing:
            raise ProfileParseError(
                "%s: columns %s missing (header %s)" % (path, ", ".join(missing), reader.fieldnames)
            )
        for row in reader:
            out[row["full_op_name"]] = {
                "type": row["op_type"],
                "side": row.get("op_side"),
                "count": int(_num(row["op_occurrences"], path, "op_occurrences")),
                "total_ms": _num(row["op_total_time(ms)"], path, "op_total_time(ms)"),
            }
    return out


def parse_op_statistic(path: Path) -> List[Dict[str, Any]]:
    """[{type, core, count, total_ms}] from an Ascend op_statistic*.csv (CANN column names)."""
    rows = []
    with open(str(path), encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.DictReader(fh)
        fields = [f.strip() for f in reader.fieldnames or []]
        total_key = next((f for f in fields if f.startswith("Total Time")), None)
        if "OP Type" not in fields or "Count" not in fields or total_key is None:
            raise ProfileParseError(
                "%s: expected columns 'OP Type', 'Count', 'Total Time(us)' (header %s)" % (path, fields)
            )
        for raw in reader:
            row = {k.strip(): v for k, v in raw.items() if k is not None}
            rows.append(
                {
                    "type": row["OP Type"],
                    "core": row.get("Core Type"),
                    "count": int(_num(row["Count"], path, "Count")),
                    "total_ms": _num(row[total_key], path, total_key) / 1000.0,
                }
            )
    return rows


def short_name(full_name: str) -> str:
    """'bwd 1-Dense/MatMul-op1' for 'Gradients/Default/.../1-Dense/Grad_MatMul/MatMul-op1' (fits a table)."""
    parts = [p for p in full_name.split("/") if p]
    if not parts:
        return full_name
    op = parts[-1]
    phase = "bwd" if parts[0] == "Gradients" else "opt" if any(p.startswith("optimizer") for p in parts) else "fwd"
    module = ""
    for seg in reversed(parts[:-1]):
        if seg.startswith("Grad_") or seg in ("Default", "Gradients"):
            continue
        module = seg
        break
    if phase == "opt" or module.startswith(("network-", "_backbone-")):
        module = ""
    if module.startswith("_loss_fn"):
        module = "loss"
    return "%s %s" % (phase, module + "/" + op if module else op)


def type_of(full_name: str) -> str:
    """Operator type from a full name when no table gives it: 'MatMul' for '.../MatMul-op1'."""
    return _OP_SUFFIX_RE.sub("", full_name.rsplit("/", 1)[-1])


def _union_ms(intervals: Iterable[Tuple[int, float]]) -> float:
    """Time covered by (start_ns, dur_ms) intervals, overlaps counted once."""
    spans = sorted((s, s + int(d * 1e6)) for s, d in intervals)
    total, cur_s = 0, 0
    cur_e: Optional[int] = None
    for s, e in spans:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total / 1e6


def per_step(ops: Dict[str, Dict[str, Any]], windows_ns: Sequence[Sequence[int]]) -> Dict[str, Any]:
    """Launches, operator time, busy time and gaps per step window [(start_ns, end_ns)]."""
    launches = [(start, dur) for entry in ops.values() for start, dur, _ in entry["launches"]]
    steps = []
    inside = 0
    for start_ns, end_ns in windows_ns:
        mine = [(s, d) for s, d in launches if start_ns <= s < end_ns]
        inside += len(mine)
        wall_ms = (end_ns - start_ns) / 1e6
        busy_ms = _union_ms(mine)
        steps.append(
            {
                "ops": len(mine),
                "op_ms": sum(d for _, d in mine),
                "busy_ms": busy_ms,
                "wall_ms": wall_ms,
                "gap_ms": max(0.0, wall_ms - busy_ms),
            }
        )
    return {"steps": steps, "inside": inside, "total": len(launches)}


def trace_files(root: Path) -> List[Dict[str, Any]]:
    """Trace and table files worth opening in a tool, with the tool named."""
    found = []
    for pattern, kind in (
        ("trace_view.json", "chrome-trace"),
        ("cpu_timeline_display_*.json", "chrome-trace"),
        ("*.db", "profiler-db"),
        ("kernel_details*.csv", "csv-table"),
        ("op_statistic*.csv", "csv-table"),
        ("cpu_op_detail_info_*.csv", "csv-table"),
        ("cpu_op_execute_timestamp_*.txt", "raw-timestamps"),
    ):
        for path in _find(root, pattern):
            found.append(
                {
                    "path": os.path.relpath(str(path), str(root)),
                    "kind": kind,
                    "bytes": path.stat().st_size,
                    "opens_with": TRACE_TOOLS[kind],
                }
            )
    return found


def summarize(
    profile_dir: Path,
    steps: int,
    top_n: int = 10,
    step_windows_ns: Optional[Sequence[Sequence[int]]] = None,
    target: str = "CPU",
) -> Dict[str, Any]:
    """The profiled window's summary (see the module docstring for the files read).

    `steps` is how many training steps the window held; `step_windows_ns` (wall-clock
    time.time_ns() pairs, one per step) lets launches be counted per step rather than averaged.
    """
    root = Path(profile_dir)
    if not root.is_dir():
        raise ProfileParseError("profile folder %s does not exist" % root)
    if steps <= 0:
        raise ProfileParseError("steps is %r: a profiled window needs at least one step" % (steps,))
    stamp_files = _find(root, "cpu_op_execute_timestamp_*.txt")
    detail_files = _find(root, "cpu_op_detail_info_*.csv")
    stat_files = _find(root, "op_statistic*.csv")
    out: Dict[str, Any] = {
        "steps": int(steps),
        "target": target,
        "files_read": [],
        "trace_files": trace_files(root),
        "top_ops": [],
        "top_types": [],
        "ops_per_step": None,
        "op_launches": 0,
        "op_total_ms": None,
        "host_ms_per_step": None,
        "host_time_note": None,
        "device_ms_per_step": None,
        "device_time_note": None,
        "per_step": None,
        "consistency": None,
        "note": "",
    }
    if not stamp_files and not stat_files:
        names = sorted(os.path.relpath(str(p), str(root)) for p in root.rglob("*") if p.is_file())
        raise ProfileParseError(
            "%s: no cpu_op_execute_timestamp_*.txt nor op_statistic*.csv under it (files: %s)"
            % (root, ", ".join(names[:20]) or "none")
        )
    ops: Dict[str, Dict[str, Any]] = {}
    for path in stamp_files:
        for name, entry in parse_timestamps(path).items():
            ops.setdefault(name, {"kind": entry["kind"], "launches": []})["launches"].extend(entry["launches"])
        out["files_read"].append(os.path.relpath(str(path), str(root)))
    detail: Dict[str, Dict[str, Any]] = {}
    for path in detail_files:
        detail.update(parse_detail_csv(path))
        out["files_read"].append(os.path.relpath(str(path), str(root)))
    if ops:
        _host_ops(out, ops, detail, steps, top_n, step_windows_ns)
    if stat_files:
        _device_ops(out, root, stat_files, steps, top_n)
    elif target == "CPU":
        out["device_time_note"] = (
            "CPU target: every operator runs on the host (MindSpore marks them %s), so there "
            "is no separate device time" % ", ".join(sorted({e["kind"] for e in ops.values()}))
        )
    else:
        out["device_time_note"] = "no op_statistic*.csv in the profiler output: device time not available"
    out["note"] = "%d steps profiled; %s operator launches%s" % (
        steps,
        out["op_launches"],
        "" if out["ops_per_step"] is None else ", %.1f per step" % out["ops_per_step"],
    )
    return out


def _host_ops(
    out: Dict[str, Any],
    ops: Dict[str, Dict[str, Any]],
    detail: Dict[str, Dict[str, Any]],
    steps: int,
    top_n: int,
    windows: Optional[Sequence[Sequence[int]]],
) -> None:
    """Fill the host-side figures from the raw launches (types and a count cross-check from the detail table)."""
    rows = []
    for name, entry in ops.items():
        durs = [d for _, d, _ in entry["launches"]]
        rows.append(
            {
                "name": short_name(name),
                "full_name": name,
                "type": detail.get(name, {}).get("type") or type_of(name),
                "kind": entry["kind"],
                "count": len(durs),
                "total_ms": sum(durs),
                "mean_us": 1000.0 * sum(durs) / len(durs) if durs else None,
            }
        )
    total_ms = sum(r["total_ms"] for r in rows)
    for r in rows:
        r["share"] = r["total_ms"] / total_ms if total_ms > 0 else None
    rows.sort(key=lambda r: (-r["total_ms"], r["full_name"]))
    out["top_ops"] = rows[:top_n]
    types: Dict[str, Dict[str, Any]] = {}
    for r in rows:
        t = types.setdefault(r["type"], {"type": r["type"], "count": 0, "total_ms": 0.0, "instances": 0})
        t["count"] += r["count"]
        t["total_ms"] += r["total_ms"]
        t["instances"] += 1
    for t in types.values():
        t["per_step"] = t["count"] / float(steps)
        t["mean_us"] = 1000.0 * t["total_ms"] / t["count"] if t["count"] else None
        t["share"] = t["total_ms"] / total_ms if total_ms > 0 else None
    out["top_types"] = sorted(types.values(), key=lambda t: (-t["total_ms"], t["type"]))[:top_n]
    launches = sum(r["count"] for r in rows)
    out.update(op_launches=launches, op_total_ms=total_ms, ops_per_step=launches / float(steps), operators=len(rows))
    if detail:
        differ = [n for n, r in ((r["full_name"], r) for r in rows) if n in detail and detail[n]["count"] != r["count"]]
        out["consistency"] = {
            "detail_ops": len(detail),
            "timestamp_ops": len(rows),
            "count_mismatches": differ[:10],
            "ok": not differ and set(detail) == {r["full_name"] for r in rows},
        }
    out["host_ms_per_step"] = total_ms / float(steps)
    out["host_time_note"] = (
        "operator execution time on the host per step (sum of launch durations / %d steps); "
        "the rest of a step is framework, Python and feeding" % steps
    )
    if windows:
        found = per_step(ops, windows)
        share_inside = found["inside"] / float(found["total"]) if found["total"] else 0.0
        if share_inside < 0.9:
            out["per_step"] = {
                "usable": False,
                "inside": found["inside"],
                "total": found["total"],
                "why": "only %d of %d launches fall inside the job's step windows: the clocks do not "
                "line up, so launches are averaged over the steps instead" % (found["inside"], found["total"]),
            }
        else:
            st = found["steps"]
            out["per_step"] = {
                "usable": True,
                "inside": found["inside"],
                "total": found["total"],
                "ops": [s["ops"] for s in st],
                "median_ops": median([s["ops"] for s in st]),
                "median_op_ms": median([s["op_ms"] for s in st]),
                "median_busy_ms": median([s["busy_ms"] for s in st]),
                "median_wall_ms": median([s["wall_ms"] for s in st]),
                "median_gap_ms": median([s["gap_ms"] for s in st]),
                "rule": "launches assigned to the step whose wall-clock window holds their start; busy = union of "
                "launch intervals; gap = wall - busy (framework, Python, feeding, launch overhead)",
            }
            out["host_ms_per_step"] = out["per_step"]["median_op_ms"]
            out["host_time_note"] = (
                "median over the %d steps of the operators' execution time on the host; "
                "median step wall %.2f ms, of which %.2f ms had no operator running"
                % (len(st), out["per_step"]["median_wall_ms"], out["per_step"]["median_gap_ms"])
            )


def _device_ops(out: Dict[str, Any], root: Path, stat_files: List[Path], steps: int, top_n: int) -> None:
    """Device time by operator type from Ascend op_statistic*.csv."""
    rows: List[Dict[str, Any]] = []
    for path in stat_files:
        rows.extend(parse_op_statistic(path))
        out["files_read"].append(os.path.relpath(str(path), str(root)))
    total_ms = sum(r["total_ms"] for r in rows)
    device_types = []
    for r in sorted(rows, key=lambda r: -r["total_ms"]):
        device_types.append(
            {
                "type": r["type"],
                "core": r["core"],
                "count": r["count"],
                "total_ms": r["total_ms"],
                "mean_us": 1000.0 * r["total_ms"] / r["count"] if r["count"] else None,
                "per_step": r["count"] / float(steps),
                "share": r["total_ms"] / total_ms if total_ms > 0 else None,
            }
        )
    out["device_types"] = device_types[:top_n]
    out["device_ms_per_step"] = total_ms / float(steps)
    out["device_time_note"] = (
        "sum of device operator time in %s / %d steps (kernels may overlap host work; do not "
        "add it to the host figure)" % (", ".join(out["files_read"][-len(stat_files) :]), steps)
    )
    if not out["top_ops"]:
        out["top_ops"] = [
            {
                "name": t["type"],
                "full_name": t["type"],
                "type": t["core"] or "",
                "count": t["count"],
                "total_ms": t["total_ms"],
                "mean_us": t["mean_us"],
                "share": t["share"],
            }
            for t in device_types[:top_n]
        ]
        launches = sum(r["count"] for r in rows)
        out.update(op_launches=launches, op_total_ms=total_ms, ops_per_step=launches / float(steps))
