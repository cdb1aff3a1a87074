"""Training-run folders as a finished run leaves them (best.ckpt, best.json, config.json, exit.json), for freeze tests."""

from __future__ import annotations

from pathlib import Path

from workbench.events.protocol import encode
from workbench.system.atomic import sha256_file, write_json

DATA = {
    "train_idx_sha256": "a" * 64,
    "val_idx_sha256": "b" * 64,
    "source_files": [{"name": "train-images-idx3-ubyte", "sha256": "c" * 64}],
}
CFG = {
    "model": {"name": "mlp", "hidden": 128},
    "train": {
        "lr": 0.001,
        "optimizer": "adam",
        "momentum": 0.9,
        "batch_size": 64,
        "precision": "fp32",
        "seed": 1,
        "epochs": 5,
    },
}


def make_run(session: Path, jid: str, ok: bool = True, weights: bytes = b"weights", epoch: int = 3) -> Path:
    """A training run folder under session/jobs/jid that ended ok (or failed) with a best checkpoint."""
    run = session / "jobs" / jid
    (run / "artifacts").mkdir(parents=True)
    (run / "artifacts" / "best.ckpt").write_bytes(weights)
    write_json(
        run / "artifacts" / "best.json",
        {
            "epoch": epoch,
            "data": DATA,
            "checkpoint": {"file": "best.ckpt", "sha256": sha256_file(run / "artifacts" / "best.ckpt")},
        },
    )
    write_json(run / "config.json", CFG)
    fin = {
        "v": 1,
        "seq": 0,
        "t": 1.0,
        "type": "finished",
        "status": "ok" if ok else "failed",
        "error": None if ok else {"type": "X", "message": "diverged", "hint": None},
    }
    (run / "events.jsonl").write_text(encode(fin) + "\n")
    write_json(run / "exit.json", {"returncode": 0 if ok else 1, "duration_s": 1.0})
    return run
