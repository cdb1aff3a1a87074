"""The reference set: fixed samples, the logits this job computes for them in memory, and its package."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from jobs.export.common import EXPORT_MODE, TOLERANCE, fmt
from jobs.export.loader.report import npy_bytes
from jobs.export.pool import validation_pool
from jobs.export.source import SourceNet
from jobs.export.state import ExportRun
from workbench.analysis.tensordiff import MATCH_RULE
from workbench.events.protocol import Evidence
from workbench.system.atomic import sha256_file, write_bytes, write_json

CONFUSED_PAIRS = 3  # most-confused (true, predicted) class pairs added to the reference samples
PREPROCESSING = "/255, float32, NCHW [N,1,28,28]"
REFERENCE_FORMAT = "ms-workbench reference v1"
# Accuracy of the exported weights on the training job's validation selection vs best.json:
# equal up to a few argmax flips from a different batch shape (fp32), looser after fp16 training.
ACCURACY_TOLERANCE = {"fp32": 0.002, "other": 0.01}


class ReferenceSet:
    """The reference inputs and in-memory logits, the package describing them, and where the inputs are on disk."""

    def __init__(
        self, inputs: np.ndarray, logits: np.ndarray, package: Dict[str, Any], pair_records: List[Dict[str, Any]]
    ):
        self.inputs = inputs
        self.logits = logits
        self.package = package  # reference.json
        self.pair_records = pair_records
        self.inputs_path: Optional[Path] = None  # the file the loaders read
        self.written = False  # the package was handed over (artifacts/reference/)


def find_confusion(best: Optional[Dict[str, Any]]) -> Optional[List[List[int]]]:
    """The validation confusion matrix (rows = true) recorded in best.json, if any."""
    if not best:
        return None
    for holder in (best.get("val"), (best.get("metrics") or {}).get("val"), best.get("metrics")):
        if isinstance(holder, dict) and isinstance(holder.get("confusion"), list):
            return holder["confusion"]
    return None


def choose_samples(
    labels: np.ndarray,
    pred: Optional[np.ndarray],
    per_class: int,
    pairs: Sequence[Tuple[int, int, int]],
    n_classes: int = 10,
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Fixed reference samples: the first `per_class` of every class (pool order), then for each
    confused pair (true, pred, count) the first other sample of class `true` predicted `pred`.

    Returns (samples with pool position and role, one record per pair saying which sample or none).
    """
    labels = np.asarray(labels)
    chosen: List[Dict[str, Any]] = []
    used = set()
    for cls in range(n_classes):
        for pos in np.flatnonzero(labels == cls)[:per_class]:
            chosen.append({"pos": int(pos), "role": "class", "label": cls})
            used.add(int(pos))
    records = []
    for true_cls, pred_cls, count in pairs:
        record = {"true": int(true_cls), "pred": int(pred_cls), "count": int(count), "row": None}
        if pred is not None:
            hits = [
                int(p)
                for p in np.flatnonzero((labels == true_cls) & (np.asarray(pred) == pred_cls))
                if int(p) not in used
            ]
            if hits:
                record["row"] = len(chosen)
                chosen.append(
                    {"pos": hits[0], "role": "confused", "label": int(true_cls), "pair": [int(true_cls), int(pred_cls)]}
                )
                used.add(hits[0])
        records.append(record)
    return chosen, records


def build_reference(run: ExportRun, loaded: SourceNet) -> ReferenceSet:
    """Pick the fixed samples and compute their logits in memory (the package is written later)."""
    import mindspore as ms
    from mindspore import Tensor

    from jobs.common.models import predict
    from workbench.analysis.metrics import most_confused_pairs
    from workbench.data.dataset import CLASS_NAMES, scale

    pool = validation_pool(run, loaded.source)
    t0 = time.perf_counter()
    pred = predict(loaded.net, scale(pool["images"]), 1000) if loaded.source.kind != "fresh-init" else None
    run.timing_s["predict_val_s"] = time.perf_counter() - t0
    if pred is not None:
        metrics_check(run, loaded, pool, pred)
    confusion = find_confusion(loaded.source.best)
    pairs = most_confused_pairs(confusion, CONFUSED_PAIRS) if confusion is not None else []
    per_class = run.export.samples_per_class
    chosen, pair_records = choose_samples(pool["labels"], pred, per_class, pairs, len(CLASS_NAMES))
    positions = np.array([c["pos"] for c in chosen], dtype=np.int64)
    inputs = scale(pool["images"][positions])
    t0 = time.perf_counter()
    logits = loaded.net(Tensor(inputs)).asnumpy().astype(np.float32)
    run.timing_s["reference_forward_s"] = time.perf_counter() - t0
    predicted = logits.argmax(axis=1)
    samples = []
    for row, c in enumerate(chosen):
        entry = {
            "row": row,
            "index": int(pool["indices"][c["pos"]]),
            "label": int(c["label"]),
            "class": CLASS_NAMES[int(c["label"])],
            "predicted": int(predicted[row]),
            "role": c["role"],
        }
        if "pair" in c:
            entry["pair"] = c["pair"]
        samples.append(entry)
    package = {
        "format": REFERENCE_FORMAT,
        "created_by": {"job": run.ctx.meta.get("jid"), "session": run.ctx.meta.get("session")},
        "source": loaded.source.describe(),
        "model": loaded.model,
        "preprocessing": PREPROCESSING,
        "class_names": list(CLASS_NAMES),
        "tolerance": {"atol": TOLERANCE.atol, "rtol": TOLERANCE.rtol, "rule": MATCH_RULE, "dtype": "float32"},
        "inputs": {"file": "inputs.npy", "dtype": "float32", "shape": list(inputs.shape)},
        "logits": {
            "file": "logits.npy",
            "dtype": "float32",
            "shape": list(logits.shape),
            "computed_by": "the export job in memory: %s, %s mode, set_train(False), one batch of %d"
            % (run.target, EXPORT_MODE, len(samples)),
        },
        "samples_per_class": per_class,
        "classes_covered": sorted({s["label"] for s in samples}),
        "confused_pairs": [
            dict(r, true_class=CLASS_NAMES[r["true"]], pred_class=CLASS_NAMES[r["pred"]]) for r in pair_records
        ],
        "confused_pairs_from": "best.json val.confusion" if confusion is not None else None,
        "samples": samples,
        "data": pool["data"],
        "mindspore": ms.__version__,
        "device": {"target": run.target, "id": run.device_id},
    }
    return ReferenceSet(inputs, logits, package, pair_records)


