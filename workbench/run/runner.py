"""Starts jobs under a supervisor and cancels them; the UI and the CLI both use it."""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from workbench import __version__
from workbench.config.layers import dump
from workbench.run.device import DEVICE_JOBS, lock_name, resolve
from workbench.run.locks import run_key
from workbench.session import candidate
from workbench.session.imported import imported_mark
from workbench.session.store import CannotWrite, SessionStore, job_status
from workbench.system import monotonic
from workbench.system.atomic import read_json, write_json, write_text
from workbench.system.childproc import group_alive, pid_running, stop_group

if TYPE_CHECKING:  # the plan's type only: msrun is imported where a plan is made
    from workbench.run.msrun import MsrunPlan

PROJECT_ROOT = Path(__file__).resolve().parents[2]
JOB_KINDS = (
    "env",
    "data",
    "train",
    "test",
    "align",
    "export",
    "overfit",
    "resume",
    "precision",
    "drill",
    "shift",
    "numerics",
)
ALIGN_PATHS = ("reference", "candidate")
LOCK_DIR_ENV = "MS_WORKBENCH_LOCK_DIR"
# The key naming the weights a job looks at; unset, the runner puts the session's candidate there.
WEIGHTS_KEYS = {"test": ("test", "from"), "align": ("align", "weights_from"), "export": ("export", "from")}


def lock_dir() -> Path:
    """The machine-wide folder of device locks, shared by every sessions root.

    $MS_WORKBENCH_LOCK_DIR (tests), else /run/lock/ms-workbench (a tmpfs emptied at boot, where
    Linux keeps lock files), else <tempdir>/ms-workbench-locks. Never per user or per sessions
    root: two workbenches on one board must see each other's locks.
    """
    explicit = os.environ.get(LOCK_DIR_ENV)
    if explicit:
        return Path(explicit)
    if os.path.isdir("/run/lock") and os.access("/run/lock", os.W_OK | os.X_OK):
        return Path("/run/lock/ms-workbench")
    import tempfile

    return Path(tempfile.gettempdir()) / "ms-workbench-locks"


class RunnerError(Exception):
    """A job could not be started (unknown kind, bad interpreter, a data-parallel layout msrun cannot run)."""


def decide_device(section: Mapping[str, Any], decided: Optional[Dict[str, Dict[str, Any]]] = None) -> Dict[str, Any]:
    """A configured {target, id} decided: {target (what runs), id, requested, why}; `auto` by detection.

    `decided` carries the decisions already made for this job, so one start detects at most once.
    """
    requested = section["target"]
    memo = {} if decided is None else decided
    if requested not in memo:
        memo[requested] = resolve(requested, section["id"])  # workbench.run.device owns the rule
    found = memo[requested]
    return {"target": found["resolved"], "id": section["id"], "requested": requested, "why": found["why"]}


def device_record(device: Mapping[str, Any]) -> Dict[str, Any]:
    """job.json's (and the `started` event's) device: the decision, plus `resolved`, the protocol's name for target."""
    return dict(device, resolved=device["target"])


