"""The `env` job: is the stack what we think it is, and does the device really compute?

One `check` event per item (interpreter, packages, CANN, driver, firmware, pairing, npu-smi,
visible devices, settings, device probes), each with an evidence level, its evidence and a
hint when it fails; then a `result` summary and the `env-report.json` artifact.

This process never imports mindspore: versions and paths are read from files, and every
device probe runs in its own subprocess (python -m jobs.probe), started before anything else
touches the device. The job fails (exit 1) when a device probe fails or is blocked; other
failed checks are reported without failing it.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench import envvars, pkgscan
from workbench.ascend import cann as cannmod
from workbench.ascend import npusmi, pairing, visible
from workbench.atomic import read_json, write_json, write_text
from workbench.childproc import run_child
from workbench.device import detect
from workbench.jobkit import JobContext, JobFailed, run

from jobs.msdevice import SERVER_ROLES, explain_error, ms_role_warning

PROBE_OPS = ("add-fp32", "matmul-fp16", "matmul-fp32")
OPTIONAL_PACKAGES = ("mindspore_lite", "mindnlp", "textual")
USUAL_NPU_SMI = ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi", "/usr/bin/npu-smi")
GLOG_NAMES = ("GLOG_v", "GLOG_logtostderr", "GLOG_stderrthreshold", "GLOG_log_dir",
              "ASCEND_GLOBAL_LOG_LEVEL", "ASCEND_SLOG_PRINT_TO_STDOUT")
GLOG_MEANING = {"0": "DEBUG and up", "1": "INFO and up", "2": "WARNING and up", "3": "ERROR and up",
                "4": "CRITICAL only"}
RAW_TAIL_CHARS = 4000
TICK_EVERY_S = 10.0
# Run by the job's own interpreter for `python3`/`python` on PATH: what it is and which MindSpore it sees.
PEEK = ("import importlib.util, json, sys\n"
        "try:\n from importlib import metadata\n v = metadata.version('mindspore')\nexcept Exception:\n v = None\n"
        "s = importlib.util.find_spec('mindspore')\n"
        "o = (list(s.submodule_search_locations or [None])[0] if s and s.submodule_search_locations else "
        "(s.origin if s else None))\n"
        "print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix, 'version': sys.version.split()[0], "
        "'mindspore_path': o, 'mindspore_version': v}))\n")


def tail(text: str, limit: int = RAW_TAIL_CHARS) -> str:
    """The end of a long text (where the error is)."""
    return text if len(text) <= limit else "...\n" + text[-limit:]


def read_text(path: Path) -> str:
    """A file's text, or '' when missing."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


