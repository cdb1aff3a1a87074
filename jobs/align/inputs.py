"""The shared inputs of an alignment: the fixed batch and the initial weights (numpy only, no MindSpore).

Both sides read the same two files; their SHA-256 hashes are recorded by the job and read
back by each side, so a mismatch can be shown before any tensor is compared.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import numpy as np

from jobs.common.datafeed import load_run_data
from jobs.common.models import read_job_config, resolve_job_ref
from workbench.data.dataset import CLASS_NAMES
from workbench.data.split import index_sha256
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobFailed
from workbench.session.candidate import INIT_VALUE
from workbench.system.atomic import sha256_file, write_bytes

INPUTS_NAME = "inputs.npz"
INIT_NAME = "init.ckpt"
PREPROCESSING = "/255"  # pixel / 255 as float32: the one preprocessing train, test and export use


def path_label(path: Dict[str, Any]) -> str:
    """`CPU/pynative/fp32` for an align.reference / align.candidate mapping (id shown when not 0)."""
    target = str(path.get("target"))
    if int(path.get("id") or 0):
        target += ":%d" % int(path["id"])
    return "%s/%s/%s" % (target, path.get("mode"), path.get("precision"))


def choose_batch(val_idx: np.ndarray, batch: int, sample_seed: int) -> np.ndarray:
    """`batch` of the given indices drawn without replacement by a seeded generator, sorted."""
    if batch > val_idx.size:
        raise JobFailed(
            "align.batch is %d but the validation split has %d images" % (batch, val_idx.size),
            hint="lower align.batch",
            type_="ConfigError",
        )
    rng = np.random.default_rng(int(sample_seed))
    return np.sort(rng.choice(val_idx, size=int(batch), replace=False)).astype(np.int64)


def validation_pool(cfg: JobConfig, job_dir: Path):
    """The whole validation split the training jobs use (datafeed.load_run_data: data.from or data.split_seed)."""
    pool_cfg = cfg.plain()
    # Only the validation part is needed: one training image keeps the 54 000 from being scaled for nothing.
    pool_cfg["train"]["train_limit"], pool_cfg["train"]["val_limit"] = 1, 0
    try:
        return load_run_data(job_dir, pool_cfg)
    except JobFailed:
        raise
    except Exception as exc:  # DataError and friends name the file and the expectation
        raise JobFailed(str(exc), hint="see data.dir / data.from / data.source", type_=type(exc).__name__)


def make_inputs(cfg: JobConfig, job_dir: Path) -> Dict[str, Any]:
    """Draw the fixed batch from the validation split and write artifacts/inputs.npz; describe it (hash included)."""
    data = validation_pool(cfg, job_dir)
    positions = choose_batch(np.arange(len(data.val_y)), cfg.align.batch, cfg.align.sample_seed)
    x = np.ascontiguousarray(data.val_x[positions])
    y = data.val_y[positions].astype(np.int32)
    source = data.description["source"]
    path = Path(job_dir) / "artifacts" / INPUTS_NAME
    buffer = io.BytesIO()
    np.savez(
        buffer,
        x=x,
        y=y,
        positions=positions,
        preprocessing=np.array(PREPROCESSING),
        class_names=np.array(CLASS_NAMES),
        source=np.array(source),
    )
    write_bytes(path, buffer.getvalue())
    split = {k: data.description.get(k) for k in ("seed", "val_fraction", "n_val_split", "val_idx_sha256", "how")}
    return {
        "path": str(path),
        "sha256": sha256_file(path),
        "n": int(positions.size),
        "positions_sha256": index_sha256(positions),
        "sample_seed": cfg.align.sample_seed,
        "positions_rule": "positions in the sorted validation split, drawn without replacement "
        "by numpy default_rng(align.sample_seed), sorted",
        "preprocessing": PREPROCESSING,
        "x_shape": list(x.shape),
        "x_dtype": str(x.dtype),
        "y_dtype": str(y.dtype),
        "x_range": [float(x.min()), float(x.max())],
        "data": {
            "source": source,
            "dir": data.description.get("dir"),
            "source_files": data.description.get("source_files"),
        },
        "split": split,
        "labels": [int(v) for v in y],
    }


def read_inputs(path: Path) -> Dict[str, Any]:
    """The arrays and protocol fields of an inputs.npz."""
    with np.load(str(path), allow_pickle=False) as npz:
        return {
            "x": npz["x"],
            "y": npz["y"],
            "positions": npz["positions"],
            "preprocessing": str(npz["preprocessing"]),
            "class_names": [str(c) for c in npz["class_names"]],
            "source": str(npz["source"]),
        }


def weights_source(cfg: Mapping[str, Any], job_dir: Path) -> Optional[Dict[str, Any]]:
    """The checkpoint align.weights_from names (a train job → artifacts/best.ckpt, or a .ckpt path), or None."""
    value = cfg["align"].get("weights_from")
    if not value or value == INIT_VALUE:
        return None
    ref = resolve_job_ref(job_dir, "align.weights_from", str(value))
    ckpt = ref / "artifacts" / "best.ckpt" if ref.is_dir() else ref
    if not ckpt.is_file():
        raise JobFailed(
            "align.weights_from is %r: %s does not exist" % (value, ckpt),
            hint="name a finished train job (it writes artifacts/best.ckpt) or a .ckpt file",
            type_="FileNotFoundError",
        )
    ran = read_job_config(ref) if ref.is_dir() else None
    if ran is not None:
        want, had = cfg["model"], ran.get("model") or {}
        for key in ("name", "hidden"):
            if had.get(key) != want.get(key):
                raise JobFailed(
                    "align.weights_from %s was trained with model.%s=%r; this job has model.%s=%r"
                    % (value, key, had.get(key), key, want.get(key)),
                    hint="set model.%s=%s to align that checkpoint" % (key, had.get(key)),
                    type_="ConfigError",
                )
    return {"from": str(value), "path": str(ckpt)}