def effective_config(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of `cfg` with every device target decided (`device` and both align paths): what the job reads.

    Each decided section keeps its `requested` value and the reason (`why`), so config.json and
    config.yaml say what was asked and what runs.
    """
    out = copy.deepcopy(cfg)
    decided: Dict[str, Dict[str, Any]] = {}
    out["device"] = decide_device(cfg["device"], decided)
    for role in ALIGN_PATHS:
        out["align"][role] = dict(cfg["align"][role], **decide_device(cfg["align"][role], decided))
    return out


def with_candidate(
    store: SessionStore, sid: str, kind: str, cfg: Dict[str, Any]
) -> Tuple[Dict[str, Any], Optional[candidate.Candidate]]:
    """The config a test, align or export job runs with: an unset weights key names the session's candidate
    (its run, and for align its model), so the job records which checkpoint it used. RunnerError, naming the
    freeze command, when none is frozen."""
    if kind not in WEIGHTS_KEYS:
        return cfg, None
    section, key = WEIGHTS_KEYS[kind]
    if cfg[section].get(key):
        return cfg, None
    cand = candidate.current(store.session_dir(sid))
    if cand is None:
        other = (
            "--set test.from=<train job> to test another run"
            if kind == "test"
            else "--set %s.%s=init for initial weights (never counted for acceptance)" % (section, key)
        )
        raise RunnerError(
            "%s.%s is not set and session %s has no frozen candidate: freeze one first with `%s` "
            "(the newest training run that ended ok, its best checkpoint), or %s"
            % (section, key, sid, store.command("freeze", sid), other)
        )
    out = copy.deepcopy(cfg)
    out[section][key] = cand.run
    if kind == "align":  # both sides build the candidate's network, whatever the config's model section says
        run_dir = (store.session_dir(sid) / cand.checkpoint).parent.parent
        try:
            model = read_json(run_dir / "config.json").get("model") or {}
        except (OSError, ValueError, AttributeError):
            model = {}  # the align job then names the mismatch, if any
        out["model"].update({k: model[k] for k in ("name", "hidden") if k in model})
    return out, cand


def needs_device(kind: str, cfg: Dict[str, Any]) -> bool:
    """Device jobs take the per-device lock."""
    return kind in DEVICE_JOBS or (kind == "drill" and bool(cfg["drill"]["device"]))


def is_data_parallel(kind: str, cfg: Dict[str, Any]) -> bool:
    """True for a `train` job that msrun runs as several ranks."""
    return kind == "train" and cfg["train"]["parallel"]["workers"] > 1


def device_targets(kind: str, cfg: Dict[str, Any], msrun_device_ids: Sequence[int] = ()) -> List[tuple]:
    """The devices a job of an effective config will touch: its own, a rank's each, or both alignment paths."""
    if kind == "align":
        return sorted({(cfg["align"][role]["target"], cfg["align"][role]["id"]) for role in ALIGN_PATHS})
    device = cfg["device"]
    if is_data_parallel(kind, cfg) and device["target"] != "CPU":
        return [(device["target"], i) for i in msrun_device_ids]  # msrun gives each local rank its own device
    return [(device["target"], device["id"])]


def shared_by(kind: str, cfg: Dict[str, Any]) -> Dict[str, str]:
    """{"share": run key} for a node of a multi-node training run (its nodes share a device), else {}."""
    key = run_key(cfg) if kind == "train" else None
    return {"share": key} if key else {}


def job_argv(kind: str, python: str, job_dir: Path, msrun: Optional[MsrunPlan] = None) -> List[str]:
    """The exec line of a job (msrun's, for data-parallel training)."""
    if msrun is not None:
        return msrun.argv
    return [python, "-m", "jobs.%s" % kind, "--job-dir", str(job_dir)]


HOLDER_PID = re.compile(r"\(pid (\d+)\)")


def lock_holder(lock_path: Path) -> Optional[str]:
    """Who holds a device lock now, read from the holder's line (no flock is taken: a probe must not refuse a job).

    None when the file is missing, names no pid, or its pid no longer runs; the supervisor's flock stays the rule.
    """
    try:
        text = lock_path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    found = HOLDER_PID.search(text)
    return text if found and pid_running(int(found.group(1))) else None


class JobRunner:
    """Creates job folders, starts supervisors in their own sessions, and stops jobs."""

    def __init__(self, store: SessionStore):
        self.store = store

    @staticmethod
    def device_held(kind: str, cfg: Dict[str, Any]) -> Optional[str]:
        """Why a job would be refused at once (its device is held by a running job), None when it may start."""
        if kind not in JOB_KINDS:
            return None
        cfg = effective_config(cfg)
        if not needs_device(kind, cfg) or is_data_parallel(kind, cfg):
            return None
        for target, device_id in device_targets(kind, cfg):
            holder = lock_holder(lock_dir() / lock_name(target, device_id))
            if holder is not None:
                return "device %s:%d is held by %s" % (target, device_id, holder)
        return None

    def start(self, sid: str, kind: str, cfg: Dict[str, Any], command: Optional[List[str]] = None) -> Path:
        """Start a job; return its folder at once (the job runs on without us)."""
        if kind not in JOB_KINDS:
            raise RunnerError("unknown job %r (known: %s)" % (kind, ", ".join(JOB_KINDS)))
        if imported_mark(self.store.session_dir(sid)) is not None:
            raise RunnerError(
                "session %s is an imported record (read-only): run jobs in a session of your own; "
                "refer to its runs as %s/<job id>" % (sid, sid)
            )
        cfg, chosen = with_candidate(self.store, sid, kind, cfg)  # before any folder: a refusal leaves no trace
        python = cfg.get("python") or os.environ.get("MS_WORKBENCH_PYTHON") or sys.executable
        if os.sep in python and not os.access(python, os.X_OK):
            raise RunnerError("python: %r is not an executable interpreter (config key 'python')" % python)
        job_dir = self.store.new_job_dir(sid, kind)
        cfg = effective_config(cfg)  # the one place a job's device is decided
        msrun = None
        if is_data_parallel(kind, cfg):
            from workbench.run.msrun import ParallelError  # here: the UI's start imports the runner, never plans msrun
            from workbench.run.msrun import plan as plan_msrun

            try:
                msrun = plan_msrun(cfg, python, job_dir)
            except ParallelError as exc:
                raise RunnerError(str(exc)) from exc
        locks = []
        if needs_device(kind, cfg):
            for target, device_id in device_targets(kind, cfg, msrun.device_ids if msrun else ()):
                locks.append(
                    dict(
                        {
                            "path": str(lock_dir() / lock_name(target, device_id)),
                            "device": "%s:%d" % (target, device_id),
                        },
                        **shared_by(kind, cfg),
                    )
                )
        env = {
            "PYTHONPATH": os.pathsep.join(p for p in [str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")] if p),
            "PYTHONUNBUFFERED": "1",
            "GLOG_v": str(cfg["glog_v"]),
        }
        if msrun is not None:
            env.update(msrun.env)  # msrun starts the `python` on PATH
        spec = {
            "jid": job_dir.name,
            "kind": kind,
            "session": sid,
            "seq": self.store.next_job_seq(sid),  # start order within the session, whatever the clock says
            "created": time.time(),
            "created_monotonic": monotonic.stamp(),  # how long it runs, whatever the wall clock does
            "command": command or [],
            "version": __version__,
            "python": python,
            "device": device_record(cfg["device"]),
            "argv": job_argv(kind, python, job_dir, msrun),
            "env": env,
            "locks": locks,
            "timeout_s": cfg["limits"]["job_timeout_s"],
            "stall_s": cfg["limits"]["stall_s"],
            "grace_s": cfg["limits"]["grace_s"],
        }
        if chosen is not None:
            spec["candidate"] = chosen.as_dict()  # the freeze this job's weights key was filled from
        try:
            write_text(job_dir / "config.yaml", dump(cfg))
            write_json(job_dir / "config.json", cfg)
            write_json(job_dir / "job.json", spec)
        except OSError as exc:  # a full disk: no job folder is left that looks like a job
            shutil.rmtree(str(job_dir), ignore_errors=True)
            raise CannotWrite("cannot write job %s in session %s (%s): %s" % (job_dir.name, sid, job_dir, exc))
        with open(job_dir / "supervisor.log", "ab") as log:
            subprocess.Popen(
                [sys.executable, "-m", "workbench.run.supervise", "--job-dir", str(job_dir)],
                cwd=str(job_dir),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
                env=dict(os.environ, PYTHONPATH=env["PYTHONPATH"]),
            )
        return job_dir

    @staticmethod
    def cancel(job_dir: Path) -> bool:
        """Ask the supervisor to stop the job (it escalates to SIGKILL); False if nothing runs."""
        job_dir = Path(job_dir)
        deadline = time.time() + 5
        while not (job_dir / "pids.json").exists():
            if (job_dir / "exit.json").exists() or time.time() > deadline:
                return False
            time.sleep(0.05)
        if (job_dir / "exit.json").exists():
            return False  # it has ended: its pids may belong to other processes by now
        pids = read_json(job_dir / "pids.json")
        if pid_running(pids.get("supervisor")):  # a zombie supervisor would take the signal and do nothing
            try:
                os.kill(pids["supervisor"], signal.SIGTERM)
                return True
            except ProcessLookupError:
                pass
        try:  # supervisor gone: stop the job's group ourselves, SIGKILL after the grace period
            grace_s = float(read_json(job_dir / "job.json").get("grace_s") or 5)
        except (OSError, ValueError):
            grace_s = 5.0
        if not group_alive(pids["pgid"]):
            return False
        # Off the caller's thread (the TUI must not freeze for grace_s); not a daemon, so a CLI
        # that exits right after still waits for the SIGKILL.
        threading.Thread(target=stop_group, args=(pids["pgid"], grace_s), name="stop-orphaned-job").start()
        return True

    @staticmethod
    def wait(job_dir: Path, timeout_s: Optional[float] = None, poll_s: float = 0.1) -> bool:
        """Wait until exit.json exists; False on timeout."""
        deadline = None if timeout_s is None else time.time() + timeout_s
        while not (Path(job_dir) / "exit.json").exists():
            if deadline is not None and time.time() > deadline:
                return False
            if job_status(Path(job_dir)).state != "running":
                return True
            time.sleep(poll_s)
        return True
