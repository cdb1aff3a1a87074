"""The `data` job: verify the official files, split 54 000 / 6 000 by class with a recorded seed, preview.

Numpy only (no MindSpore), so it runs anywhere the workbench runs, Python 3.9 included.
"""

from __future__ import annotations

import io
import math
import sys
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jobs.common.datafeed import SYNTHETIC_SEED
from workbench.data.dataset import CLASS_NAMES, IMAGE_HW, NUM_CLASSES, FashionMnist, scale
from workbench.data.errors import DataError
from workbench.data.locate import candidate_dirs, locate
from workbench.data.official import OFFICIAL_FILES, find_file, read_official_file
from workbench.data.preview import preview_indices
from workbench.data.split import (
    JSON_NAME,
    NPZ_NAME,
    describe_split,
    index_sha256,
    load_split,
    save_split,
    stratified_split,
)
from workbench.data.synthetic import synthetic_fashion
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, JobFailed, run
from workbench.system.atomic import write_bytes

PREVIEW_NAME = "preview.npz"
SCALE_CHUNK = 10000  # images scaled at a time: the contract is checked without a 220 MB float copy
# A fixed zip timestamp makes preview.npz byte-identical for the same data and seed.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def check(ctx: JobContext, id_: str, title: str, status: str, detail: str = "", **fields: Any) -> None:
    """ctx.check, with SYNTHETIC in front of the detail when the data is synthetic (plain logs show it too)."""
    if ctx.events.extra.get("synthetic"):
        detail = "SYNTHETIC: " + detail
    ctx.check(id_, title, status, detail=detail, **fields)


def fetch_hint(searched: List[str]) -> str:
    """What to do when the official files are missing or damaged."""
    return (
        "run `ms-workbench data fetch` (needs a network), or put the four official files "
        "(raw or .gz) in one of the searched folders: " + ", ".join(searched)
    )


def fail(
    ctx: JobContext, check_id: str, title: str, exc: DataError, hint: str, evidence: Optional[Dict[str, Any]] = None
) -> JobFailed:
    """Record an observed-fail check for a data error and return the JobFailed to raise."""
    check(
        ctx,
        check_id,
        title,
        Evidence.FAIL,
        detail=str(exc),
        evidence=dict(evidence or {}, file=exc.path, problem=exc.problem, expected=exc.expected),
        hint=hint,
    )
    return JobFailed(str(exc), hint=hint, type_="DataError")


def find_official(ctx: JobContext, data_dir: Optional[str]) -> Tuple[Path, str]:
    """Locate the four files -> (folder, hint for later failures); an existing data.dir must hold them."""
    searched = [str(p) for p in candidate_dirs(data_dir)]
    title = "Official files found"
    evidence: Dict[str, Any] = {"configured": data_dir, "searched": searched}
    # ./data/fashion-mnist of a job is its own job folder: not a place to put files.
    hint = fetch_hint([p for p in searched if not p.startswith(str(ctx.dir) + "/")])
    configured: Optional[Path] = None
    if data_dir is not None:
        configured = Path(data_dir).expanduser()
        if not configured.is_absolute():
            # The job runs inside its job folder, so a relative path would silently mean something else.
            exc = DataError(data_dir, "data.dir is a relative path", "an absolute path (config key data.dir)")
            raise fail(ctx, "data.files", title, exc, "set data.dir to an absolute path", evidence)
    try:
        directory, tried = locate(data_dir)
    except DataError as exc:
        raise fail(ctx, "data.files", title, exc, hint, evidence) from None
    if configured is not None and configured.is_dir() and directory.resolve() != configured.resolve():
        first = OFFICIAL_FILES[0].name
        err = DataError(
            configured / first,
            "file is missing: data.dir names this existing folder, which holds "
            "none of the four files, so no other copy is used",
            "the four official files (raw or .gz) in data.dir, or data.dir unset",
        )
        raise fail(
            ctx, "data.files", title, err, "copy the official files into %s, or unset data.dir" % configured, evidence
        )
    files = [find_file(directory, spec) for spec in OFFICIAL_FILES]
    # Where it was found in the search order; every place looked at is in the evidence.
    detail = "4 files in %s (place %d of %d searched)" % (directory, len(tried), len(searched))
    evidence.update(
        {
            "dir": str(directory),
            "tried": [str(p) for p in tried],
            "files": [{"name": p.name, "path": str(p), "bytes": p.stat().st_size} for p in files if p],
        }
    )
    check(ctx, "data.files", title, Evidence.PASS, detail=detail, evidence=evidence)
    return directory, hint


