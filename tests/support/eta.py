"""Replay a recorded training run event by event and judge an ETA at each epoch boundary against the real end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from workbench.analysis.metrics import upper_median
from workbench.fold.record import JobRecord

Estimator = Callable[[JobRecord], Optional[float]]


def read_events(path: Path) -> List[Dict[str, Any]]:
    """A recorded events.jsonl, parsed."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def run_config(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The config keys the ETA reads, as the run's `started` event and perf-repeats check recorded them."""
    started = next(e for e in events if e["type"] == "started")
    repeats = next((e for e in events if e["type"] == "check" and e.get("id") == "perf-repeats"), {})
    evidence = repeats.get("evidence") or {}
    return {
        "train": {"epochs": started["epochs"], "parallel": {"workers": 1}},
        "perf": {"repeats": evidence.get("repeats", 1), "repeat_steps": evidence.get("steps_per_repeat", 1)},
    }


def boundaries(events: List[Dict[str, Any]], estimate: Estimator) -> List[Dict[str, float]]:
    """At each main-rank epoch event but the last: the estimate just before and just after it, as predicted end
    times, against the job's real end (its `finished` event).

    move: how far the predicted end moved across the event; error: predicted end less the real end; both as a
    share of the real time left after the event.
    """
    record = JobRecord("train-001", "train", config=run_config(events))
    end = next(e["t"] for e in events if e["type"] == "finished")
    last_epoch = max(e["epoch"] for e in events if e["type"] == "epoch")
    rows, before = [], None
    for ev in events:
        record.ingest([ev])
        eta = estimate(record)
        now = record.last_t
        predicted = None if eta is None or now is None else now + eta
        if ev["type"] == "epoch" and ev["epoch"] < last_epoch:
            left = end - ev["t"]
            rows.append(
                {
                    "epoch": ev["epoch"],
                    "left_s": left,
                    "before_s": float("nan") if before is None else before - ev["t"],
                    "after_s": float("nan") if predicted is None else predicted - ev["t"],
                    "move": float("inf") if None in (before, predicted) else abs(predicted - before) / left,
                    "error": float("inf") if predicted is None else (predicted - end) / left,
                }
            )
        before = predicted
    return rows


def previous_eta(record: JobRecord) -> Optional[float]:
    """The estimate the Training screen showed before: steps left at the median of the recent steady step
    times, plus per epoch left the mean of each ended epoch's time less its steps at that median."""
    done, total = record.progress.get("done"), record.progress.get("total")
    step_ms = upper_median(record.steps.step_ms)
    if type(done) is not int or type(total) is not int or step_ms is None:
        return None
    left = max(0, total - done) * step_ms / 1000.0
    epochs = (record.config.get("train") or {}).get("epochs")
    per_epoch = total / float(epochs)
    spent = [e["epoch_s"] - per_epoch * step_ms / 1000.0 for e in record.epochs]
    if spent:
        left += max(0, epochs - len(record.epochs)) * max(0.0, sum(spent) / len(spent))
    return left
