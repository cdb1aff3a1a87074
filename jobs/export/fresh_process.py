"""The fresh-process loads: start `jobs.export.loader` with exec, and judge how the process ended."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from jobs.export.common import DEVICE_CONTEXT_NOTE, EXPORT_MODE
from jobs.export.state import ExportRun
from workbench.events.protocol import Evidence
from workbench.system.atomic import read_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOADER_MODULE = "jobs.export.loader"


def run_loader(run: ExportRun, name: str, what: str, args: List[str]) -> Dict[str, Any]:
    """Run the loader in a new process (exec); return its report plus how the process ended."""
    run.loads.mkdir(exist_ok=True)
    report_path = run.loads / ("%s.json" % name)
    argv = [
        sys.executable,
        "-m",
        LOADER_MODULE,
        what,
        "--out",
        str(report_path),
        "--target",
        run.target,
        "--device-id",
        str(run.device_id),
        "--ms-mode",
        EXPORT_MODE,
    ] + args
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    timeout_s = run.cfg.limits.probe_timeout_s
    t0 = time.perf_counter()
    outcome: Dict[str, Any] = {"argv": argv, "timeout_s": timeout_s, "timed_out": False}
    with (
        open(str(run.loads / ("%s.stdout.log" % name)), "wb") as out,
        open(str(run.loads / ("%s.stderr.log" % name)), "wb") as err,
    ):
        try:
            proc = subprocess.run(
                argv, cwd=str(run.loads), env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout_s
            )
            outcome["returncode"] = proc.returncode
        except subprocess.TimeoutExpired:
            outcome.update(timed_out=True, returncode=None)
    outcome["wall_s"] = time.perf_counter() - t0
    try:
        report = read_json(report_path)
    except (OSError, ValueError):
        report = None
    outcome["report"] = report
    outcome["report_path"] = os.path.relpath(str(report_path), str(run.ctx.dir))
    outcome["stderr_tail"] = tail(run.loads / ("%s.stderr.log" % name))
    pid = (report or {}).get("pid")
    outcome["pids"] = {"job": os.getpid(), "loader": pid, "loader_parent": (report or {}).get("ppid")}
    run.loaders[name] = {
        "pid": pid,
        "returncode": outcome.get("returncode"),
        "wall_s": outcome["wall_s"],
        "timed_out": outcome["timed_out"],
        "report": outcome["report_path"],
    }
    loader_device_check(run, name, report)
    return outcome


def loader_evidence(outcome: Dict[str, Any], file: str) -> Dict[str, Any]:
    """What a load check shows of its loader run: the pids, its report, its wall time and the file it loaded."""
    return {"pids": outcome["pids"], "report": outcome["report_path"], "wall_s": outcome["wall_s"], "file": file}


def loader_device_check(run: ExportRun, name: str, report: Optional[Dict[str, Any]]) -> None:
    """`effective-config.<loader>`: what MindSpore in the fresh process reports (target, id, mode)."""
    device = (report or {}).get("device") or {}
    eff = device.get("effective")
    if not eff:
        return  # the loader never set a MindSpore device (Lite, or it failed before): its own check says so
    want = {"target": run.target, "device_id": run.device_id, "mode": EXPORT_MODE}
    # str() on both sides: MindSpore may report the id as text and the mode as a constant's name.
    wrong = [
        "%s: asked %s, MindSpore reports %s" % (k, v, eff.get(k)) for k, v in want.items() if str(eff.get(k)) != str(v)
    ]
    evidence = {
        "requested": want,
        "observed": eff,
        "pid": (report or {}).get("pid"),
        "set_with": device.get("set_with"),
    }
    title = "effective config (%s loader)" % name
    if wrong:
        run.check(
            "effective-config." + name,
            title,
            Evidence.FAIL,
            "; ".join(wrong),
            evidence,
            hint="the load did not run where asked: its outputs prove nothing",
        )
    else:
        run.check(
            "effective-config." + name,
            title,
            Evidence.PASS,
            "MindSpore in loader pid %s reports %s:%s, %s mode"
            % (evidence["pid"], eff.get("target"), eff.get("device_id"), eff.get("mode")),
            evidence,
        )


def tail(path: Path, max_bytes: int = 8192) -> str:
    """The end of a log file as text."""
    try:
        with open(str(path), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - max_bytes))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def not_fresh(outcome: Dict[str, Any], what: str) -> Optional[str]:
    """Why a load did not happen in a new child process of this job (None when it did)."""
    pids = outcome["pids"]
    if outcome["report"] is None or (pids["loader"] != pids["job"] and pids["loader_parent"] == pids["job"]):
        return None
    return "%s ran in process %s (parent %s), not in a new child of this job (%s): the check proves nothing" % (
        what,
        pids["loader"],
        pids["loader_parent"],
        pids["job"],
    )


def loader_problem(outcome: Dict[str, Any], what: str) -> Optional[Tuple[str, str, Optional[str]]]:
    """(status, detail, hint) when the loader process itself did not run to the end, else None."""
    report = outcome["report"]
    if outcome["timed_out"]:
        return (
            Evidence.BLOCKED,
            "%s did not return within %.0f s (limits.probe_timeout_s); killed" % (what, outcome["timeout_s"]),
            DEVICE_CONTEXT_NOTE,
        )
    if report is None:
        return (
            Evidence.FAIL,
            "%s ended with return code %s and wrote no report; stderr: %s"
            % (what, outcome.get("returncode"), outcome["stderr_tail"][-400:].strip()),
            None,
        )
    if not report.get("done"):
        code = outcome.get("returncode")
        how = ("killed by signal %d" % -code) if isinstance(code, int) and code < 0 else "return code %s" % code
        return (
            Evidence.FAIL,
            "%s stopped before finishing (%s); steps done: %d" % (what, how, len(report.get("steps") or [])),
            None,
        )
    return None


def where(outcome: Dict[str, Any]) -> str:
    """'in process <loader> (this job: <job>)' for a check's detail."""
    return "in process %s (this job: %s)" % (outcome["pids"]["loader"], outcome["pids"]["job"])