def load_official(ctx: JobContext, data_dir: Optional[str]) -> FashionMnist:
    """Read and verify each file, one check per file (header, size, labels, SHA-256 of the content)."""
    directory, hint = find_official(ctx, data_dir)
    arrays: Dict[str, np.ndarray] = {}
    records = []
    for n, spec in enumerate(OFFICIAL_FILES, 1):
        ctx.raise_if_cancelled()
        path = find_file(directory, spec)
        title = "%s verified" % spec.name
        if path is None:  # removed since locate looked
            exc = DataError(directory / spec.name, "file is missing", "the file or its .gz")
            raise fail(ctx, "data.file." + spec.key, title, exc, hint)
        try:
            array, record = read_official_file(path, spec, verify=True)
        except DataError as exc:
            raise fail(ctx, "data.file." + spec.key, title, exc, hint) from None
        record = dict(
            record, official_sha256=spec.content_sha256, verified=True, shape=list(array.shape), dtype=str(array.dtype)
        )
        shape_text = "×".join(str(d) for d in array.shape)
        check(
            ctx,
            "data.file." + spec.key,
            title,
            Evidence.PASS,
            detail="%s %s; SHA-256 of content %s… = official" % (shape_text, array.dtype, record["sha256"][:16]),
            evidence=record,
        )
        ctx.progress(n, len(OFFICIAL_FILES), "files", "verify")
        arrays[spec.key] = array
        records.append(record)
    return FashionMnist(
        arrays["train_images"],
        arrays["train_labels"],
        arrays["test_images"],
        arrays["test_labels"],
        dir=directory,
        files=records,
        synthetic=False,
        verified=True,
    )


def load_synthetic(ctx: JobContext, d: Dict[str, Any]) -> FashionMnist:
    """Generate the labelled-synthetic stand-in; every file check is not-run (there are no files)."""
    ds = synthetic_fashion(d["synthetic_train"], d["synthetic_test"], SYNTHETIC_SEED)
    ctx.log(
        "SYNTHETIC data (data.source=synthetic): %d train / %d test generated images from seed %d; "
        "not Fashion-MNIST, for demos and tests only" % (d["synthetic_train"], d["synthetic_test"], SYNTHETIC_SEED),
        level="warning",
    )
    check(
        ctx,
        "data.files",
        "Official files found",
        Evidence.NOT_RUN,
        detail="data asked for by name (data.source=synthetic): no files read, nothing hashed",
        evidence={"source": "synthetic", "synthetic_seed": SYNTHETIC_SEED},
    )
    return ds


def check_shapes(ctx: JobContext, ds: FashionMnist, n_train: int, n_test: int) -> Dict[str, List[int]]:
    """Images uint8 [N, 28, 28], labels int32 [N], with the expected N."""
    shapes = {
        "train_images": list(ds.train_images.shape),
        "train_labels": list(ds.train_labels.shape),
        "test_images": list(ds.test_images.shape),
        "test_labels": list(ds.test_labels.shape),
    }
    expected = {
        "train_images": [n_train] + list(IMAGE_HW),
        "train_labels": [n_train],
        "test_images": [n_test] + list(IMAGE_HW),
        "test_labels": [n_test],
    }
    dtypes = {
        "train_images": str(ds.train_images.dtype),
        "train_labels": str(ds.train_labels.dtype),
        "test_images": str(ds.test_images.dtype),
        "test_labels": str(ds.test_labels.dtype),
    }
    wrong = [k for k in shapes if shapes[k] != expected[k]]
    wrong += [k for k in dtypes if dtypes[k] != ("uint8" if k.endswith("images") else "int32")]
    status = Evidence.FAIL if wrong else Evidence.PASS
    detail = "train %s, test %s images uint8; labels int32" % (
        "×".join(map(str, shapes["train_images"])),
        "×".join(map(str, shapes["test_images"])),
    )
    if wrong:
        detail = "unexpected shape or dtype: %s" % ", ".join(sorted(set(wrong)))
    check(
        ctx,
        "data.shapes",
        "Shapes and dtypes as read",
        status,
        detail=detail,
        evidence={"shapes": shapes, "expected": expected, "dtypes": dtypes},
    )
    if wrong:
        raise JobFailed(detail, type_="DataError")
    return shapes


