"""Performance rows of the record (one per perf event) and the data-parallel record of a training run."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.events.protocol import Evidence
from workbench.record.ranks import parallel_summary

HOST_RSS_MEANS = "peak resident set size of the job's host process (all host memory it touched, not the device's)"
DEVICE_MEM_MEANS = "peak device memory the framework reported for the job; null means it was not measured"


def parallel_record(j: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Data-parallel settings of a training run, the ranks that wrote steps and the weights check; None for one process."""
    par = (j["config"].get("train") or {}).get("parallel") or {}
    if int(par.get("workers") or 1) <= 1:
        return None
    checks = [c for c in j["checks"] if c.get("id") == "weights-identical"]
    rec = {
        "settings": {k: par.get(k) for k in ("workers", "local_workers", "master_addr", "master_port", "node_rank")},
        "launcher": "msrun",
        "ranks_seen": j["step_curve"]["ranks"],
        "weights_identical": checks[-1]["status"] if checks else Evidence.NOT_RUN,
        "batch_per_rank": (j["config"].get("train") or {}).get("batch_size"),
    }
    rec.update(parallel_summary(j["config"], j["perf"], j["result"] if isinstance(j["result"], dict) else None) or {})
    return rec


def _batch_size(j: Dict[str, Any], perf: Dict[str, Any]) -> Any:
    for value in (
        perf.get("batch_size"),
        (perf.get("steady") or {}).get("batch_size"),
        (j["config"].get("train") or {}).get("batch_size") if j["kind"] == "train" else None,
    ):
        if value is not None:
            return value
    sizes = j["step_curve"]["sizes"]  # most common first (workbench.fold.steptable)
    return sizes[0] if sizes else None


REPEATS_CHECK = "perf-repeats"  # the train job's timing repeats (perf.repeats), one check with every repeat


def _add_repeats(row: Dict[str, Any], checks: List[Dict[str, Any]]) -> None:
    """The run-to-run spread of a run row, from the job's timing-repeats check when it passed."""
    found = [c for c in checks if c.get("id") == REPEATS_CHECK and c.get("status") == Evidence.PASS]
    ev = found[-1].get("evidence") if found else None
    if not isinstance(ev, dict) or not isinstance(ev.get("per_repeat"), list):
        return
    row["repeats"] = [r for r in ev["per_repeat"] if isinstance(r, dict)]
    row["repeat_summary"] = {
        k: ev.get(k)
        for k in (
            "median_ms",
            "min_ms",
            "max_ms",
            "iqr_ms",
            "spread_pct",
            "images_per_s_median",
            "images_per_s_rule",
            "steps_per_repeat",
        )
    }
    loads = [
        r["loadavg_1_5_15"][0]
        for r in row["repeats"]
        if isinstance(r.get("loadavg_1_5_15"), list)
        and r["loadavg_1_5_15"]
        and isinstance(r["loadavg_1_5_15"][0], (int, float))
    ]
    if loads and not row.get("host_load"):
        row["host_load"] = "1-min load average %.2f to %.2f at the repeats' starts" % (min(loads), max(loads))


def performance_rows(jobs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per perf event: compile time, steady median/P95, images/s, batch, warm-up, sync, memory."""
    rows = []
    for j in jobs:
        for perf in j["perf"]:
            steady = perf.get("steady") or {}
            scope = perf.get("scope") or "run"
            if perf.get("epoch") is not None:
                scope = "%s %s" % (scope, perf["epoch"])
            if perf.get("rank") is not None:
                scope = "rank %s %s" % (perf["rank"], scope)
            rows.append(
                {
                    "jid": j["jid"],
                    "kind": j["kind"],
                    "device": j["device"].get("resolved"),
                    "rank": perf.get("rank"),
                    "scope": scope,
                    "recompile": perf.get("recompile"),
                    "timing_rule": perf.get("timing_rule"),
                    "first_step_s": perf.get("first_step_s"),
                    "warmup_steps": perf.get("warmup_steps"),
                    "steady_n": steady.get("n"),
                    "median_ms": steady.get("median_ms"),
                    "p95_ms": steady.get("p95_ms"),
                    "images_per_s": steady.get("images_per_s"),
                    "batch_size": _batch_size(j, perf),
                    "sync": perf.get("sync"),
                    "peak_host_rss_mb": perf.get("peak_host_rss_mb"),
                    "peak_device_mb": perf.get("peak_device_mb"),
                    "host_rss_measures": perf.get("host_rss_measures") or HOST_RSS_MEANS,
                    "device_memory_measures": (
                        perf.get("device_memory_note") or perf.get("device_memory_measures") or DEVICE_MEM_MEANS
                    ),
                    "rules": {k: v for k, v in steady.items() if k.endswith("_rule")},
                    "epoch": perf.get("epoch"),
                    "repeats": None,
                    "host_load": perf.get("host_load"),
                }
            )
            if perf.get("epoch") is None and perf.get("rank") in (None, 0):
                _add_repeats(rows[-1], j["checks"])
    for row in rows:  # a run's spread across its epochs, for the summary (one run: not run-to-run variation)
        if row["epoch"] is None:
            row["epoch_medians_ms"] = [
                r["median_ms"]
                for r in rows
                if r["jid"] == row["jid"]
                and r["rank"] == row["rank"]
                and r["epoch"] is not None
                and isinstance(r["median_ms"], (int, float))
            ]
    return rows
