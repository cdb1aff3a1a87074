"""Data-parallel training through MindSpore's `msrun`: its command line, its PATH and the checks before it.

With `train.parallel.workers` > 1 the runner starts `msrun` instead of `python -m jobs.train`.
msrun starts one scheduler and `local_workers` ranks on this node, each as
`python jobs/train/msrun_rank.py --job-dir DIR` (the launcher that runs the rank and reports how it
ended). msrun runs the `python` it finds on PATH, so the job's PATH starts with a folder whose
`python` is the configured jobs interpreter.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from workbench.system.atomic import write_text

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RANK_LAUNCHER = PROJECT_ROOT / "jobs" / "train" / "msrun_rank.py"
LOG_DIR = "msrun_logs"  # msrun's scheduler.log and worker_<rank>.log, inside the job folder
SHIM_DIR = "bin"  # job folder's bin/python: the jobs interpreter under the name msrun runs


class ParallelError(Exception):
    """A data-parallel run cannot start: msrun missing, port busy, inconsistent rank layout."""


@dataclass(frozen=True)
class MsrunPlan:
    """What the runner needs to start a data-parallel `train` job: msrun's exec line, its PATH, this node's devices."""

    argv: List[str]
    env: Dict[str, str]
    device_ids: List[int]


def plan(cfg: Dict[str, Any], python: str, job_dir: Path) -> MsrunPlan:
    """Check the layout, find msrun, write the job's `python` shim: everything the runner asks of this module, once."""
    return MsrunPlan(
        argv=msrun_argv(cfg, python, job_dir),
        env=dict(parallel_env(python, job_dir), **heartbeat_env(cfg)),
        device_ids=device_ids(cfg),
    )


def local_workers(cfg: Dict[str, Any]) -> int:
    """Ranks this node starts (`train.parallel.local_workers`, 0 meaning all of them)."""
    par = cfg["train"]["parallel"]
    return par["local_workers"] or par["workers"]


def check_layout(cfg: Dict[str, Any]) -> None:
    """Workers, local workers and node rank must describe equal nodes that msrun can number."""
    par = cfg["train"]["parallel"]
    workers, local, node_rank = par["workers"], local_workers(cfg), par["node_rank"]
    if local > workers:
        raise ParallelError(
            "train.parallel.local_workers is %d but train.parallel.workers is %d: "
            "a node cannot start more ranks than the job has" % (local, workers)
        )
    if workers % local:
        raise ParallelError(
            "train.parallel.workers is %d, not a multiple of train.parallel.local_workers %d: "
            "msrun numbers ranks as node_rank * local_workers + local rank, so every node "
            "starts the same number" % (workers, local)
        )
    nodes = workers // local
    if node_rank >= nodes:
        raise ParallelError(
            "train.parallel.node_rank is %d but %d worker(s) at %d per node make %d node(s) "
            "(node_rank 0..%d)" % (node_rank, workers, local, nodes, nodes - 1)
        )


def interpreter_path(python: str) -> str:
    """The jobs interpreter as a path (a bare name like `python3` is looked up on PATH)."""
    if os.sep in python:
        return python
    found = shutil.which(python)
    if not found:
        raise ParallelError("python: %r is not on PATH (config key 'python')" % python)
    return found


def find_msrun(python: str) -> str:
    """msrun installed with MindSpore next to the jobs interpreter, or a clear error."""
    path = interpreter_path(python)
    # The interpreter's own folder, not its resolved target: a venv's bin/python is a symlink.
    candidate = os.path.join(os.path.dirname(path), "msrun")
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    raise ParallelError(
        "train.parallel.workers > 1 needs msrun, which MindSpore installs next to its interpreter, "
        "but %s does not exist or is not executable (jobs interpreter %s, config key 'python'); "
        "install MindSpore for that interpreter or point 'python' at one that has it" % (candidate, path)
    )