def check_scaling(ctx: JobContext, ds: FashionMnist, split_sizes: Dict[str, int]) -> Dict[str, Any]:
    """Apply the model-input scaling to every image (in chunks): float32 [N, 1, 28, 28] in [0, 1], = pixel/255."""
    # What scale() makes of each of the 256 byte values, against the exact quotient.
    probe = (np.arange(28 * 28) % 256).astype(np.uint8).reshape((1,) + IMAGE_HW)
    table = scale(probe).reshape(-1)[:256]
    max_err = float(np.abs(table.astype(np.float64) - np.arange(256) / 255.0).max())
    low, high = math.inf, -math.inf
    dtypes = set()
    consistent = True
    for images in (ds.train_images, ds.test_images):
        for start in range(0, images.shape[0], SCALE_CHUNK):
            raw = images[start : start + SCALE_CHUNK]
            scaled = scale(raw)
            dtypes.add(str(scaled.dtype))
            if scaled.shape != (raw.shape[0], 1) + IMAGE_HW:
                dtypes.add("shape %s" % (scaled.shape,))
            low, high = min(low, float(scaled.min())), max(high, float(scaled.max()))
            # Every pixel got its byte value's quotient: nothing depends on the image or the batch.
            consistent = consistent and bool(np.array_equal(scaled.reshape(raw.shape), table[raw]))
    ok = dtypes == {"float32"} and low >= 0.0 and high <= 1.0 and max_err < 1e-6 and consistent
    shapes = {name: [n, 1] + list(IMAGE_HW) for name, n in split_sizes.items()}
    evidence = {
        "dtype": "float32" if dtypes == {"float32"} else sorted(dtypes),
        "min": low,
        "max": high,
        "max_abs_err_vs_div255": max_err,
        "per_pixel": consistent,
        "scale": "/255",
        "input_shapes": shapes,
    }
    check(
        ctx,
        "data.scale",
        "Model input after scaling",
        Evidence.PASS if ok else Evidence.FAIL,
        detail="float32 [N, 1, 28, 28], min %.4g max %.4g, = pixel/255 (max err %.1e); nothing fitted"
        % (low, high, max_err),
        evidence=evidence,
    )
    if not ok:
        raise JobFailed("scaled input breaks the contract: %s" % evidence, type_="DataError")
    return evidence


def check_labels(ctx: JobContext, ds: FashionMnist) -> None:
    """Labels are integers 0..9 and every class occurs in the training and test sets."""
    evidence = {}
    problems = []
    for name, labels in (("train", ds.train_labels), ("test", ds.test_labels)):
        present = np.unique(labels)
        evidence[name] = {
            "min": int(labels.min()),
            "max": int(labels.max()),
            "dtype": str(labels.dtype),
            "classes": int(present.size),
        }
        if labels.min() < 0 or labels.max() >= NUM_CLASSES or present.size != NUM_CLASSES:
            problems.append("%s labels span %d..%d over %d classes" % (name, labels.min(), labels.max(), present.size))
    status = Evidence.FAIL if problems else Evidence.PASS
    check(
        ctx,
        "data.labels",
        "Labels 0–9, every class present",
        status,
        detail="; ".join(problems) or "train and test labels in 0..9, all 10 classes present",
        evidence=evidence,
    )
    if problems:
        raise JobFailed("; ".join(problems), type_="DataError")


def check_split(
    ctx: JobContext, labels: np.ndarray, train_idx: np.ndarray, val_idx: np.ndarray, val_fraction: float
) -> None:
    """Train and val are disjoint, cover the official training set, and each class is split by the fraction."""
    n = labels.size
    overlap = np.intersect1d(train_idx, val_idx)
    covered = np.union1d(train_idx, val_idx)
    complete = covered.size == n and bool(covered.size == 0 or (covered[0] == 0 and covered[-1] == n - 1))
    status = Evidence.PASS if overlap.size == 0 and complete else Evidence.FAIL
    check(
        ctx,
        "data.split.disjoint",
        "Train and val indices disjoint",
        status,
        detail="%d train + %d val = %d training images, %d in both"
        % (train_idx.size, val_idx.size, covered.size, overlap.size),
        evidence={
            "n_train": int(train_idx.size),
            "n_val": int(val_idx.size),
            "overlap": int(overlap.size),
            "covers_all": complete,
            "index_range": [0, n - 1],
        },
    )
    if status != Evidence.PASS:
        raise JobFailed("split indices overlap or leave images out", type_="DataError")


