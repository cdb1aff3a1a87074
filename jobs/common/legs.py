"""Legs: `train` runs a checking job starts as child processes in its own folder (legs/NAME), then reads.

The `resume` and `precision` jobs judge training runs against each other; each run is a real
`python -m jobs.train` process with its own config.json, job.json and events.jsonl under
`legs/NAME/`, started with exec (never a fork of a MindSpore process) in the parent's process
group, so cancelling the parent job stops its legs too.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from jobs.common import models
from workbench.config import keys
from workbench.events.protocol import read_all
from workbench.jobkit.context import Cancelled, JobContext
from workbench.system.atomic import write_json

WAIT_POLL_S = 0.5  # how often the parent looks for a cancel while a leg runs


@dataclass
class Leg:
    """One finished leg: its folder, how it ended and its events."""

    name: str
    dir: Path
    returncode: int
    events: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        """The leg's `finished` status (ok, failed, cancelled), or `no finished event`."""
        done = [e for e in self.events if e["type"] == "finished"]
        return done[-1]["status"] if done else "no finished event (exit code %d)" % self.returncode

    @property
    def error(self) -> Optional[Dict[str, Any]]:
        """The leg's error (type, message, hint) when it did not end ok."""
        done = [e for e in self.events if e["type"] == "finished"]
        return done[-1].get("error") if done else {"type": "NoFinished", "message": self.status, "hint": None}

    def check(self, check_id: str) -> Optional[Dict[str, Any]]:
        """The leg's last check event with this id."""
        found = [e for e in self.events if e["type"] == "check" and e["id"] == check_id]
        return found[-1] if found else None

    def epochs(self) -> List[Dict[str, Any]]:
        """The leg's `epoch` events in order."""
        return [e for e in self.events if e["type"] == "epoch"]

    def step_losses(self) -> Dict[int, float]:
        """global step -> loss of every step the leg ran (from `step` and `steps` lines)."""
        out: Dict[int, float] = {}
        for e in self.events:
            if e["type"] == "step":
                out[int(e["global_step"])] = float(e["loss"])  # "nan"/"inf" strings parse too
            elif e["type"] == "steps":
                for i, loss in enumerate(e["loss"]):
                    out[int(e["global_step"]) + i] = float(loss)
        return out


def is_finite_all(values: List[float]) -> bool:
    """True when every value is finite."""
    return all(math.isfinite(v) for v in values)


def leg_config(ctx: JobContext, overrides: Dict[str, Any]) -> Dict[str, Any]:
    """The parent's config with `overrides` (dotted keys); job references made absolute for the leg's folder."""
    cfg = ctx.cfg.plain()
    if cfg["data"].get("from"):
        cfg["data"]["from"] = str(models.resolve_job_ref(ctx.dir, "data.from", cfg["data"]["from"]))
    cfg["train"]["resume_from"] = None
    for dotted, value in overrides.items():
        try:
            keys.put(cfg, dotted, value, create=False)
        except KeyError:
            raise KeyError("leg override %r: no such config key" % dotted) from None
    return cfg


def run_leg(ctx: JobContext, name: str, overrides: Dict[str, Any]) -> Leg:
    """Run `python -m jobs.train` in legs/NAME with the parent's config plus `overrides`; wait for it."""
    leg_dir = ctx.dir / "legs" / name
    leg_dir.mkdir(parents=True, exist_ok=True)
    write_json(leg_dir / "config.json", leg_config(ctx, overrides))
    write_json(
        leg_dir / "job.json",
        dict(ctx.meta, jid="%s.%s" % (ctx.meta.get("jid"), name), kind="train", leg_of=ctx.meta.get("jid")),
    )
    ctx.log(
        "leg %s: python -m jobs.train in %s (%s)"
        % (
            name,
            os.path.relpath(str(leg_dir), str(ctx.dir)),
            ", ".join("%s=%s" % kv for kv in sorted(overrides.items())),
        )
    )
    with open(str(leg_dir / "output.log"), "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jobs.train", "--job-dir", str(leg_dir)],
            cwd=str(leg_dir),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        while True:
            try:
                proc.wait(timeout=WAIT_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if ctx.cancel_requested:
                    proc.terminate()
                    proc.wait()
                    raise Cancelled("cancelled while leg %s ran" % name)
    events = read_all(str(leg_dir / "events.jsonl")) if (leg_dir / "events.jsonl").exists() else []
    leg = Leg(name, leg_dir, proc.returncode, events)
    ctx.log("leg %s: %s" % (name, leg.status))
    return leg


def leg_summary(leg: Leg) -> Dict[str, Any]:
    """What a report needs of a leg: its folder, status and error."""
    return {
        "dir": os.path.join("legs", leg.name),
        "status": leg.status,
        "error": None if leg.status == "ok" else leg.error,
    }
