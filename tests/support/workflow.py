"""Sessions for the guided-workflow pilot tests: recorded jobs in chosen states, a held device, a frozen candidate."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session
from workbench.config.layers import defaults
from workbench.run.device import lock_name
from workbench.run.runner import lock_dir
from workbench.session.candidate import CANDIDATE_FILE

FAILED_EXIT = dict(OK_EXIT, returncode=1)
CANCELLED_EXIT = dict(OK_EXIT, returncode=-15, cancelled=True)


def refused_exit(holder: str) -> Dict[str, Any]:
    """exit.json of a job its supervisor refused because the device was held."""
    return dict(OK_EXIT, returncode=None, refused="device CPU:0 is held by %s" % holder)


def small_cfg(target: str = "CPU") -> Dict[str, Any]:
    """The app's config: synthetic data, 2 epochs, a fixed device."""
    cfg = defaults()
    cfg["data"]["source"] = "synthetic"
    cfg["train"].update(epochs=2, warmup_steps=3)
    cfg["device"]["target"] = target
    return cfg


def train_events(cut_after_epoch: bool = False) -> List[Dict[str, Any]]:
    """A recorded training run's events; cut 12 lines after its first epoch when asked (a run in progress)."""
    events = [json.loads(line) for line in open(FIXTURES / "train_ok.jsonl")]
    if cut_after_epoch:
        cut = next(i for i, e in enumerate(events) if e["type"] == "epoch") + 12
        events = events[:cut]
    return events


def evaluation_events(of: str = "train-001") -> List[Dict[str, Any]]:
    """A test-set evaluation of `of`, as the test job reports it."""
    base = {"v": 1, "t": 1700000100.0}
    return [
        dict(base, seq=0, type="started", kind="test", pid=1, python="python3", argv=[], version="0.1.0"),
        dict(base, seq=1, type="result", summary={"accuracy": 0.84, "macro_f1": 0.83, "from": of, "best_epoch": 1}),
        dict(base, seq=2, type="finished", status="ok", duration_s=1.0),
    ]


def session(root: Path, jobs: List[Tuple[str, str, Any, Optional[Dict[str, Any]]]], cfg=None) -> str:
    """A recorded session; a job given exit None is made to look alive (its pid is this test process)."""
    sid = make_recorded_session(root, jobs, cfg=cfg or small_cfg())
    for jid, _, _, exit_record in jobs:
        if exit_record is None:
            (Path(root) / sid / "jobs" / jid / "pids.json").write_text(
                json.dumps({"supervisor": os.getpid(), "job": os.getpid(), "pgid": os.getpid()})
            )
    return sid


def set_job_config(root: Path, sid: str, jid: str, **sections: Dict[str, Any]) -> None:
    """Change sections of a recorded job's effective config (config.json)."""
    path = Path(root) / sid / "jobs" / jid / "config.json"
    cfg = json.loads(path.read_text())
    for name, values in sections.items():
        cfg.setdefault(name, {}).update(values)
    path.write_text(json.dumps(cfg))


def hold_device(sid: str, jid: str, target: str = "CPU", device_id: int = 0) -> Path:
    """The lock file a running job's supervisor leaves: its holder line names a live pid (this process)."""
    path = lock_dir() / lock_name(target, device_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("job %s/%s (pid %d)" % (sid, jid, os.getpid()))
    return path


def save_state(root: Path, sid: str, jid: str) -> None:
    """The resumable state a cancelled training run saves."""
    art = Path(root) / sid / "jobs" / jid / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    (art / "state.json").write_text(json.dumps({"epoch": 1, "step_in_epoch": 5}))
    (art / "state.ckpt").write_bytes(b"state")


def freeze(root: Path, sid: str, run: str, epoch: int = 1, sha256: str = "ab" * 32) -> None:
    """A candidate.jsonl entry as the freeze writes it."""
    entry = {
        "n": 1,
        "t": 1700000200.0,
        "sha256": sha256,
        "checkpoint": "jobs/%s/artifacts/best.ckpt" % run,
        "run": run,
        "epoch": epoch,
        "split_sha256": None,
        "recipe_sha256": "cd" * 32,
        "reason": "first freeze",
    }
    with open(Path(root) / sid / CANDIDATE_FILE, "a") as fh:
        fh.write(json.dumps(entry) + "\n")
