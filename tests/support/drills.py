"""Drill jobs started through the real CLI, and what their folders and processes show."""

from __future__ import annotations

from pathlib import Path
from typing import List

from workbench.events.protocol import read_all
from workbench.system import childproc
from workbench.system.atomic import read_json


def sets(*items: str) -> List[str]:
    """--set arguments for each key=value."""
    out: List[str] = []
    for item in items:
        out += ["--set", item]
    return out


def newest_job(root: Path) -> Path:
    """The most recently created job folder under a sessions root."""
    dirs = list(Path(root).glob("*/jobs/*"))
    assert dirs, "no job folder under %s" % root
    return max(dirs, key=lambda p: (read_json(p / "job.json")["created"], p.name))


def start_detached(run_cli, sessions: Path, *items: str, extra=()) -> Path:
    """Start a drill with --detach and return its job folder."""
    proc = run_cli("run", "drill", "--detach", "--sessions", sessions, *sets(*items), *extra, timeout=30)
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(proc.stdout.strip())
    assert (job_dir / "job.json").is_file(), proc.stdout
    return job_dir


def types(job_dir: Path) -> List[str]:
    """Event types of a job, in order."""
    return [e["type"] for e in read_all(str(job_dir / "events.jsonl"))]


def pid_running(pid: int) -> bool:
    """True while the process exists and is not a zombie (nothing here reaps orphans)."""
    return childproc.pid_running(pid)


def live_group_members(pgid: int) -> List[int]:
    """Processes of a group that still run (zombies excluded)."""
    return childproc.group_members(pgid)


def step_count(job_dir: Path) -> int:
    """Steps written so far."""
    return sum(1 for t in types(job_dir) if t == "step")
