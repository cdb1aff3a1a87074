"""The Python side of the inventory: the interpreter, python3 on PATH, the watched packages, the NumPy rule."""

from __future__ import annotations

import json
import os
import platform
import shutil
import site
import subprocess
import sys
from typing import Any, Dict, List, Optional

from workbench.analysis import pkgscan
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext

# Run by the job's own interpreter for `python3`/`python` on PATH: what it is and which MindSpore it sees.
PEEK = (
    "import importlib.util, json, sys\n"
    "try:\n from importlib import metadata\n v = metadata.version('mindspore')\nexcept Exception:\n v = None\n"
    "s = importlib.util.find_spec('mindspore')\n"
    "o = (list(s.submodule_search_locations or [None])[0] if s and s.submodule_search_locations else "
    "(s.origin if s else None))\n"
    "print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix, 'version': sys.version.split()[0], "
    "'mindspore_path': o, 'mindspore_version': v}))\n"
)
PACKAGE_KEYS = ("found", "version", "version_from", "path", "label", "metadata_version", "duplicates", "copies")


def user_site() -> Optional[str]:
    """The user site-packages directory, or None where the interpreter has none."""
    try:
        return site.getusersitepackages()
    except Exception:  # some embedded interpreters lack it
        return None


# -- interpreter ---------------------------------------------------------------------------------


def interpreter_facts() -> Dict[str, Any]:
    """The interpreter running jobs, its site setup, and the python3/python found on PATH."""
    info = {
        "executable": sys.executable,
        "realpath": os.path.realpath(sys.executable),
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
        "conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "conda_prefix": os.environ.get("CONDA_PREFIX"),
        "user_site": user_site(),
        "user_site_enabled": bool(site.ENABLE_USER_SITE),
        "PYTHONNOUSERSITE": os.environ.get("PYTHONNOUSERSITE"),
        "sys_path": list(sys.path),
    }
    info["on_path"] = [peek_on_path(name) for name in ("python3", "python")]
    return info


def interpreter_summary(info: Dict[str, Any]) -> Dict[str, Any]:
    """The interpreter facts for the summary (sys.path is in the check's evidence only)."""
    return {k: v for k, v in info.items() if k != "sys_path"}


