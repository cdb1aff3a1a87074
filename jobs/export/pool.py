"""The validation pool the reference samples come from: the training run's own split, verified."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from jobs.export.source import Source
from jobs.export.state import ExportRun
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobFailed


def validation_pool(run: ExportRun, src: Source) -> Dict[str, Any]:
    """The training run's validation images and labels, with how they were selected and their hashes."""
    from jobs.common import datafeed
    from jobs.common.models import read_job_config, resolve_job_ref
    from workbench.data.split import index_sha256, load_split, stratified_split

    # The training run's config is another job's record (it may predate keys this schema has): read it
    # with .get where a key may be missing.
    cfg = JobConfig(src.train_cfg) if src.train_cfg else run.cfg
    base_dir = src.folder or run.ctx.dir
    data_from = cfg["data"].get("from")
    if data_from:
        ref = resolve_job_ref(base_dir, "data.from", data_from)
        record = datafeed.find_split_record(ref)
        if record is None:
            raise JobFailed(
                "data.from of the training run is %r: %s holds no split.json" % (data_from, ref), type_="DataError"
            )
        settings = datafeed.data_settings(cfg, read_job_config(ref) if ref.is_dir() else None)
        split = load_split(record)
        if split.meta.get("synthetic"):
            settings["source"] = "synthetic"
        data = datafeed.load_source(settings)
        val_idx, seed, fraction = split.val_idx, split.seed, split.val_fraction
        how = "split %s (index hashes verified)" % record
    else:
        settings = dict(cfg["data"])
        data = datafeed.load_source(settings)
        seed, fraction = settings["split_seed"], settings["val_fraction"]
        _, val_idx = stratified_split(data.train_labels, fraction, seed)
        how = "stratified split with split_seed=%d, val_fraction=%s (the training run's rule)" % (seed, fraction)
    val_sha = index_sha256(val_idx)
    recorded = ((src.best or {}).get("data") or {}).get("val_idx_sha256")
    if recorded and recorded != val_sha:
        raise JobFailed(
            "the validation split made here (SHA-256 %s) is not the training run's (%s in best.json)"
            % (val_sha, recorded),
            hint="use the same data.dir / data.from as the training run",
            type_="DataError",
        )
    val_limit = (cfg.get("train") or {}).get("val_limit") or 0
    return {
        "images": data.train_images[val_idx],
        "labels": data.train_labels[val_idx].astype(np.int64),
        "indices": val_idx,
        "val_limit": val_limit,
        "how": how,
        "data": {
            "source": "synthetic" if data.synthetic else "official",
            "split": "validation",
            "split_seed": seed,
            "val_fraction": fraction,
            "val_idx_sha256": val_sha,
            "n_val": int(val_idx.size),
            "val_idx_verified_against_best_json": bool(recorded),
            "source_files": [{"name": f["name"], "sha256": f["sha256"]} for f in data.files],
        },
    }