def metrics_check(run: ExportRun, loaded: SourceNet, pool: Dict[str, Any], pred: np.ndarray) -> None:
    """The loaded weights score what best.json says on the training run's validation selection."""
    from workbench.analysis.metrics import classification_report, confusion_matrix

    best_val = (loaded.source.best or {}).get("val") or {}
    limit = pool["val_limit"]
    labels = pool["labels"][:limit] if limit else pool["labels"]
    ours = pred[:limit] if limit else pred
    report = classification_report(confusion_matrix(labels, ours, 10))
    accuracy = float(np.mean(labels == ours)) if labels.size else None
    tol = ACCURACY_TOLERANCE["fp32" if loaded.train_precision == "fp32" else "other"]
    evidence = {
        "accuracy": accuracy,
        "macro_f1": report.get("macro_f1"),
        "samples": int(labels.size),
        "recorded": {k: best_val.get(k) for k in ("accuracy", "macro_f1", "samples")},
        "tolerance": tol,
        "train_precision": loaded.train_precision,
    }
    title = "weights score as recorded"
    if best_val.get("accuracy") is None:
        run.check(
            "source-metrics",
            title,
            Evidence.NOT_RUN,
            "no validation metrics beside the checkpoint to compare with",
            evidence=evidence,
        )
        return
    if best_val.get("samples") not in (None, int(labels.size)):
        run.check(
            "source-metrics",
            title,
            Evidence.FAIL,
            "validation selection differs: %d samples here, %s in best.json" % (labels.size, best_val.get("samples")),
            evidence=evidence,
        )
        return
    assert accuracy is not None  # an empty validation selection has no accuracy: stop, never compare None
    delta = abs(accuracy - float(best_val["accuracy"]))
    status = Evidence.PASS if delta <= tol else Evidence.FAIL
    run.check(
        "source-metrics",
        title,
        status,
        "val accuracy %.4f here vs %.4f in best.json (|Δ| %.4f, tolerance %.3f), macro-F1 %.4f vs %s, "
        "%d samples"
        % (
            accuracy,
            float(best_val["accuracy"]),
            delta,
            tol,
            report["macro_f1"],
            fmt(best_val.get("macro_f1")),
            labels.size,
        ),
        evidence=evidence,
        hint=None
        if status == Evidence.PASS
        else "the checkpoint is not the one that scored these metrics: stale or replaced file?",
    )


def write_reference(run: ExportRun, ref: ReferenceSet, ckpt_sha256: Optional[str]) -> None:
    """inputs.npy, logits.npy, reference.json (each atomic), one artifact event each, then the check."""
    ref_dir = run.ctx.artifacts / "reference"
    ref_dir.mkdir(parents=True, exist_ok=True)
    package = ref.package
    inputs_path = write_bytes(ref_dir / "inputs.npy", npy_bytes(ref.inputs))
    logits_path = write_bytes(ref_dir / "logits.npy", npy_bytes(ref.logits))
    package["inputs"]["sha256"] = sha256_file(inputs_path)
    package["logits"]["sha256"] = sha256_file(logits_path)
    package["checkpoint_sha256"] = ckpt_sha256
    json_path = write_json(ref_dir / "reference.json", package)
    n = len(package["samples"])
    run.artifact(inputs_path, "reference-inputs", shape=list(ref.inputs.shape), dtype="float32")
    run.artifact(logits_path, "reference-logits", shape=list(ref.logits.shape), dtype="float32")
    run.artifact(json_path, "reference-json", samples=n)
    ref.inputs_path = inputs_path
    ref.written = True
    covered = package["classes_covered"]
    pairs_found = sum(1 for r in ref.pair_records if r["row"] is not None)
    status = Evidence.PASS if len(covered) == 10 else Evidence.FAIL
    run.check(
        "reference",
        "reference package",
        status,
        "%d samples covering %d/10 classes (%d per class) + %d of %d most-confused pairs; tolerance "
        "atol %g rtol %g; preprocessing %s"
        % (
            n,
            len(covered),
            package["samples_per_class"],
            pairs_found,
            len(ref.pair_records),
            TOLERANCE.atol,
            TOLERANCE.rtol,
            PREPROCESSING,
        ),
        evidence={
            "samples": n,
            "classes_covered": covered,
            "pairs": package["confused_pairs"],
            "files": [
                "artifacts/reference/inputs.npy",
                "artifacts/reference/logits.npy",
                "artifacts/reference/reference.json",
            ],
        },
        hint=None if status == Evidence.PASS else "the validation pool lacks some classes",
    )


def keep_inputs_only(run: ExportRun, ref: ReferenceSet) -> None:
    """The fresh-process loads still need the inputs; the package itself is not handed over."""
    ref.inputs_path = write_bytes(run.loads / "inputs.npy", npy_bytes(ref.inputs))
    run.not_run(
        [("reference", "reference package", {})],
        "the source checkpoint did not load cleanly: reference logits from partly random weights would "
        "mislead a deployment check",
    )
