"""The performance row of the acceptance: steady throughput and step time against their thresholds, with conditions.

The figure is the training run's steady window (steps after the compile step and the warm-up, at the job's sync
boundary): throughput = Σ images / Σ wall time of those steps, step time = their median. It is judged on the
target device only; a CPU target's figure is judged and labelled as a CPU figure, never a device claim.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.events.protocol import Evidence
from workbench.fold.record import JobRecord
from workbench.fold.series import number

NOT_REQUIRED = "not-required"  # a layer with no threshold set: shown, never counted in the overall verdict
THROUGHPUT_MEANS = "steady throughput = Σ images / Σ wall time of the steady steps (after compile and warm-up)"
STEP_TIME_MEANS = "steady step time = median wall time of one steady step"
CPU_FIGURE = "a CPU figure, not a device claim"
KEYS = ("min_steady_images_per_s", "max_steady_median_ms")


def run_perf(rec: JobRecord) -> Dict[str, Any]:
    """The main rank's whole-run perf line (scope run) of a training job, else its latest perf line."""
    runs = [p for p in rec.perf if p.get("scope") == "run" and p.get("rank") in (None, 0)]
    return runs[-1] if runs else (rec.main_perf or {})


def repeats_of(rec: JobRecord) -> Optional[Dict[str, Any]]:
    """The run's timing repeats (check perf-repeats) when they passed: count, spread and their median figure."""
    ev = rec.checks.get("perf-repeats") or {}
    evidence = ev["evidence"] if isinstance(ev.get("evidence"), dict) else {}
    if ev.get("status") != Evidence.PASS or not isinstance(evidence.get("per_repeat"), list):
        return None
    return evidence


def conditions(rec: JobRecord, perf: Dict[str, Any]) -> Dict[str, Any]:
    """What the figure was measured under: batch size, precision, mode, warm-up steps, sync boundary, repeats."""
    train = rec.config["train"] if isinstance(rec.config.get("train"), dict) else {}
    steady = perf["steady"] if isinstance(perf.get("steady"), dict) else {}
    reps = repeats_of(rec)
    return {
        "batch_size": perf.get("batch_size") or train.get("batch_size"),
        "precision": perf.get("precision") or train.get("precision"),
        "mode": perf.get("mode") or train.get("mode"),
        "warmup_steps": perf.get("warmup_steps"),
        "steady_steps": steady.get("n"),
        "sync": perf.get("sync"),
        "repeats": reps.get("repeats") if reps else 1,
        "repeat_spread_pct": reps.get("spread_pct") if reps else None,
    }


def conditions_text(cond: Dict[str, Any]) -> str:
    """'batch 64, fp32, graph, 2 warm-up steps, 832 steady steps, sync loss.asnumpy() every step, 3 repeats (spread 4%)'."""
    reps = cond.get("repeats") or 1
    spread = cond.get("repeat_spread_pct")
    return "batch %s, %s, %s mode, %s warm-up steps, %s steady steps, sync %s, %s" % (
        cond.get("batch_size") or "?",
        cond.get("precision") or "?",
        cond.get("mode") or "?",
        cond.get("warmup_steps") if cond.get("warmup_steps") is not None else "?",
        cond.get("steady_steps") if cond.get("steady_steps") is not None else "?",
        cond.get("sync") or "not recorded",
        "timed once (run-to-run spread not measured)"
        if reps <= 1
        else "%d repeats (spread %s)" % (reps, "%.0f%%" % spread if isinstance(spread, (int, float)) else "?"),
    )


def _row(jid: Optional[str], check: str, level: str, device: Optional[str], value: Any, threshold: Any, detail: str):
    return {
        "job": jid,
        "check": check,
        "level": level,
        "device": device,
        "value": value,
        "threshold": threshold,
        "detail": detail,
    }


def performance_rows(rec: Optional[JobRecord], cfg: Dict[str, Any], target: str, device: str) -> List[Dict[str, Any]]:
    """One row per threshold (throughput, step time): observed-pass/fail, not-run without a figure, not-required
    when the threshold is unset (its measured figure still shown)."""
    minimum = number(cfg.get("min_steady_images_per_s")) or 0
    maximum = number(cfg.get("max_steady_median_ms")) or 0
    perf = run_perf(rec) if rec is not None else {}
    steady = perf["steady"] if isinstance(perf.get("steady"), dict) else {}
    cond = conditions(rec, perf) if rec is not None else {}
    where = (" (%s)" % CPU_FIGURE) if device.upper() == "CPU" else ""
    said = ("; conditions: %s" % conditions_text(cond)) if rec is not None else ""
    rows = []
    for check, bound, key, value, unit, means in (
        (
            "steady-throughput",
            minimum,
            "min_steady_images_per_s",
            number(steady.get("images_per_s")),
            "images/s",
            THROUGHPUT_MEANS,
        ),
        (
            "steady-step-time",
            maximum,
            "max_steady_median_ms",
            number(steady.get("median_ms")),
            "ms",
            STEP_TIME_MEANS,
        ),
    ):
        jid = rec.jid if rec is not None else None
        if value is None:
            level = NOT_REQUIRED if bound <= 0 else Evidence.NOT_RUN
            rows.append(_row(jid, check, level, device or None, None, None, "no steady window measured (%s)" % means))
            continue
        shown = "%.1f %s on %s%s" % (value, unit, device or "?", where)
        if bound <= 0:
            rows.append(
                _row(
                    jid,
                    check,
                    NOT_REQUIRED,
                    device or None,
                    value,
                    None,
                    "not required (acceptance.%s unset): measured %s; %s%s" % (key, shown, means, said),
                )
            )
            continue
        ok = value >= bound if check == "steady-throughput" else value <= bound
        rows.append(
            _row(
                jid,
                check,
                Evidence.PASS if ok else Evidence.FAIL,
                device or None,
                value,
                "%s %g %s" % (">=" if check == "steady-throughput" else "<=", bound, unit),
                "measured %s %s threshold %g %s; %s%s" % (shown, "meets" if ok else "misses", bound, unit, means, said),
            )
        )
    return rows
