"""One recorded session per state (idle, running, done, failed) holding a job of every kind, for the screen tests."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict, List

from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session
from workbench.config.layers import defaults

SID = "20240101-000000-5a5a"


FAILED_EXIT = dict(OK_EXIT, returncode=1)


RECORDED = {"env": "env_cpu_pass", "data": "data_ok", "train": "train_ok", "align": "align_pass", "export": "export_ok"}


# Real failures where one was recorded; the others end their recording early with a failed `finished`.
FAILED = {"data": "data_missing", "train": "train_device_error", "export": "export_failed_reload"}


SCREENS = ["environment", "data", "training", "alignment", "export", "session"]


KEYS = dict(zip(SCREENS, "123456"))


def _events(name: str) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in open(FIXTURES / (name + ".jsonl"))]


def _cut(kind: str) -> List[Dict[str, Any]]:
    """A recording cut in the middle of its work (the job still runs)."""
    events = [e for e in _events(RECORDED[kind]) if e["type"] != "finished"]
    return events[: max(2, len(events) // 2)]


def _failed(kind: str) -> List[Dict[str, Any]]:
    events = _cut(kind)
    events.append(
        {
            "v": 1,
            "seq": len(events),
            "t": events[-1]["t"] + 0.1,
            "type": "finished",
            "status": "failed",
            "error": {
                "type": "RuntimeError",
                "message": "the %s job stopped (recording cut here)" % kind,
                "hint": None,
            },
        }
    )
    return events


def _test_job() -> List[Dict[str, Any]]:
    """A test-set evaluation of train-001, as jobs/test.py reports it."""
    base = {"v": 1, "t": 1700000100.0}
    return [
        dict(
            base,
            seq=0,
            type="started",
            kind="test",
            pid=1,
            python="python3",
            argv=[],
            version="0.1.0",
            device={"requested": "auto", "resolved": "CPU", "why": "recorded"},
        ),
        dict(
            base,
            seq=1,
            type="result",
            summary={
                "accuracy": 0.8421,
                "macro_f1": 0.8397,
                "from": "train-001",
                "best_epoch": 1,
                "test_evaluations": 1,
                "checkpoint": {"path": "train-001/artifacts/best.ckpt"},
            },
        ),
        dict(base, seq=2, type="finished", status="ok", error=None),
    ]


def state_config() -> Dict[str, Any]:
    cfg = defaults()
    cfg["data"]["source"] = "synthetic"
    cfg["train"].update(epochs=2, warmup_steps=3)
    return cfg


def state_session(root, state: str) -> str:
    jobs = []
    for kind in ("env", "data", "train", "align", "export"):
        jid = "%s-001" % kind
        if state == "done":
            jobs.append((jid, kind, FIXTURES / (RECORDED[kind] + ".jsonl"), OK_EXIT))
        elif state == "running":
            jobs.append((jid, kind, _cut(kind), None))
        elif state == "failed":
            events = FIXTURES / (FAILED[kind] + ".jsonl") if kind in FAILED else _failed(kind)
            jobs.append((jid, kind, events, FAILED_EXIT))
    if state == "done":
        jobs.append(("test-001", "test", _test_job(), OK_EXIT))
    sid = make_recorded_session(root, jobs, cfg=state_config())
    if state == "done":  # the data job's class preview, recorded with its events
        shutil.copyfile(
            str(FIXTURES / "data_ok_preview.npz"), str(root / sid / "jobs" / "data-001" / "artifacts" / "preview.npz")
        )
    if state == "running":  # a live pid stands for each job, so they read as running
        for kind in ("env", "data", "train", "align", "export"):
            (root / sid / "jobs" / ("%s-001" % kind) / "pids.json").write_text(
                json.dumps({"supervisor": os.getpid(), "job": os.getpid(), "pgid": os.getpid()})
            )
    return sid


class FrozenClock:
    """workbench.session.store's clock, stopped: running jobs show the same duration in every run."""

    @staticmethod
    def time() -> float:
        return 1_700_000_100.0
