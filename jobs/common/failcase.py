"""A failing case on disk: the last finite state of the step cell, the batch of the step, and where it was.

Folder layout: state.ckpt (network + optimizer before the step), batch.npz (x, y as fed), case.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np

from jobs.common.checkpoint_files import save_ckpt_atomic
from workbench.jobkit.context import JobFailed
from workbench.system.atomic import read_json, sha256_file, write_bytes, write_json

CASE_FORMAT = "ms-workbench numerics case v1"
CASE_DIR = "numerics"
STATE = "state.ckpt"
BATCH = "batch.npz"
META = "case.json"


def save_case(folder: Path, train_step: Any, x: np.ndarray, y: np.ndarray, at: Dict[str, Any]) -> Path:
    """Write the case (state first, case.json last: a folder without case.json is no case)."""
    import io

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ckpt = save_ckpt_atomic(train_step, folder / STATE)
    buf = io.BytesIO()
    np.savez(buf, x=np.asarray(x), y=np.asarray(y))
    batch = write_bytes(folder / BATCH, buf.getvalue())
    meta = dict(at, format=CASE_FORMAT, state_sha256=sha256_file(ckpt), batch_sha256=sha256_file(batch))
    return write_json(folder / META, meta)


def load_case(folder: Path) -> Tuple[Dict[str, Any], np.ndarray, np.ndarray]:
    """(case.json, x, y) of a case folder; a missing or changed file stops the job naming it."""
    folder = Path(folder)
    meta_path = folder / META
    if not meta_path.is_file():
        raise JobFailed(
            "%s has no %s: no failing case was kept there" % (folder, META),
            hint="a train job keeps one when a step turns non-finite; or give numerics.step to replay any step",
            type_="NoCase",
        )
    meta = read_json(meta_path)
    if meta.get("format") != CASE_FORMAT:
        raise JobFailed("%s: format is %r, expected %r" % (meta_path, meta.get("format"), CASE_FORMAT), type_="NoCase")
    for name, key in ((STATE, "state_sha256"), (BATCH, "batch_sha256")):
        path = folder / name
        if not path.is_file() or sha256_file(path) != meta.get(key):
            raise JobFailed(
                "%s is missing or its SHA-256 differs from %s in %s" % (path, key, meta_path),
                hint="the case folder was changed after it was written",
                type_="NoCase",
            )
    with np.load(str(folder / BATCH)) as data:
        return meta, data["x"], data["y"]