def is_local_address(addr: str) -> bool:
    """True when `addr` is an address of this machine (msrun then starts the scheduler here)."""
    try:
        infos = socket.getaddrinfo(addr, None, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ParallelError("train.parallel.master_addr %r does not resolve: %s" % (addr, exc))
    for family, _, _, _, sockaddr in infos:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((sockaddr[0], 0))
                return True
            except OSError as exc:
                if exc.errno != errno.EADDRNOTAVAIL:
                    raise
    return False


def check_port_free(addr: str, port: int) -> None:
    """Fail naming the port when something already listens on master_addr:master_port."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Like the scheduler's own listener: a port left in TIME_WAIT by an earlier run is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((addr, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ParallelError(
                    "train.parallel.master_port %d is already in use on %s (train.parallel.master_addr): "
                    "msrun's scheduler must listen there; stop what holds it or choose another port with "
                    "--set train.parallel.master_port=N" % (port, addr)
                )
            raise ParallelError(
                "train.parallel.master_port %d on %s cannot be bound: %s" % (port, addr, exc.strerror or exc)
            )


def check_master(cfg: Dict[str, Any]) -> bool:
    """Check the scheduler's address and port; return True when the scheduler runs on this node."""
    par = cfg["train"]["parallel"]
    addr, port = par["master_addr"], par["master_port"]
    if port < 1024:
        raise ParallelError("train.parallel.master_port is %d; msrun accepts 1024..65535" % port)
    local = is_local_address(addr)
    if local:
        check_port_free(addr, port)
    elif local_workers(cfg) == par["workers"]:
        raise ParallelError(
            "train.parallel.master_addr %r is not an address of this machine, but all %d ranks "
            "run here (local_workers = workers), so no node would start the scheduler; "
            "use 127.0.0.1" % (addr, par["workers"])
        )
    return local


def msrun_argv(cfg: Dict[str, Any], python: str, job_dir: Path) -> List[str]:
    """The exec line of a data-parallel `train` job: msrun with this node's share of the ranks."""
    par = cfg["train"]["parallel"]
    check_layout(cfg)
    msrun = find_msrun(python)
    check_master(cfg)
    job_dir = Path(job_dir)
    return [
        msrun,
        "--worker_num=%d" % par["workers"],
        "--local_worker_num=%d" % local_workers(cfg),
        "--master_addr=%s" % par["master_addr"],
        "--master_port=%d" % par["master_port"],
        "--node_rank=%d" % par["node_rank"],
        "--log_dir=%s" % (job_dir / LOG_DIR),
        "--join=True",
        str(RANK_LAUNCHER),
        "--job-dir",
        str(job_dir),
    ]


def write_python_shim(python: str, job_dir: Path) -> Path:
    """job_dir/bin/python: a two-line script that execs the jobs interpreter (msrun runs `python`).

    A script, not a symlink: a venv interpreter reached through a symlink in another folder
    would not find its pyvenv.cfg, hence not its site-packages.
    """
    path = Path(job_dir) / SHIM_DIR / "python"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, '#!/bin/sh\nexec %s "$@"\n' % shlex.quote(os.path.abspath(interpreter_path(python))))
    path.chmod(0o755)
    return path


def parallel_env(python: str, job_dir: Path, base_path: Optional[str] = None) -> Dict[str, str]:
    """The PATH of a data-parallel job: the job's bin/ (its `python`) first, then the caller's PATH."""
    shim = write_python_shim(python, job_dir)
    rest = os.environ.get("PATH", "") if base_path is None else base_path
    return {"PATH": os.pathsep.join(p for p in (str(shim.parent), rest) if p)}


def heartbeat_env(cfg: Dict[str, Any], environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """MS_NODE_TIMEOUT for msrun's cluster: a third of limits.stall_s, 10 to 30 s (MindSpore's own is 30 s).

    The scheduler names a lost node only when its heartbeat times out; a third of the stall
    limit lets the job end naming it before the stall watchdog would fire. Not set when the
    environment already has it or the watchdog is off.
    """
    environ = os.environ if environ is None else environ
    stall_s = float(cfg["limits"]["stall_s"] or 0)
    if "MS_NODE_TIMEOUT" in environ or stall_s <= 0:
        return {}
    return {"MS_NODE_TIMEOUT": str(int(max(10.0, min(30.0, stall_s // 3))))}


def device_ids(cfg: Dict[str, Any]) -> List[int]:
    """Device ids this node's ranks use: msrun gives each rank DEVICE_ID = its local rank."""
    return list(range(local_workers(cfg)))