class EnvJob:
    """Runs the checks in order and collects the summary."""

    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.cfg = ctx.cfg["env"]
        self.root = self.cfg["root"]
        self.target = str(ctx.device["resolved"])
        self.device_id = int(ctx.device["id"])
        self.summary: Dict[str, Any] = {}
        self.checks: List[Dict[str, Any]] = []

    def check(self, id_: str, title: str, status: str, detail: str, evidence: Any = None,
              hint: Optional[str] = None, group: str = "") -> Dict[str, Any]:
        """Emit one check and keep it."""
        ev = self.ctx.check(id_, title, status, detail, evidence=evidence, hint=hint, group=group)
        self.checks.append(ev)
        return ev

    # -- the order of the job ------------------------------------------------------------------
    def run(self) -> str:
        """Probes first (before anything else touches the device), then everything else."""
        only = bool(self.cfg["only_probes"])
        self.ctx.started(scope="probes" if only else "all", root=self.root)
        cann = cannmod.find_toolkit(os.environ, self.root)  # file reads only: no device yet
        set_env = cannmod.set_env_status(os.environ, self.root)
        probes = self.device_probes(cann, set_env)
        self.ctx.raise_if_cancelled()
        self.summary["python"] = self.interpreter(emit=not only)
        self.summary["packages"] = self.packages(emit=not only)
        self.summary["cann"] = self.cann_checks(cann, set_env, emit=not only)
        self.summary["driver"], self.summary["firmware"] = self.driver_checks(emit=not only)
        self.summary["pairing"] = self.pairing_check(emit=not only)
        if only:
            self.summary["driver"]["npu_smi"] = {"present": None, "note": "not run: env.only_probes is true"}
        info = None if only else self.npu_smi()
        self.summary["devices"] = list(info.devices) if info is not None else []
        self.summary["processes"] = [self._process(p) for p in info.processes] if info is not None else []
        if not only:
            self.npu_health(info)
            self.visible_devices(info)
            self.settings()
        else:
            self.device_setting()
        self.summary["probes"] = probes
        self.summary["environment"] = self.environment(emit=not only)
        self.summary = {key: self.summary[key] for key in (
            "python", "packages", "cann", "driver", "firmware", "pairing", "devices", "processes", "probes",
            "environment")}
        report = self.ctx.artifacts / "env-report.json"
        write_json(report, self.summary)
        self.ctx.artifact(report, "env-report")
        self.ctx.result(self.summary)
        bad = [p for p in probes if p["verdict"] in ("observed-fail", "blocked")]
        if bad:
            first = bad[0]
            raise JobFailed("device probe %s on %s:%d %s: %s" % (
                first["op"], self.target, self.device_id, first["verdict"], first["detail"]),
                hint=first.get("hint"), type_="DeviceProbeFailed")
        return "ok"

    @staticmethod
    def _process(row: Dict[str, Any]) -> Dict[str, Any]:
        out = {"npu": row["npu"], "pid": row["pid"], "name": row["name"], "memory_mb": row["memory_mb"]}
        if "container_pid" in row:
            out["container_pid"] = row["container_pid"]
        return out

    # -- device probes -----------------------------------------------------------------------
    def probe_preconditions(self, cann: Dict[str, Any], set_env: Dict[str, Any]) -> List[str]:
        """What a probe on the resolved target needs and this machine lacks (Ascend: CANN, set_env)."""
        missing = []
        if self.target == "Ascend":
            if not cann["found"]:
                missing.append("CANN toolkit not found (%d places looked at, see CANN toolkit)" % len(cann["looked_at"]))
            if not set_env["sourced"]:
                missing.append("set_env.sh not sourced (%s)" % "; ".join(set_env["missing"][:3]))
        return missing

    def device_probes(self, cann: Dict[str, Any], set_env: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Each probe in its own subprocess with its own time limit; a crash or hang stops nothing."""
        results = []
        if not self.cfg["probes"]:
            for op in PROBE_OPS:
                results.append(self._probe_check(op, "not-run", "env.probes is false: no device op was run",
                                                 {"op": op}, None))
            return results
        missing = self.probe_preconditions(cann, set_env)
        selection_failed: Optional[Dict[str, Any]] = None
        probe_dir = self.ctx.dir / "probes"
        probe_dir.mkdir(exist_ok=True)
        (self.ctx.artifacts / "probes").mkdir(exist_ok=True)
        for n, op in enumerate(PROBE_OPS):
            self.ctx.raise_if_cancelled()
            if selection_failed is not None:
                detail = ("not started: selecting %s:%d failed in probe %s (%s)" % (
                    self.target, self.device_id, selection_failed["op"], selection_failed["first_line"]))
                results.append(self._probe_check(op, "blocked", detail, {"op": op, "after": selection_failed["op"]},
                                                 selection_failed.get("hint")))
                continue
            self.ctx.progress(n, len(PROBE_OPS), "probes", phase="probe %s on %s:%d" % (op, self.target, self.device_id))
            outcome = self._run_probe(op, probe_dir)
            verdict = self._classify(op, outcome, missing)
            results.append(verdict)
            if outcome["result"] is not None and (outcome["result"].get("error") or {}).get("stage") == "set-device":
                message = str(outcome["result"]["error"].get("message") or "")
                selection_failed = {"op": op, "first_line": _ms_words(message), "hint": verdict.get("hint")}
        self.ctx.progress(len(PROBE_OPS), len(PROBE_OPS), "probes", phase="probes done")
        return results

    def _run_probe(self, op: str, probe_dir: Path) -> Dict[str, Any]:
        """Start one probe process and wait for it (timeout: limits.probe_timeout_s)."""
        out_json = self.ctx.artifacts / "probes" / ("%s.json" % op)
        stdout, stderr = probe_dir / ("%s.stdout.log" % op), probe_dir / ("%s.stderr.log" % op)
        argv = [sys.executable, "-m", self.cfg["probe_module"], "--target", self.target, "--id",
                str(self.device_id), "--op", op, "--out", str(out_json)]
        timeout_s = float(self.ctx.cfg["limits"]["probe_timeout_s"])
        last = {"t": time.monotonic()}

        def tick(elapsed_s: float) -> None:
            if time.monotonic() - last["t"] >= TICK_EVERY_S:  # keeps the stall watchdog informed
                last["t"] = time.monotonic()
                self.ctx.log("probe %s still running after %.0f s (limit %.0f s)" % (op, elapsed_s, timeout_s))

        run_info = run_child(argv, timeout_s, str(probe_dir), str(stdout), str(stderr),
                             should_stop=lambda: self.ctx.cancel_requested, tick=tick)
        result = None
        if out_json.is_file():
            try:
                result = read_json(out_json)
                self.ctx.artifact(out_json, "probe")
            except (OSError, ValueError):
                result = None
        return {"run": run_info, "result": result, "argv": argv, "stderr": tail(read_text(stderr)),
                "stdout": tail(read_text(stdout), 1000), "timeout_s": timeout_s}

    def _classify(self, op: str, outcome: Dict[str, Any], missing: List[str]) -> Dict[str, Any]:
        """Turn a probe's process outcome and JSON into a verdict and its check."""
        run_info, result = outcome["run"], outcome["result"]
        message = str(((result or {}).get("error") or {}).get("message") or "")
        # raw: MindSpore's whole message (multi-line, readable), then what the probe printed
        raw = "\n\n".join(part for part in (message, outcome["stdout"].strip(), outcome["stderr"].strip()) if part)
        evidence = {"op": op, "target": self.target, "id": self.device_id, "result": result, "process": run_info,
                    "module": self.cfg["probe_module"], "raw": raw}
        if run_info["stopped"]:
            self.ctx.raise_if_cancelled()
        if result is None:
            if run_info["timed_out"]:
                detail = ("hung: no result within %.0f s; the probe's process group was killed"
                          % outcome["timeout_s"])
                hint = ("a device op that never returns: look for another process holding the device "
                        "(npu-smi info), then run the probes alone (p on the Environment screen)")
            elif run_info["signal"]:
                detail = "crashed: %s (return code %s) before writing a result" % (
                    run_info["signal"], run_info["returncode"])
                hint = explain_error(outcome["stderr"]) if outcome["stderr"].strip() else \
                    "a process-level crash in the device stack: read the probe's stderr.log; retry once to see if it repeats"
            else:
                detail = "exited with status %s without writing a result" % run_info["returncode"]
                hint = explain_error(outcome["stderr"]) if outcome["stderr"].strip() else None
            return self._probe_check(op, "observed-fail", detail, evidence, hint, run_info=run_info)
        error = result.get("error") or {}
        message = str(error.get("message") or "no error text")
        if result.get("status") == "observed-pass":
            dev = result.get("device") or {}
            detail = "max abs diff %.3g (atol %g, rtol %g) on %s %s fetched with .asnumpy(); MindSpore reports %s:%s" % (
                result["max_abs_diff"], result["atol"], result["rtol"], "×".join(map(str, result.get("shape") or [])),
                result.get("dtype"), dev.get("target"), dev.get("device_id"))
            if str(dev.get("target")) != self.target:
                return self._probe_check(op, "observed-fail", "asked for %s but MindSpore reports %s: %s" % (
                    self.target, dev.get("target"), detail), evidence, ms_role_warning() or
                    "the op did not run on the asked-for device", result=result, run_info=run_info)
            return self._probe_check(op, "observed-pass", detail, evidence, None, result=result, run_info=run_info)
        hint = error.get("hint") or explain_error(message)
        if error.get("stage") == "set-device" and missing:
            detail = "precondition missing: %s. MindSpore says: %s" % ("; ".join(missing), _ms_words(message))
            return self._probe_check(op, "blocked", detail, dict(evidence, missing=missing), hint,
                                     result=result, run_info=run_info)
        detail = "failed at %s: %s" % (error.get("stage"), _ms_words(message))
        return self._probe_check(op, "observed-fail", detail, evidence, hint,
                                 result=result, run_info=run_info)

    def _probe_check(self, op: str, status: str, detail: str, evidence: Dict[str, Any], hint: Optional[str],
                     result: Optional[Dict[str, Any]] = None, run_info: Optional[Dict[str, Any]] = None
                     ) -> Dict[str, Any]:
        """Emit a probe's check; return its summary row."""
        self.check("probe-" + op, "Probe %s" % op.replace("-", " "), status, detail, evidence, hint, group="probes")
        result = result or {}
        run_info = run_info or {}
        return {"op": op, "target": self.target, "id": self.device_id, "verdict": status, "detail": detail,
                "hint": hint, "max_abs_diff": result.get("max_abs_diff"), "atol": result.get("atol"),
                "rtol": result.get("rtol"), "shape": result.get("shape"), "dtype": result.get("dtype"),
                "device": result.get("device"), "elapsed_s": result.get("elapsed_s", run_info.get("elapsed_s")),
                "error": (result.get("error") or {}).get("message"), "returncode": run_info.get("returncode"),
                "signal": run_info.get("signal"), "timed_out": run_info.get("timed_out", False)}

    # -- interpreter and packages ----------------------------------------------------------------
    def interpreter(self, emit: bool = True) -> Dict[str, Any]:
        """The interpreter running jobs, its site setup, and the python3/python found on PATH."""
        conda_prefix = os.environ.get("CONDA_PREFIX")
        info = {
            "executable": sys.executable, "realpath": os.path.realpath(sys.executable),
            "version": platform.python_version(), "implementation": platform.python_implementation(),
            "machine": platform.machine(), "prefix": sys.prefix, "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
            "conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")), "conda_prefix": conda_prefix,
            "user_site": _user_site(), "user_site_enabled": bool(site.ENABLE_USER_SITE),
            "PYTHONNOUSERSITE": os.environ.get("PYTHONNOUSERSITE"), "sys_path": list(sys.path),
        }
        others = [self._peek_on_path(name) for name in ("python3", "python")]
        info["on_path"] = others
        if emit:
            kinds = [k for k, on in (("venv", info["venv"]), ("conda", info["conda"])) if on] or ["system/other"]
            detail = "Python %s at %s (%s); user site %s%s" % (
                info["version"], sys.executable, "+".join(kinds),
                "enabled: " + str(info["user_site"]) if info["user_site_enabled"] else "disabled",
                " (PYTHONNOUSERSITE=%s)" % info["PYTHONNOUSERSITE"] if info["PYTHONNOUSERSITE"] else "")
            ok = sys.version_info >= (3, 9)
            self.check("interpreter", "Interpreter", "observed-pass" if ok else "observed-fail", detail, info,
                       None if ok else "jobs need Python 3.9 or newer: set `python:` to another interpreter",
                       group="python")
            self._path_check(others)
        return {k: v for k, v in info.items() if k != "sys_path"}

    def _peek_on_path(self, name: str) -> Dict[str, Any]:
        """Which `name` PATH gives, and what it is (run briefly; it may be another interpreter)."""
        found = shutil.which(name)
        row: Dict[str, Any] = {"name": name, "which": found, "realpath": os.path.realpath(found) if found else None}
        if not found:
            return row
        try:
            proc = subprocess.run([found, "-c", PEEK], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=20)
            row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
            row["error"] = "%s: %s" % (type(exc).__name__, exc)
        if "executable" in row:
            # A venv's python links to its base interpreter: the prefix, not the binary, tells them apart.
            row["same_as_jobs"] = os.path.realpath(row.get("prefix") or "") == os.path.realpath(sys.prefix)
        return row

    def _path_check(self, others: List[Dict[str, Any]]) -> None:
        """Fail when `python3`/`python` on PATH is another interpreter that sees another MindSpore."""
        ours = pkgscan.find_origin("mindspore")
        differ = []
        for row in others:
            if not row.get("which") or row.get("same_as_jobs"):
                continue
            same_ms = row.get("mindspore_path") and ours and os.path.realpath(row["mindspore_path"]) == \
                os.path.realpath(ours)
            if not same_ms:
                differ.append(row)
        lines = []
        for row in others:
            if not row.get("which"):
                lines.append("%s: not on PATH" % row["name"])
            elif row.get("same_as_jobs"):
                lines.append("%s: the job interpreter" % row["name"])
            else:
                lines.append("%s: %s (Python %s, MindSpore %s)" % (
                    row["name"], row.get("executable") or row["which"], row.get("version", "?"),
                    row.get("mindspore_version") or ("not found" if "executable" in row else row.get("error"))))
        if differ:
            names = ", ".join("`%s`" % r["name"] for r in differ)
            self.check("python-on-path", "python3 on PATH", "observed-fail", "; ".join(lines), {"on_path": others},
                       "scripts started with %s run another interpreter than the jobs (%s); run them with %s "
                       "or put its directory first on PATH" % (names, sys.executable, sys.executable), group="python")
        else:
            self.check("python-on-path", "python3 on PATH", "observed-pass", "; ".join(lines), {"on_path": others},
                       group="python")

    def packages(self, emit: bool = True) -> Dict[str, Any]:
        """Version and import path of each watched package, every copy on sys.path, and the numpy rule."""
        pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        site_dirs = list(getattr(site, "getsitepackages", lambda: [])())
        labels = {entry: pkgscan.label_entry(entry, _user_site(), site_dirs, pythonpath) for entry in sys.path}
        reports = {}
        for name in pkgscan.WATCHED:
            reports[name] = pkgscan.package_report(name, sys.path, labels, pkgscan.find_origin(name),
                                                   pkgscan.metadata_version(name))
        if emit:
            for name, rep in reports.items():
                self._package_check(name, rep, reports)
            dups = [rep for rep in reports.values() if rep["duplicates"]]
            if dups:
                detail = " | ".join("%s: %s" % (rep["name"], pkgscan.duplicates_text(rep)) for rep in dups)
                self.check("pkg-duplicates", "Duplicate packages", "observed-fail", detail,
                           {rep["name"]: rep["copies"] for rep in dups},
                           "the copy marked WINS is the one imported; remove the others (pip uninstall with the "
                           "interpreter that owns them, or delete a stale dist-info), or set PYTHONNOUSERSITE=1 "
                           "when the user-site copy is the stale one", group="packages")
            else:
                self.check("pkg-duplicates", "Duplicate packages", "observed-pass",
                           "one copy each on sys.path (%d entries scanned)" % len(sys.path),
                           {"sys_path": list(sys.path)}, group="packages")
            ms_v, np_v = reports["mindspore"]["version"], reports["numpy"]["version"]
            rule = pkgscan.numpy_abi_verdict(ms_v, np_v, sys.executable)
            self.check("numpy-abi", "NumPy vs MindSpore", rule["status"], rule["detail"],
                       {"numpy": np_v, "mindspore": ms_v, "mindspore_requires": reports["mindspore"]["requires"],
                        "numpy1_builds_up_to": ".".join(map(str, pkgscan.NUMPY1_MINDSPORE_UP_TO))},
                       rule["hint"], group="packages")
        return {name: {k: rep[k] for k in ("found", "version", "version_from", "path", "label", "metadata_version",
                                           "duplicates", "copies")} for name, rep in reports.items()}

    def _package_check(self, name: str, rep: Dict[str, Any], reports: Dict[str, Any]) -> None:
        title = "Package %s" % name
        if rep["found"]:
            detail = "%s from %s (%s)" % (rep["version"] or "version unknown", rep["path"], rep["label"] or "other")
            if rep["metadata_version"] and rep["version"] and rep["metadata_version"] != rep["version"]:
                detail += "; importlib.metadata reports %s from another copy" % rep["metadata_version"]
            if rep["duplicates"]:
                detail += "; %d copies on sys.path (see Duplicate packages)" % len(rep["copies"])
            self.check("pkg-" + name, title, "observed-pass", detail, rep, group="packages")
            return
        if name == "mindspore" or (name == "numpy" and reports["mindspore"]["found"]):
            self.check("pkg-" + name, title, "observed-fail", "%s is not importable by %s" % (name, sys.executable),
                       rep, "install it for this interpreter, or set `python:` to the interpreter that has "
                            "MindSpore (on a board: the conda/system python CANN was set up for)", group="packages")
        else:
            why = "only the TUI needs it, not the jobs" if name == "textual" else "optional"
            self.check("pkg-" + name, title, "not-run", "not installed for %s (%s)" % (sys.executable, why), rep,
                       group="packages")

    # -- CANN, driver, firmware, pairing ---------------------------------------------------------
    def cann_checks(self, cann: Dict[str, Any], set_env: Dict[str, Any], emit: bool = True) -> Dict[str, Any]:
        """CANN toolkit found and its version; whether set_env.sh was sourced."""
        needed = self.target == "Ascend"
        if emit:
            if cann["found"] and cann["version"]:
                detail = "CANN %s (from %s) at %s, found via %s; internal version %s" % (
                    cann["version"], cann["version_from"], cann["home"], cann["source"], cann["internal_version"])
                self.check("cann-toolkit", "CANN toolkit", "observed-pass", detail, cann, group="cann")
            elif cann["found"]:
                self.check("cann-toolkit", "CANN toolkit", "observed-fail",
                           "a toolkit directory at %s but no version file: %s" % (cann["home"], "; ".join(cann["missing"])),
                           cann, "a partial or broken CANN install: reinstall the toolkit package", group="cann")
            elif needed:
                self.check("cann-toolkit", "CANN toolkit", "observed-fail",
                           "no CANN toolkit: looked at %s" % ", ".join(e["path"] for e in cann["looked_at"]), cann,
                           "install the CANN toolkit that pairs with this MindSpore, or set ASCEND_HOME_PATH to it",
                           group="cann")
            else:
                self.check("cann-toolkit", "CANN toolkit", "not-run",
                           "no CANN toolkit found; not needed for target %s (looked at %d places)" % (
                               self.target, len(cann["looked_at"])), cann, group="cann")
            if not cann["found"] and not needed and not set_env.get("home"):
                self.check("cann-set-env", "set_env.sh sourced", "not-run",
                           "no CANN here and target %s: nothing to source" % self.target, set_env, group="cann")
            else:
                hint = None if set_env["status"] == "observed-pass" else (
                    "run `source %s` in the shell that starts ms-workbench (jobs inherit its environment); "
                    "import mindspore may work without it, but execution fails" % self._set_env_script(cann))
                self.check("cann-set-env", "set_env.sh sourced", set_env["status"], set_env["detail"], set_env, hint,
                           group="cann")
        return {"found": cann["found"], "home": cann["home"], "source": cann["source"], "version": cann["version"],
                "version_from": cann["version_from"], "internal_version": cann["internal_version"],
                "set_env": {"sourced": set_env["sourced"], "missing": set_env["missing"]},
                "looked_at": [e["path"] for e in cann["looked_at"]]}

    def _set_env_script(self, cann: Dict[str, Any]) -> str:
        home = cann.get("home")
        if home:
            for candidate in (os.path.join(os.path.dirname(home), "set_env.sh"), os.path.join(home, "set_env.sh")):
                if os.path.isfile(candidate):
                    return candidate
        return "/usr/local/Ascend/ascend-toolkit/set_env.sh"

    def driver_checks(self, emit: bool = True) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """Driver and firmware version.info (incl. /var/davinci/driver on 310B), and their fit."""
        status = cannmod.driver_status(self.root)
        driver, firmware, fits = status["driver"], status["firmware"], status["firmware_in_driver_range"]
        needed = self.target == "Ascend"
        if emit:
            if driver["found"]:
                self.check("driver", "Driver", "observed-pass", "driver %s (%s)" % (driver["version"], driver["path"]),
                           driver, group="driver")
            else:
                self.check("driver", "Driver", "observed-fail" if needed else "not-run",
                           "no driver version.info: looked at %s%s" % (
                               ", ".join(e["path"] for e in driver["looked_at"]),
                               "" if needed else "; not needed for target %s" % self.target), driver,
                           "install the Ascend driver (HDK) or mount /usr/local/Ascend/driver into the container"
                           if needed else None, group="driver")
            if firmware["found"] and fits is False:
                self.check("firmware", "Firmware", "observed-fail",
                           "firmware %s is outside the driver's compatible range %s" % (
                               firmware["version"], driver["fields"].get("compatible_version_fw")),
                           dict(firmware, in_driver_range=fits),
                           "upgrade the firmware package to the one released with driver %s" % driver["version"],
                           group="driver")
            elif firmware["found"]:
                self.check("firmware", "Firmware", "observed-pass", "firmware %s (%s)%s" % (
                    firmware["version"], firmware["path"],
                    "; inside the driver's compatible range" if fits else "; driver lists no compatible range"),
                    dict(firmware, in_driver_range=fits), group="driver")
            else:
                self.check("firmware", "Firmware", "observed-fail" if needed else "not-run",
                           "no firmware version.info: looked at %s" % ", ".join(e["path"] for e in firmware["looked_at"]),
                           firmware, "install the firmware package released with the driver" if needed else None,
                           group="driver")
        keep = ("found", "version", "package_version", "path")
        return ({k: driver[k] for k in keep}, dict({k: firmware[k] for k in keep}, in_driver_range=fits))

    def pairing_check(self, emit: bool = True) -> Dict[str, Any]:
        """MindSpore vs CANN against the pairing table (official and secondary rows named)."""
        ms_v = (self.summary.get("packages") or {}).get("mindspore", {}).get("version")
        cann_v = (self.summary.get("cann") or {}).get("version")
        verdict = pairing.pairing_verdict(ms_v, cann_v)
        rows = [{"mindspore": r["mindspore"], "cann": r["cann"], "source": r["source"], "ref": r["ref"]}
                for r in (pairing.rows_for(ms_v) if ms_v else [])]
        out = dict(verdict, mindspore=ms_v, cann=cann_v, rows=rows)
        if emit:
            hint = None
            if verdict["status"] == "observed-fail":
                hint = "install CANN %s for MindSpore %s, or the MindSpore release that pairs with CANN %s" % (
                    " or ".join(verdict["expected_cann"]), ms_v, cann_v)
            detail = verdict["detail"]
            if rows:
                detail += " [rows: %s]" % ", ".join("%s→%s %s" % (r["mindspore"], r["cann"], r["source"]) for r in rows)
            self.check("pairing", "MindSpore ↔ CANN pairing", verdict["status"], detail, out, hint, group="cann")
        return out

    # -- npu-smi ---------------------------------------------------------------------------------
    def _find_npu_smi(self) -> Tuple[Optional[str], bool, List[str]]:
        """(path, on_path, looked_at) of npu-smi: the configured command on PATH, else the usual places."""
        cmd = self.cfg["npu_smi"]
        looked = [cmd]
        found = shutil.which(cmd)
        if found:
            return found, os.sep not in cmd, looked
        if os.path.basename(cmd) == "npu-smi":
            for usual in USUAL_NPU_SMI:
                path = cannmod.under_root(usual, self.root)
                looked.append(path)
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    return path, False, looked
        return None, False, looked

    def npu_smi(self) -> Optional[npusmi.NpuSmiInfo]:
        """Run `npu-smi info` under the single-poller lock; keep its output; parse or explain it."""
        path, on_path, looked = self._find_npu_smi()
        npu = {"present": path is not None, "path": path, "on_path": on_path, "looked_at": looked}
        self._driver_npu_smi(npu)
        if path is None:
            self.check("npu-smi", "npu-smi", "not-run", "npu-smi not found (looked for %s)" % ", ".join(looked), npu,
                       "install the Ascend driver, or mount npu-smi into the container" if self.target == "Ascend"
                       else None, group="npu")
            return None
        if os.path.basename(path) != "npu-smi":
            self.check("npu-smi", "npu-smi", "blocked", "env.npu_smi=%r: its basename must be npu-smi" % path, npu,
                       "set env.npu_smi to npu-smi or a path ending in /npu-smi", group="npu")
            return None
        lock = str(self.ctx.dir.parents[2] / ".locks" / "npu-smi.lock")
        timeout_s = float(self.cfg["npu_smi_timeout_s"])
        saved_path = os.environ.get("PATH", "")
        os.environ["PATH"] = os.path.dirname(path) + os.pathsep + saved_path  # run exactly the one found
        try:
            rc, out, err, elapsed_s = npusmi.run_npu_smi(["info"], timeout_s=timeout_s, lock_path=lock)
        finally:
            os.environ["PATH"] = saved_path
        raw = out + (("\n# stderr:\n" + err) if err.strip() else "")
        artifact = self.ctx.artifacts / "npu-smi-info.txt"
        write_text(artifact, raw)
        self.ctx.artifact(artifact, "npu-smi-info")
        info = npusmi.parse_info(out)
        failure = npusmi.classify_failure(rc, out, err)
        npu.update(returncode=rc, elapsed_s=round(elapsed_s, 3), timeout_s=timeout_s, lock=lock, version=info.version,
                   layout=info.layout, failure=failure)
        evidence = dict(npu, devices=len(info.devices), processes=info.processes, idle_npus=info.idle_npus,
                        unparsed=info.unparsed, raw=tail(raw, 8000),
                        note=None if on_path else "npu-smi is not on PATH; ran %s" % path)
        if failure is not None:
            self.check("npu-smi", "npu-smi", "observed-fail", "npu-smi info failed (%s): %s" % (
                failure["code"], failure["cause"]), evidence, failure["hint"], group="npu")
            return info if info.devices else None
        if not info.devices:
            self.check("npu-smi", "npu-smi", "observed-fail",
                       "npu-smi info printed no device table this parser knows (layout %s, %d unparsed lines)" % (
                           info.layout, len(info.unparsed)), evidence,
                       "keep artifacts/npu-smi-info.txt and compare it with the known layouts", group="npu")
            return None
        detail = "%d device(s), %d process(es), npu-smi %s, layout %s" % (
            len(info.devices), len(info.processes), info.version or "version not printed", info.layout)
        if not on_path:
            detail += "; not on PATH, ran %s" % path
        self.check("npu-smi", "npu-smi", "observed-pass", detail, evidence, group="npu")
        return info

    def _driver_npu_smi(self, npu: Dict[str, Any]) -> None:
        """npu-smi belongs to the driver package: its facts go in the driver summary."""
        self.summary.setdefault("driver", {})
        self.summary["driver"]["npu_smi"] = npu

    def npu_health(self, info: Optional[npusmi.NpuSmiInfo]) -> None:
        """Every device's Health column: anything but OK fails."""
        if info is None or not info.devices:
            self.check("npu-health", "NPU health", "not-run", "no device list from npu-smi", {}, group="npu")
            return
        bad = [d for d in info.devices if str(d.get("health")).upper() != "OK"]
        rows = ["NPU %s chip %s %s: %s" % (d["npu"], d["chip"], d["name"], d["health"]) for d in info.devices]
        if bad:
            self.check("npu-health", "NPU health", "observed-fail", "; ".join(
                "NPU %s chip %s (%s) health %s" % (d["npu"], d["chip"], d["name"], d["health"]) for d in bad),
                {"devices": info.devices},
                "read the alarm: `npu-smi info -t health -i <NPU>`; check temperature and power, and "
                "/var/log/npu/slog; a Warning device may still run, but its results need a second look", group="npu")
        else:
            self.check("npu-health", "NPU health", "observed-pass", "; ".join(rows), {"devices": info.devices}, group="npu")

    def visible_devices(self, info: Optional[npusmi.NpuSmiInfo]) -> None:
        """ASCEND_RT_VISIBLE_DEVICES: well-formed, ascending, within the devices seen."""
        value = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
        seen = None
        if info is not None and info.devices:
            npus = [d["npu"] for d in info.devices]
            seen = npus if len(set(npus)) == len(npus) else list(range(len(info.devices)))
        verdict = visible.check_visible_devices(value, seen)
        hint = None
        if verdict["status"] == "observed-fail":
            hint = "list device indexes in ascending order, each below the number of devices this container sees"
        self.check("visible-devices", "Visible devices", verdict["status"], verdict["detail"],
                   dict(verdict, value=value, seen=seen), hint, group="settings")

    # -- settings --------------------------------------------------------------------------------
    def settings(self) -> None:
        """MS_ROLE, log levels, and the device setting with how auto resolved."""
        role = os.environ.get("MS_ROLE")
        warning = ms_role_warning()
        if warning:
            self.check("ms-role", "MS_ROLE", "observed-fail", warning + ": MindSpore then runs on CPU silently",
                       {"MS_ROLE": role, "server_roles": list(SERVER_ROLES)}, "unset MS_ROLE for single-device jobs",
                       group="settings")
        else:
            self.check("ms-role", "MS_ROLE", "observed-pass",
                       "MS_ROLE unset" if role is None else "MS_ROLE=%s is not a server/scheduler role" % role,
                       {"MS_ROLE": role, "server_roles": list(SERVER_ROLES)}, group="settings")
        levels = {name: os.environ.get(name) for name in GLOG_NAMES}
        glog_v = levels["GLOG_v"]
        if glog_v is not None and glog_v not in GLOG_MEANING:
            self.check("glog", "Log levels", "observed-fail", "GLOG_v=%r is not one of 0..4" % glog_v, levels,
                       "set GLOG_v to 0 (DEBUG) .. 4 (CRITICAL); the config key glog_v does it for jobs",
                       group="settings")
        else:
            parts = ["GLOG_v=%s (%s)" % (glog_v, GLOG_MEANING[glog_v]) if glog_v else "GLOG_v unset (MindSpore: WARNING and up)"]
            parts += ["%s=%s" % (k, v) for k, v in levels.items() if v is not None and k != "GLOG_v"]
            self.check("glog", "Log levels", "observed-pass", "; ".join(parts), levels, group="settings")
        self.device_setting()

    def device_setting(self) -> None:
        """device.target/id, what auto would pick here and why, and whether the request can be met."""
        dev = dict(self.ctx.device)
        found = detect()
        evidence = {"requested": dev.get("requested"), "resolved": dev.get("resolved"), "id": dev.get("id"),
                    "why": dev.get("why"), "detected": found}
        detail = "device.target=%s device.id=%s → %s:%s (%s)" % (
            dev.get("requested"), dev.get("id"), dev.get("resolved"), dev.get("id"), dev.get("why"))
        if dev.get("requested") in ("Ascend", "GPU") and found["target"] != dev.get("requested"):
            self.check("device-setting", "Device setting", "observed-fail",
                       detail + "; this machine shows no %s: %s" % (dev.get("requested"), found["why"]), evidence,
                       "set device.target to auto or CPU here, or run on a machine with the device; nothing falls "
                       "back to CPU on its own", group="settings")
        else:
            self.check("device-setting", "Device setting", "observed-pass", detail, evidence, group="settings")

    def environment(self, emit: bool = True) -> Dict[str, Any]:
        """Allow-listed variables, secret-like values masked."""
        recorded = envvars.record_env(os.environ)
        masked = envvars.masked_names(os.environ)
        if emit:
            self.check("env-vars", "Environment variables", "observed-pass",
                       "%d allow-listed variables recorded (ASCEND_*, GLOG_*, MS_*, PATH, LD_LIBRARY_PATH, "
                       "PYTHONPATH)%s" % (len(recorded), "; masked: " + ", ".join(masked) if masked else ""),
                       {"recorded": recorded, "masked": masked}, group="settings")
        return recorded


def _user_site() -> Optional[str]:
    try:
        return site.getusersitepackages()
    except Exception:  # some embedded interpreters lack it
        return None


def _first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of an error (MindSpore's own words first), shortened."""
    text = str(text)
    if text.startswith("cannot use device ") and ": " in text:
        text = text.split(": ", 1)[1]  # msdevice's prefix; the asked-for device is in the detail already
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit] + " ..."
    return ""


def _ms_words(message: str, limit: int = 160) -> str:
    """MindSpore's first line, plus its first 'Load dynamic library' line (which names the missing library)."""
    words = _first_line(message, limit)
    for line in str(message).splitlines():
        if line.startswith("Load dynamic library"):
            return "%s | %s" % (words, line.strip()[:limit])
    return words


def main(ctx: JobContext) -> str:
    """Run the env job."""
    return EnvJob(ctx).run()


if __name__ == "__main__":
    sys.exit(run(main))
