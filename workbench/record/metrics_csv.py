"""The metrics/ CSV files of the record: per step, per epoch and per class."""

from __future__ import annotations

import csv
import io
from typing import Any, Dict, List, Sequence

STEPS_HEADER = ("job", "epoch", "step", "loss", "step_ms", "batch_size", "rank", "phase")
EPOCHS_HEADER = ("job", "epoch", "train_loss", "samples", "val_accuracy", "val_macro_f1", "epoch_s", "is_best")
DEVICE_HEADER = (
    "job",
    "t",
    "npu",
    "chip",
    "ai_core_pct",
    "mem_used_mb",
    "mem_total_mb",
    "temp_c",
    "power_w",
    "card_power_w",
    "health",
    "sample",
    "kept_every",
)
PER_CLASS_HEADER = ("job", "epoch", "label", "class", "precision", "recall", "f1", "support")


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


def steps_csv(jobs: List[Dict[str, Any]]) -> str:
    """Every step event of every job."""
    rows: List[Sequence[Any]] = []
    for j in jobs:
        s = j["steps"]
        for i in range(len(s["step"])):
            rows.append(
                (
                    j["jid"],
                    s["epoch"][i],
                    s["step"][i],
                    s["loss"][i],
                    s["step_ms"][i],
                    s["batch_size"][i],
                    s["rank"][i],
                    s["phase"][i],
                )
            )
    return _csv(STEPS_HEADER, rows)


def epochs_csv(jobs: List[Dict[str, Any]]) -> str:
    """Every epoch event of every job."""
    rows: List[Sequence[Any]] = []
    for j in jobs:
        for e in j["epochs"]:
            val = e.get("val") or {}
            rows.append(
                (
                    j["jid"],
                    e.get("epoch"),
                    e.get("train_loss"),
                    e.get("samples"),
                    val.get("accuracy"),
                    val.get("macro_f1"),
                    e.get("epoch_s"),
                    bool(e.get("is_best")),
                )
            )
    return _csv(EPOCHS_HEADER, rows)


def per_class_csv(jobs: List[Dict[str, Any]], class_names: Sequence[str]) -> str:
    """Per-class validation metrics of every epoch, and of every test evaluation (epoch 'test')."""
    rows: List[Sequence[Any]] = []

    def add(jid: str, epoch: Any, per_class: Any) -> None:
        for label, c in enumerate(per_class or []):
            if isinstance(c, dict):
                rows.append(
                    (
                        jid,
                        epoch,
                        label,
                        class_names[label] if label < len(class_names) else "",
                        c.get("precision"),
                        c.get("recall"),
                        c.get("f1"),
                        c.get("support"),
                    )
                )

    for j in jobs:
        for e in j["epochs"]:
            add(j["jid"], e.get("epoch"), (e.get("val") or {}).get("per_class"))
        if j["kind"] == "test" and isinstance(j["result"], dict):
            add(j["jid"], "test", j["result"].get("per_class"))
    return _csv(PER_CLASS_HEADER, rows)


def device_csv(jobs: List[Dict[str, Any]]) -> str:
    """The live device samples (npu-smi, the train job's own chip) of every job: a long run's are thinned.

    `sample` numbers the job's samples from 0; `kept_every` k says the rows are every k-th sample of
    the run (1: all of them), plus its last one.
    """
    rows = [
        (j["jid"],) + tuple(d.get(k) for k in DEVICE_HEADER[1:-1]) + (j.get("device_every") or 1,)
        for j in jobs
        for d in j.get("device_samples") or []
    ]
    return _csv(DEVICE_HEADER, rows)