def check_counts(ctx: JobContext, counts: Dict[str, List[int]], val_fraction: float) -> None:
    """Every class in all three sets, and its val share within half an image of the fraction (stratified)."""
    off = []
    for cls in range(NUM_CLASSES):
        total = counts["train"][cls] + counts["val"][cls]
        want = val_fraction * total
        # Tiny classes keep at least one image on each side, so allow that rounding too.
        if abs(counts["val"][cls] - want) > 0.5 and not (total >= 2 and counts["val"][cls] == 1 and want < 1):
            off.append(cls)
        elif min(counts["train"][cls], counts["val"][cls], counts["test"][cls]) < 1:
            off.append(cls)
    status = Evidence.FAIL if off else Evidence.PASS
    detail = "per class: train %s, val %s, test %s" % (
        _spread(counts["train"]),
        _spread(counts["val"]),
        _spread(counts["test"]),
    )
    if off:
        detail = "classes %s are not split by the fraction %.3g or are empty somewhere; %s" % (
            off,
            val_fraction,
            detail,
        )
    check(
        ctx,
        "data.counts",
        "Per-class counts (stratified)",
        status,
        detail=detail,
        evidence=dict(counts, val_fraction=val_fraction),
    )
    if off:
        raise JobFailed(detail, type_="DataError")


