"""The device probes: each op in its own process with its own time limit, judged from what it fetched back."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from jobs.common.msdevice import explain_error, ms_role_warning
from jobs.env.common import read_text, tail
from workbench.ascend import cann as cannmod
from workbench.events.protocol import Evidence
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext
from workbench.run.device import device_nodes
from workbench.system.atomic import read_json
from workbench.system.childproc import run_child

SET_ENV_MISSING = "set_env.sh not sourced"
PROBE_OPS = ("add-fp32", "matmul-fp16", "matmul-fp32")
TICK_EVERY_S = 10.0


class DeviceProbes:
    """Runs the probe ops on the resolved device, one process each, and emits one `probe-<op>` check per op."""

    def __init__(self, ctx: JobContext, cfg: JobConfig):
        self.ctx = ctx
        self.env = cfg.env
        self.timeout_s = cfg.limits.probe_timeout_s
        self.target: str = ctx.device["resolved"]
        self.device_id: int = ctx.device["id"]

    def preconditions(self, cann: Dict[str, Any], set_env: Dict[str, Any]) -> List[str]:
        """What a probe on the resolved target needs and this machine lacks (Ascend: a device node, CANN, set_env)."""
        missing = []
        if self.target == "Ascend":
            if not device_nodes(self.env.root):
                missing.append("no /dev/davinci* device node visible (under %s)" % self.env.root)
            if not cann["found"]:
                missing.append(
                    "CANN toolkit not found (%d places looked at, see CANN toolkit)" % len(cann["looked_at"])
                )
            if not set_env["sourced"]:
                missing.append("%s (%s)" % (SET_ENV_MISSING, "; ".join(set_env["missing"][:3])))
        return missing

    def run(self, cann: Dict[str, Any], set_env: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Each probe in its own subprocess with its own time limit; a crash or hang stops nothing."""
        results = []
        if not self.env.probes:
            for op in PROBE_OPS:
                results.append(
                    self.emit(op, Evidence.NOT_RUN, "env.probes is false: no device op was run", {"op": op}, None)
                )
            return results
        missing = self.preconditions(cann, set_env)
        selection_failed: Optional[Dict[str, Any]] = None
        probe_dir = self.ctx.dir / "probes"
        probe_dir.mkdir(exist_ok=True)
        (self.ctx.artifacts / "probes").mkdir(exist_ok=True)
        for n, op in enumerate(PROBE_OPS):
            self.ctx.raise_if_cancelled()
            if selection_failed is not None:
                detail = "not started: selecting %s:%d failed in probe %s (%s)" % (
                    self.target,
                    self.device_id,
                    selection_failed["op"],
                    selection_failed["first_line"],
                )
                results.append(
                    self.emit(
                        op,
                        Evidence.BLOCKED,
                        detail,
                        {"op": op, "after": selection_failed["op"]},
                        selection_failed.get("hint"),
                    )
                )
                continue
            self.ctx.progress(
                n, len(PROBE_OPS), "probes", phase="probe %s on %s:%d" % (op, self.target, self.device_id)
            )
            outcome = self.run_one(op, probe_dir)
            verdict = self.judge(op, outcome, missing)
            results.append(verdict)
            if outcome["result"] is not None and (outcome["result"].get("error") or {}).get("stage") == "set-device":
                message = str(outcome["result"]["error"].get("message") or "")
                selection_failed = {"op": op, "first_line": ms_words(message), "hint": verdict.get("hint")}
        self.ctx.progress(len(PROBE_OPS), len(PROBE_OPS), "probes", phase="probes done")
        return results

    def run_one(self, op: str, probe_dir: Path) -> Dict[str, Any]:
        """Start one probe process and wait for it (timeout: limits.probe_timeout_s)."""
        out_json = self.ctx.artifacts / "probes" / ("%s.json" % op)
        stdout, stderr = probe_dir / ("%s.stdout.log" % op), probe_dir / ("%s.stderr.log" % op)
        argv = [
            sys.executable,
            "-m",
            self.env.probe_module,
            "--target",
            self.target,
            "--id",
            str(self.device_id),
            "--op",
            op,
            "--out",
            str(out_json),
        ]
        timeout_s = self.timeout_s
        last = {"t": time.monotonic()}

        def tick(elapsed_s: float) -> None:
            if time.monotonic() - last["t"] >= TICK_EVERY_S:  # keeps the stall watchdog informed
                last["t"] = time.monotonic()
                self.ctx.log("probe %s still running after %.0f s (limit %.0f s)" % (op, elapsed_s, timeout_s))

        run_info = run_child(
            argv,
            timeout_s,
            str(probe_dir),
            str(stdout),
            str(stderr),
            should_stop=lambda: self.ctx.cancel_requested,
            tick=tick,
        )
        result = None
        if out_json.is_file():
            try:
                result = read_json(out_json)
                self.ctx.artifact(out_json, "probe")
            except (OSError, ValueError):
                result = None
        return {
            "run": run_info,
            "result": result,
            "argv": argv,
            "stderr": tail(read_text(stderr)),
            "stdout": tail(read_text(stdout), 1000),
            "timeout_s": timeout_s,
        }

    def judge(self, op: str, outcome: Dict[str, Any], missing: List[str]) -> Dict[str, Any]:
        """Turn a probe's process outcome and JSON into a verdict and its check."""
        run_info, result = outcome["run"], outcome["result"]
        message = str(((result or {}).get("error") or {}).get("message") or "")
        # raw: MindSpore's whole message (multi-line, readable), then what the probe printed
        raw = "\n\n".join(part for part in (message, outcome["stdout"].strip(), outcome["stderr"].strip()) if part)
        evidence = {
            "op": op,
            "target": self.target,
            "id": self.device_id,
            "result": result,
            "process": run_info,
            "module": self.env.probe_module,
            "raw": raw,
        }
        if run_info["stopped"]:
            self.ctx.raise_if_cancelled()
        if result is None:
            detail, hint = no_result(outcome)
            return self.emit(op, Evidence.FAIL, detail, evidence, hint, run_info=run_info)
        error = result.get("error") or {}
        message = str(error.get("message") or "no error text")
        if result.get("status") == Evidence.PASS:
            dev = result.get("device") or {}
            detail = (
                "max abs diff %.3g (atol %g, rtol %g) on %s %s fetched with .asnumpy(); MindSpore reports %s:%s"
                % (
                    result["max_abs_diff"],
                    result["atol"],
                    result["rtol"],
                    "×".join(map(str, result.get("shape") or [])),
                    result.get("dtype"),
                    dev.get("target"),
                    dev.get("device_id"),
                )
            )
            if str(dev.get("target")) != self.target:
                return self.emit(
                    op,
                    Evidence.FAIL,
                    "asked for %s but MindSpore reports %s: %s" % (self.target, dev.get("target"), detail),
                    evidence,
                    ms_role_warning() or "the op did not run on the asked-for device",
                    result=result,
                    run_info=run_info,
                )
            return self.emit(op, Evidence.PASS, detail, evidence, None, result=result, run_info=run_info)
        hint = error.get("hint") or explain_error(message)
        libraries = ""
        if error.get("stage") == "set-device":
            missing, libraries = self.libraries_named(message, missing)
            evidence["libraries"] = libraries or None
        if error.get("stage") == "set-device" and missing:
            detail = "precondition missing: %s. MindSpore says: %s%s" % (
                "; ".join(missing),
                ms_words(message),
                ". Libraries: " + libraries if libraries else "",
            )
            return self.emit(
                op, Evidence.BLOCKED, detail, dict(evidence, missing=missing), hint, result=result, run_info=run_info
            )
        detail = "failed at %s: %s%s" % (
            error.get("stage"),
            ms_words(message),
            ". Libraries: " + libraries if libraries else "",
        )
        return self.emit(op, Evidence.FAIL, detail, evidence, hint, result=result, run_info=run_info)

    def libraries_named(self, message: str, missing: List[str]) -> Tuple[List[str], str]:
        """(missing, detail) once the libraries a set-device error names are located.

        When every library the error names is reachable, the failure is not a missing search
        path, so "set_env.sh not sourced" is no explanation for it and is dropped.
        """
        lib = cannmod.libraries_in_error(message, os.environ, self.env.root)
        if not lib["named"]:
            return missing, ""
        if not lib["unreachable"]:
            missing = [m for m in missing if not m.startswith(SET_ENV_MISSING)]
        return missing, lib["detail"]

    def emit(
        self,
        op: str,
        status: str,
        detail: str,
        evidence: Dict[str, Any],
        hint: Optional[str],
        result: Optional[Dict[str, Any]] = None,
        run_info: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Emit a probe's check; return its summary row."""
        self.ctx.check(
            "probe-" + op,
            "Probe %s" % op.replace("-", " "),
            status,
            detail,
            evidence=evidence,
            hint=hint,
            group="probes",
        )
        result = result or {}
        run_info = run_info or {}
        return {
            "op": op,
            "target": self.target,
            "id": self.device_id,
            "verdict": status,
            "detail": detail,
            "hint": hint,
            "max_abs_diff": result.get("max_abs_diff"),
            "atol": result.get("atol"),
            "rtol": result.get("rtol"),
            "shape": result.get("shape"),
            "dtype": result.get("dtype"),
            "device": result.get("device"),
            "elapsed_s": result.get("elapsed_s", run_info.get("elapsed_s")),
            "error": (result.get("error") or {}).get("message"),
            "returncode": run_info.get("returncode"),
            "signal": run_info.get("signal"),
            "timed_out": run_info.get("timed_out", False),
        }


def no_result(outcome: Dict[str, Any]) -> Tuple[str, Optional[str]]:
    """(detail, hint) for a probe process that wrote no result: hung, crashed, or exited early."""
    run_info = outcome["run"]
    if run_info["timed_out"]:
        return (
            ("hung: no result within %.0f s; the probe's process group was killed" % outcome["timeout_s"]),
            "a device op that never returns: look for another process holding the device "
            "(npu-smi info), then run the probes alone (p on the Environment screen)",
        )
    stderr = outcome["stderr"]
    if run_info["signal"]:
        return (
            "crashed: %s (return code %s) before writing a result" % (run_info["signal"], run_info["returncode"]),
            explain_error(stderr)
            if stderr.strip()
            else "a process-level crash in the device stack: read the probe's stderr.log; retry once to see if it repeats",
        )
    return (
        "exited with status %s without writing a result" % run_info["returncode"],
        explain_error(stderr) if stderr.strip() else None,
    )


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of an error (MindSpore's own words first), shortened."""
    text = str(text)
    if text.startswith("cannot use device ") and ": " in text:
        text = text.split(": ", 1)[1]  # msdevice's prefix; the asked-for device is in the detail already
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit] + " ..."
    return ""


def ms_words(message: str, limit: int = 160) -> str:
    """MindSpore's first line, plus its first 'Load dynamic library' line (which names the missing library)."""
    words = first_line(message, limit)
    for line in str(message).splitlines():
        if line.startswith("Load dynamic library"):
            return "%s | %s" % (words, line.strip()[:limit])
    return words