def peek_on_path(name: str) -> Dict[str, Any]:
    """Which `name` PATH gives, and what it is (run briefly; it may be another interpreter)."""
    found = shutil.which(name)
    row: Dict[str, Any] = {"name": name, "which": found, "realpath": os.path.realpath(found) if found else None}
    if not found:
        return row
    try:
        proc = subprocess.run([found, "-c", PEEK], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
        row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        row["error"] = "%s: %s" % (type(exc).__name__, exc)
    if "executable" in row:
        # A venv's python links to its base interpreter: the prefix, not the binary, tells them apart.
        row["same_as_jobs"] = os.path.realpath(row.get("prefix") or "") == os.path.realpath(sys.prefix)
    return row


def interpreter_checks(ctx: JobContext, info: Dict[str, Any]) -> None:
    """`interpreter` (Python 3.9+, venv/conda, user site) and `python-on-path`."""
    kinds = [k for k, on in (("venv", info["venv"]), ("conda", info["conda"])) if on] or ["system/other"]
    detail = "Python %s at %s (%s); user site %s%s" % (
        info["version"],
        sys.executable,
        "+".join(kinds),
        "enabled: " + str(info["user_site"]) if info["user_site_enabled"] else "disabled",
        " (PYTHONNOUSERSITE=%s)" % info["PYTHONNOUSERSITE"] if info["PYTHONNOUSERSITE"] else "",
    )
    ok = sys.version_info >= (3, 9)
    ctx.check(
        "interpreter",
        "Interpreter",
        Evidence.PASS if ok else Evidence.FAIL,
        detail,
        evidence=info,
        hint=None if ok else "jobs need Python 3.9 or newer: set `python:` to another interpreter",
        group="python",
    )
    path_check(ctx, info["on_path"])


def path_check(ctx: JobContext, others: List[Dict[str, Any]]) -> None:
    """Fail when `python3`/`python` on PATH is another interpreter that sees another MindSpore."""
    ours = pkgscan.find_origin("mindspore")
    differ = []
    for row in others:
        if not row.get("which") or row.get("same_as_jobs"):
            continue
        same_ms = (
            row.get("mindspore_path") and ours and os.path.realpath(row["mindspore_path"]) == os.path.realpath(ours)
        )
        if not same_ms:
            differ.append(row)
    lines = []
    for row in others:
        if not row.get("which"):
            lines.append("%s: not on PATH" % row["name"])
        elif row.get("same_as_jobs"):
            lines.append("%s: the job interpreter" % row["name"])
        else:
            lines.append(
                "%s: %s (Python %s, MindSpore %s)"
                % (
                    row["name"],
                    row.get("executable") or row["which"],
                    row.get("version", "?"),
                    row.get("mindspore_version") or ("not found" if "executable" in row else row.get("error")),
                )
            )
    if differ:
        names = ", ".join("`%s`" % r["name"] for r in differ)
        ctx.check(
            "python-on-path",
            "python3 on PATH",
            Evidence.FAIL,
            "; ".join(lines),
            evidence={"on_path": others},
            hint="scripts started with %s run another interpreter than the jobs (%s); run them with %s "
            "or put its directory first on PATH" % (names, sys.executable, sys.executable),
            group="python",
        )
    else:
        ctx.check(
            "python-on-path",
            "python3 on PATH",
            Evidence.PASS,
            "; ".join(lines),
            evidence={"on_path": others},
            group="python",
        )


# -- packages ------------------------------------------------------------------------------------


def package_facts() -> Dict[str, Dict[str, Any]]:
    """Version and import path of each watched package, and every copy on sys.path."""
    pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    site_dirs = list(getattr(site, "getsitepackages", lambda: [])())
    labels = {entry: pkgscan.label_entry(entry, user_site(), site_dirs, pythonpath) for entry in sys.path}
    return {
        name: pkgscan.package_report(name, sys.path, labels, pkgscan.find_origin(name), pkgscan.metadata_version(name))
        for name in pkgscan.WATCHED
    }


def package_summary(reports: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The package facts for the summary."""
    return {name: {k: rep[k] for k in PACKAGE_KEYS} for name, rep in reports.items()}


def package_checks(ctx: JobContext, reports: Dict[str, Dict[str, Any]]) -> None:
    """`pkg-<name>` for each watched package, `pkg-duplicates`, and `numpy-abi` (NumPy vs MindSpore)."""
    for name, rep in reports.items():
        package_check(ctx, name, rep, reports)
    dups = [rep for rep in reports.values() if rep["duplicates"]]
    if dups:
        detail = " | ".join("%s: %s" % (rep["name"], pkgscan.duplicates_text(rep)) for rep in dups)
        ctx.check(
            "pkg-duplicates",
            "Duplicate packages",
            Evidence.FAIL,
            detail,
            evidence={rep["name"]: rep["copies"] for rep in dups},
            hint="the copy marked WINS is the one imported; remove the others (pip uninstall with the "
            "interpreter that owns them, or delete a stale dist-info), or set PYTHONNOUSERSITE=1 "
            "when the user-site copy is the stale one",
            group="packages",
        )
    else:
        ctx.check(
            "pkg-duplicates",
            "Duplicate packages",
            Evidence.PASS,
            "one copy each on sys.path (%d entries scanned)" % len(sys.path),
            evidence={"sys_path": list(sys.path)},
            group="packages",
        )
    ms_v, np_v = reports["mindspore"]["version"], reports["numpy"]["version"]
    rule = pkgscan.numpy_abi_verdict(ms_v, np_v, sys.executable)
    ctx.check(
        "numpy-abi",
        "NumPy vs MindSpore",
        rule["status"],
        rule["detail"],
        evidence={
            "numpy": np_v,
            "mindspore": ms_v,
            "mindspore_requires": reports["mindspore"]["requires"],
            "numpy1_builds_up_to": ".".join(map(str, pkgscan.NUMPY1_MINDSPORE_UP_TO)),
        },
        hint=rule["hint"],
        group="packages",
    )


def package_check(ctx: JobContext, name: str, rep: Dict[str, Any], reports: Dict[str, Dict[str, Any]]) -> None:
    """`pkg-<name>`: where it imports from, or why its absence matters (or does not)."""
    title = "Package %s" % name
    if rep["found"]:
        detail = "%s from %s (%s)" % (rep["version"] or "version unknown", rep["path"], rep["label"] or "other")
        if rep["metadata_version"] and rep["version"] and rep["metadata_version"] != rep["version"]:
            detail += "; importlib.metadata reports %s from another copy" % rep["metadata_version"]
        if rep["duplicates"]:
            detail += "; %d copies on sys.path (see Duplicate packages)" % len(rep["copies"])
        ctx.check("pkg-" + name, title, Evidence.PASS, detail, evidence=rep, group="packages")
        return
    if name == "mindspore" or (name == "numpy" and reports["mindspore"]["found"]):
        ctx.check(
            "pkg-" + name,
            title,
            Evidence.FAIL,
            "%s is not importable by %s" % (name, sys.executable),
            evidence=rep,
            hint="install it for this interpreter, or set `python:` to the interpreter that has "
            "MindSpore (on a board: the conda/system python CANN was set up for)",
            group="packages",
        )
    else:
        why = "only the TUI needs it, not the jobs" if name == "textual" else "optional"
        ctx.check(
            "pkg-" + name,
            title,
            Evidence.NOT_RUN,
            "not installed for %s (%s)" % (sys.executable, why),
            evidence=rep,
            group="packages",
        )
