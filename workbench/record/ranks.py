"""The session record's data-parallel lines: every rank's throughput, the effective batch, the parity caveat."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from workbench.render import (
    humanize as h,  # The last measured run of bench/parallel_parity.py (docs/PERFORMANCE.md, "Data-parallel parity").
)

# Update it with every run of the bench: the record repeats the caveat while goal_met is not True.
PARITY_BENCH: Dict[str, Any] = {
    "goal_met": True,
    "measured": "2026-12-01, k=5 seeds x 3 epochs, largest |mean difference| 0.0013 against a single-process sd of "
    "0.0033 (macro-F1, epoch 3)",
    "rule": "mean difference (2 ranks × batch 32 − 1 process × batch 64) of validation accuracy and macro-F1 "
    "within one standard deviation of single-process seed-to-seed spread at every epoch",
    "where": "docs/PERFORMANCE.md#data-parallel-parity",
}


def parity_caveat(bench: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """None when the parity bench met its goal; otherwise the sentence the record shows."""
    bench = PARITY_BENCH if bench is None else bench
    if bench.get("goal_met") is True:
        return None
    how = "has not met its goal" if bench.get("goal_met") is False else "has not been run"
    return (
        "data-parallel parity bench %s (%s): learning with several ranks may differ from one process "
        "beyond seed-to-seed spread; see %s" % (how, bench.get("measured"), bench.get("where"))
    )


def _steady(perf: Dict[str, Any]) -> Dict[str, Any]:
    steady = perf.get("steady") or {}
    return {"images_per_s": steady.get("images_per_s"), "median_ms": steady.get("median_ms"), "steps": steady.get("n")}


def rank_throughput(
    perf_events: Iterable[Dict[str, Any]], gathered: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """One row per rank: steady images/s and median step of its whole run.

    From this job's own `perf` events (scope "run") where the rank wrote into this job folder, and
    from `gathered` (rank 0's result: every rank's numbers, collected over the cluster) for ranks
    that ran on other nodes.
    """
    rows: Dict[int, Dict[str, Any]] = {}
    for perf in perf_events:
        rank = perf.get("rank")
        if isinstance(rank, int) and perf.get("scope") == "run":
            rows[rank] = dict(_steady(perf), rank=rank, source="perf event in this job")
    for entry in gathered or []:
        rank = entry.get("rank")
        if isinstance(rank, int) and rank not in rows:
            rows[rank] = {
                "rank": rank,
                "images_per_s": entry.get("images_per_s"),
                "median_ms": entry.get("median_ms"),
                "steps": entry.get("steps"),
                "source": "collected by rank 0 over the cluster",
            }
    return [rows[r] for r in sorted(rows)]


def parallel_summary(
    cfg: Dict[str, Any], perf_events: Iterable[Dict[str, Any]], result: Optional[Dict[str, Any]] = None
) -> Optional[Dict[str, Any]]:
    """Effective batch, per-rank throughput and the parity caveat of a data-parallel run; None for one process."""
    train = cfg.get("train") or {}
    par = train.get("parallel") or {}
    workers = int(par.get("workers") or 1)
    if workers <= 1:
        return None
    result = result or {}
    summary = result.get("parallel") or {}
    # Rank 0's result gathers every rank's numbers; a node without rank 0 has its own ranks' only.
    ranks = rank_throughput(perf_events, summary.get("ranks") or result.get("ranks"))
    places = summary.get("places") or result.get("places") or []
    rates = [r["images_per_s"] for r in ranks if isinstance(r.get("images_per_s"), (int, float))]
    return {
        "effective_batch": workers * int(train.get("batch_size") or 0),
        "effective_batch_rule": "train.parallel.workers × train.batch_size images per optimizer step",
        "ranks": ranks,
        "ranks_missing": [r for r in range(workers) if r not in {row["rank"] for row in ranks}],
        "images_per_s_all_ranks": sum(rates) if len(rates) == workers else None,
        "ranks_here": result.get("ranks_here"),
        "rank0_job": result.get("rank0_job") or (places[0] if places else None),
        "parity_caveat": parity_caveat(),
    }


def parallel_block(par: Dict[str, Any], heading: str = "####") -> List[str]:
    """Markdown lines for a run's data-parallel record (the dict parallel_record builds)."""
    settings = par.get("settings") or {}
    lines = [
        "%s Data-parallel" % heading,
        "",
        "%s workers (%s on this node, node %s), master %s:%s; effective batch **%s** (%s)."
        % (
            settings.get("workers"),
            settings.get("local_workers") or settings.get("workers"),
            settings.get("node_rank"),
            settings.get("master_addr"),
            settings.get("master_port"),
            par.get("effective_batch"),
            par.get("effective_batch_rule"),
        ),
        "",
    ]
    ranks = par.get("ranks") or []
    if ranks:
        lines += ["| rank | steady images/s | median step | steady steps | from |", "|---|---|---|---|---|"]
        lines += [
            "| %s | %s | %s | %s | %s |"
            % (r["rank"], h.rate(r.get("images_per_s")), h.ms(r.get("median_ms")), r.get("steps", "-"), r.get("source"))
            for r in ranks
        ]
        lines.append("")
    if par.get("images_per_s_all_ranks") is not None:
        lines += ["All ranks together: %s." % h.rate(par["images_per_s_all_ranks"]), ""]
    if par.get("ranks_missing"):
        lines += ["No throughput recorded for ranks %s." % ", ".join(map(str, par["ranks_missing"])), ""]
    where = par.get("rank0_job") or {}
    if par.get("ranks_here"):
        lines += [
            "Ranks %s ran in this job; rank 0's job (validation, checkpoints, weights check): %s/%s on %s, %s."
            % (par["ranks_here"], where.get("session"), where.get("jid"), where.get("host"), where.get("dir")),
            "",
        ]
    if par.get("parity_caveat"):
        lines += ["Caveat: %s." % par["parity_caveat"], ""]
    return lines