def _spread(values: List[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else "%d–%d" % (low, high)


def check_test_apart(ctx: JobContext, ds: FashionMnist, train_idx: np.ndarray, val_idx: np.ndarray) -> None:
    """The test set is its own files, outside every split index, and shares no image with training."""
    n_train_file = ds.train_labels.size
    in_range = bool(max(int(train_idx.max(initial=-1)), int(val_idx.max(initial=-1))) < n_train_file)
    seen = set(row.tobytes() for row in ds.train_images.reshape(n_train_file, -1))
    identical = sum(1 for row in ds.test_images.reshape(ds.test_labels.size, -1) if row.tobytes() in seen)
    ok = in_range and identical == 0
    source = "t10k files" if not ds.synthetic else "a separate synthetic stream"
    check(
        ctx,
        "data.test_apart",
        "Test set kept apart",
        Evidence.PASS if ok else Evidence.FAIL,
        detail="%d test images from %s; split indices address only the %d training images; "
        "%d test images byte-identical to a training image; no statistic uses them"
        % (ds.test_labels.size, source, n_train_file, identical),
        evidence={
            "n_test": int(ds.test_labels.size),
            "split_indices_in_train_file": in_range,
            "identical_to_train": identical,
        },
        hint=None if ok else "the test files may be copies of the training files: check their origin",
    )
    if not ok:
        raise JobFailed(
            "test set not apart: %d identical images, indices in range: %s" % (identical, in_range), type_="DataError"
        )


def pixel_stats(images: np.ndarray, idx: np.ndarray) -> Dict[str, float]:
    """Exact mean/std of pixel/255 over the chosen images, from a 256-bin histogram (no float copy)."""
    hist = np.zeros(256, dtype=np.int64)
    for start in range(0, idx.size, SCALE_CHUNK):
        hist += np.bincount(images[idx[start : start + SCALE_CHUNK]].ravel(), minlength=256)
    values = np.arange(256, dtype=np.float64) / 255.0
    total = float(hist.sum())
    mean = float((hist * values).sum() / total)
    std = float(math.sqrt((hist * (values - mean) ** 2).sum() / total))
    return {"mean": mean, "std": std, "pixels": int(total)}


def write_npz(path: Path, arrays: Dict[str, np.ndarray]) -> Path:
    """An .npz np.load reads, written atomically and byte-reproducibly (fixed zip timestamps)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w") as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)
    return write_bytes(path, buffer.getvalue())


def write_preview(
    ctx: JobContext, ds: FashionMnist, train_idx: np.ndarray, per_class: int, seed: int
) -> Dict[str, List[int]]:
    """A few training-split images per class, with their pixels, for the screen: preview.npz."""
    picks = preview_indices(ds.train_labels[train_idx], per_class=per_class, seed=seed)
    chosen = np.array([int(train_idx[i]) for cls in range(NUM_CLASSES) for i in picks[cls]], dtype=np.int64)
    path = write_npz(
        ctx.artifacts / PREVIEW_NAME,
        {
            "images": np.ascontiguousarray(ds.train_images[chosen], dtype=np.uint8),
            "labels": ds.train_labels[chosen].astype(np.int32),
            "indices": chosen,
            "class_names": np.array(CLASS_NAMES),
        },
    )
    by_class = {str(cls): [int(train_idx[i]) for i in picks[cls]] for cls in range(NUM_CLASSES)}
    ctx.artifact(path, "preview", per_class=per_class, images=int(chosen.size), split="train", indices=by_class)
    return by_class


def main(ctx: JobContext) -> str:
    """Load and verify, split with the recorded seed, save the split and a preview, report."""
    d = ctx.cfg["data"]
    synthetic = d["source"] == "synthetic"
    seed, val_fraction = d["split_seed"], d["val_fraction"]
    # Every event says whether the data is synthetic, so no reader can take it for the real set.
    ctx.events.extra["synthetic"] = synthetic
    ctx.started(source=d["source"], data_dir=d["dir"], split_seed=seed, val_fraction=val_fraction)
    ds = load_synthetic(ctx, d) if synthetic else load_official(ctx, d["dir"])
    ctx.raise_if_cancelled()
    n_train_file, n_test = int(ds.train_labels.size), int(ds.test_labels.size)
    check_shapes(ctx, ds, d["synthetic_train"] if synthetic else 60000, d["synthetic_test"] if synthetic else 10000)
    check_labels(ctx, ds)

    train_idx, val_idx = stratified_split(ds.train_labels, val_fraction, seed)
    ctx.progress(1, 1, "split", "split")
    check_split(ctx, ds.train_labels, train_idx, val_idx, val_fraction)
    counts = {
        "train": np.bincount(ds.train_labels[train_idx], minlength=NUM_CLASSES).tolist(),
        "val": np.bincount(ds.train_labels[val_idx], minlength=NUM_CLASSES).tolist(),
        "test": np.bincount(ds.test_labels, minlength=NUM_CLASSES).tolist(),
    }
    check_counts(ctx, counts, val_fraction)
    check_test_apart(ctx, ds, train_idx, val_idx)
    scaling = check_scaling(ctx, ds, {"train": int(train_idx.size), "val": int(val_idx.size), "test": n_test})
    ctx.raise_if_cancelled()

    pixel = pixel_stats(ds.train_images, train_idx)
    ctx.log(
        "%spixel statistics of the train split (pixel/255, %d images): mean %.4f, std %.4f"
        % ("SYNTHETIC " if synthetic else "", train_idx.size, pixel["mean"], pixel["std"])
    )

    meta = describe_split(ds.train_labels, train_idx, val_idx, seed, val_fraction, ds.files, synthetic)
    meta.update({"source": d["source"], "n_official_train": n_train_file, "class_names": list(CLASS_NAMES)})
    if synthetic:
        meta["synthetic_seed"] = SYNTHETIC_SEED
        meta["synthetic_counts"] = {"train": d["synthetic_train"], "test": d["synthetic_test"]}
    json_path = save_split(ctx.artifacts, train_idx, val_idx, meta)
    ctx.artifact(ctx.artifacts / NPZ_NAME, "split-indices", seed=seed)
    ctx.artifact(json_path, "split-record", seed=seed)
    reloaded = load_split(ctx.artifacts)
    same = np.array_equal(reloaded.train_idx, train_idx) and np.array_equal(reloaded.val_idx, val_idx)
    check(
        ctx,
        "data.split.saved",
        "Split artifact reloads",
        Evidence.PASS if same else Evidence.FAIL,
        detail="artifacts/%s + %s read back: index SHA-256 match the record, seed %d" % (NPZ_NAME, JSON_NAME, seed),
        evidence={
            "train_idx_sha256": reloaded.meta["train_idx_sha256"],
            "val_idx_sha256": reloaded.meta["val_idx_sha256"],
            "seed": reloaded.seed,
        },
    )
    if not same:
        raise JobFailed("the saved split does not read back identically", type_="DataError")

    preview = write_preview(ctx, ds, train_idx, int(d["preview_per_class"]), seed)
    ctx.result(
        {
            "source": d["source"],
            "synthetic": synthetic,
            "dir": str(ds.dir) if ds.dir is not None else None,
            "files": [
                {
                    k: f.get(k)
                    for k in (
                        "name",
                        "path",
                        "sha256",
                        "official_sha256",
                        "verified",
                        "bytes",
                        "compressed",
                        "shape",
                        "dtype",
                    )
                }
                for f in ds.files
            ],
            "counts": counts,
            "totals": {"train": int(train_idx.size), "val": int(val_idx.size), "test": n_test},
            "split": {
                "seed": seed,
                "val_fraction": val_fraction,
                "train_sha256": index_sha256(train_idx),
                "val_sha256": index_sha256(val_idx),
                "path": "artifacts/" + JSON_NAME,
                "index_file": "artifacts/" + NPZ_NAME,
            },
            "pixel": {"mean": pixel["mean"], "std": pixel["std"]},
            "input": {
                "dtype": scaling["dtype"],
                "shapes": scaling["input_shapes"],
                "min": scaling["min"],
                "max": scaling["max"],
            },
            "class_names": list(CLASS_NAMES),
            "scale": "/255",
            "preview": "artifacts/" + PREVIEW_NAME,
            "preview_indices": preview,
            "first_train_labels": ds.train_labels[:10].tolist(),
        }
    )
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
