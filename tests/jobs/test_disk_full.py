"""Issue 18.9: training on a full disk ends with exit.json naming ENOSPC and leaves no temp files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.drills import sets
from tests.support.mounts import tmpfs
from workbench.session.store import job_status
from workbench.system.atomic import read_json

SYNTH = [
    "data.source=synthetic",
    "data.synthetic_train=2000",
    "data.synthetic_test=300",
    "train.val_limit=200",
    "train.warmup_steps=2",
    "train.epochs=1",
]


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs: the job's folder fits, its first checkpoint (about 400 KB) does not."""
    with tmpfs(tmp_path / "small", "256k") as mnt:
        yield mnt


@pytest.mark.requires_mindspore
def test_training_on_a_full_disk_names_enospc_and_removes_temp_files(run_cli, full_disk):
    proc = run_cli("run", "train", "--sessions", full_disk, *sets(*SYNTH), timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    job_dir = next(Path(full_disk).glob("*/jobs/train-001"))
    assert (job_dir / "exit.json").is_file(), "the supervisor could not write exit.json"
    rec = read_json(job_dir / "exit.json")
    assert rec["disk_full"]["error"] == "ENOSPC", rec
    status = job_status(job_dir)
    assert status.state == "crashed", status.label()
    assert status.reason.startswith("no space left on device (ENOSPC) while writing artifacts/"), status.label()
    assert rec["removed_partial"] and all(p.endswith(".tmp") for p in rec["removed_partial"])
    assert list((job_dir / "artifacts").rglob("*.tmp")) == []
    assert "no space left on device (ENOSPC)" in proc.stdout
    listed = json.loads(run_cli("sessions", "--json", "--sessions", full_disk).stdout)
    assert listed[0]["jobs"][0]["reason"] == status.reason
