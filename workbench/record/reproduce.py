"""What a colleague needs to run the session again: code revision, host, the jobs interpreter's packages, commands."""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench import __version__

SOURCE_ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("workbench", "jobs", "screens")
SOURCE_SUFFIXES = (".py", ".tcss")
MODEL_CODE = ("jobs/common/network.py",)  # the network definition, standalone (MindSpore and numpy only)
SUBPROCESS_TIMEOUT_S = 60.0
# Run by the jobs interpreter: every installed distribution as `name==version`, sorted, one a line. Name and
# Version are read from the metadata's header lines only (what email parsing of the whole file, long descriptions
# included, also finds: half the time; test_reproduce_early holds the two to the same list).
LIST_PACKAGES = (
    "import importlib.metadata as m\n"
    "seen = {}\n"
    "for d in m.distributions():\n"
    "    head = {}\n"
    "    for line in (d.read_text('METADATA') or d.read_text('PKG-INFO') or '').split('\\n\\n', 1)[0].splitlines():\n"
    "        k, sep, v = line.partition(': ')\n"
    "        if sep and k in ('Name', 'Version') and k not in head: head[k] = v.strip()\n"
    "    name = head.get('Name')\n"
    "    if name: seen.setdefault(name.lower(), '%s==%s' % (name, head.get('Version')))\n"
    "print('\\n'.join(seen[k] for k in sorted(seen)))\n"
)


def _run(argv: List[str], cwd: Optional[Path] = None) -> Tuple[Optional[str], Optional[str]]:
    """(stdout, None) or (None, why it failed)."""
    try:
        proc = subprocess.run(
            argv,
            cwd=str(cwd) if cwd else None,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, "%s: %s" % (type(exc).__name__, exc)
    if proc.returncode != 0:
        return None, "exit %d: %s" % (proc.returncode, (proc.stderr or "").strip()[-300:])
    return proc.stdout, None


def source_tree_sha256(root: Path = SOURCE_ROOT) -> Tuple[str, int]:
    """SHA-256 over (path, content) of every source file of the workbench, jobs and screens -> (hex, files)."""
    digest = hashlib.sha256()
    n = 0
    for top in SOURCE_DIRS:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                rel = path.relative_to(root).as_posix()
                digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
                n += 1
    return digest.hexdigest(), n


def code_revision(root: Path = SOURCE_ROOT) -> Dict[str, Any]:
    """Git commit and dirty flag when the source is a git checkout; always the version and a source-tree hash."""
    tree, n = source_tree_sha256(root)
    out: Dict[str, Any] = {
        "version": __version__,
        "source_root": str(root),
        "source_tree_sha256": tree,
        "source_files_hashed": n,
        "git": None,
    }
    commit, err = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    if commit is None:
        out["git_unavailable"] = err
        return out
    status, _ = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    branch, _ = _run(["git", "-C", str(root), "rev-parse", "--abbrev-ref", "HEAD"])
    changed = [line[3:] for line in (status or "").splitlines() if line.strip()]
    out["git"] = {
        "commit": commit.strip(),
        "branch": (branch or "").strip() or None,
        "dirty": bool(changed),
        "changed_files": changed[:50],
    }
    return out


def _first(path: str, key: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                name, _, value = line.partition("=" if key.isupper() else ":")
                if name.strip() == key:
                    return value.strip().strip('"')
    except OSError:
        return None
    return None


def host_facts() -> Dict[str, Any]:
    """OS, kernel, CPU model and count, this Python, and the working directory of the export."""
    uname = platform.uname()
    return {
        "os": _first("/etc/os-release", "PRETTY_NAME") or "%s %s" % (uname.system, uname.release),
        "kernel": "%s %s" % (uname.system, uname.release),
        "machine": uname.machine,
        "cpu_model": _first("/proc/cpuinfo", "model name") or platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "export_python": "%s (%s)" % (sys.executable, platform.python_version()),
        "working_directory": os.getcwd(),
    }


def interpreter_packages(python: str) -> Dict[str, Any]:
    """The jobs interpreter's installed distributions ({'python', 'version', 'lock', 'error'}), asked in a subprocess."""
    version, err = _run([python, "-c", "import platform, sys; print(platform.python_version())"])
    lock, err2 = _run([python, "-c", LIST_PACKAGES]) if version is not None else (None, err)
    return {
        "python": python,
        "version": (version or "").strip() or None,
        "lock": lock,
        "packages": len((lock or "").splitlines()),
        "error": err2 if lock is None else None,
    }


def lock_text(packages: Dict[str, Any], sid: str) -> str:
    """requirements.lock: a header naming the interpreter, then `name==version` lines (or why there are none)."""
    head = (
        "# Full lock of the jobs interpreter %s (Python %s) at the export of session %s: a development\n"
        "# environment (test tools and the workbench itself included), to run the workbench again.\n"
        "# Loading and running the model needs only export/deliverable/requirements.txt (mindspore, numpy).\n"
        % (packages["python"], packages.get("version") or "?", sid)
    )
    if packages.get("lock") is None:
        return head + "# Not listed: %s\n" % packages.get("error")
    return head + "# Install with: python -m pip install -r requirements.lock\n" + packages["lock"].rstrip("\n") + "\n"


def job_interpreter(jobs: List[Dict[str, Any]]) -> str:
    """The interpreter the session's jobs ran with (the most recent job's), else this one."""
    for j in reversed(jobs):
        python = (j.get("started") or {}).get("python") or j.get("python")
        if isinstance(python, str) and python:
            return python  # asked as recorded: when it is gone, the lock file says so
    return sys.executable


def rerun_commands(jobs: List[Dict[str, Any]]) -> List[Dict[str, str]]:
    """Per job, the command that ran it and one that runs it again from its recorded effective config."""
    out = []
    for j in jobs:
        cmd = [str(c) for c in j.get("command") or []]
        if cmd and cmd[0].endswith("__main__.py"):
            cmd = ["python", "-m", "workbench"] + cmd[1:]
        again = "python -m workbench run %s --config jobs/%s/config.yaml --session NEW_SID" % (
            shlex.quote(j["kind"]),
            j["jid"],
        )
        out.append(
            {"jid": j["jid"], "as_run": " ".join(shlex.quote(c) for c in cmd) or "(not recorded)", "again": again}
        )
    return out


def model_code(root: Path = SOURCE_ROOT) -> Dict[str, bytes]:
    """The network's source files by their path in the source tree."""
    return {rel: (root / rel).read_bytes() for rel in MODEL_CODE if (root / rel).is_file()}


class Early(threading.Thread):
    """The code revision and the package lists of the interpreters the jobs were started with, asked in a thread
    while the export reads the session (neither depends on what it reads; their subprocesses wait on others)."""

    def __init__(self, pythons: List[Any]):
        super().__init__(name="export-reproduce", daemon=True)
        self.pythons = [p for p in dict.fromkeys(pythons) if isinstance(p, str) and p][:2]
        self.revision: Optional[Dict[str, Any]] = None  # None: not got (asked again when needed)
        self.packages: Dict[str, Dict[str, Any]] = {}
        self.start()

    def run(self) -> None:
        try:
            self.revision = code_revision()
            for python in self.pythons:
                self.packages[python] = interpreter_packages(python)
        except Exception:  # asked again in the export's own thread, where a failure is reported as before
            pass


def reproduce_record(report: Dict[str, Any], early: Optional[Early] = None) -> Dict[str, Any]:
    """The reproduce section of report.json (the lock file's text is written beside it, not held here).

    `early`: the revision and package lists asked already; an interpreter it did not ask is asked now.
    """
    jobs = report["jobs"]
    python = job_interpreter(jobs)
    if early is not None:
        early.join()
    packages = early.packages.get(python) if early is not None else None
    if packages is None:
        packages = interpreter_packages(python)
    revision = early.revision if early is not None else None
    env: Dict[str, Any] = {}
    for j in jobs:  # every job's allow-listed (and masked) variables; a later job's value wins
        env.update(j.get("env") or {})
    return {
        "revision": revision if revision is not None else code_revision(),
        "host": host_facts(),
        "interpreter": {k: packages[k] for k in ("python", "version", "packages", "error")},
        "_lock": lock_text(packages, report["session"]["id"]),
        "environment": dict(sorted(env.items())),
        "commands": rerun_commands(jobs),
        "job_working_directory": "each job runs in its own folder, jobs/<jid>/ (the runner sets cwd)",
    }


def commands_script(report: Dict[str, Any], commands: List[Dict[str, str]]) -> str:
    """reproduce/commands.sh: re-runs the candidate's lineage from this record in a new sessions root and compares.

    It names no session id: `ms-workbench reproduce` reads the record it sits in, creates its own session
    and points the job references at the jobs it ran. The jobs as they ran follow as comments.
    """
    sid = report["session"]["id"]
    lines = [
        "#!/bin/sh",
        "# Re-run the frozen candidate's lineage of session %s (data, train, test, export) from the effective" % sid,
        "# configs of this record in a new session, then compare split hash, per-epoch losses, checkpoint hash,",
        "# test metrics and exported outputs with what the record holds (ms-workbench reproduce).",
        "# Usage: sh reproduce/commands.sh [SESSIONS_ROOT]   (default ./sessions or $MS_WORKBENCH_SESSIONS);",
        "# needs the workbench (ms-workbench on PATH, or PYTHON=<interpreter that imports workbench>).",
        "set -e",
        'RECORD="$(cd "$(dirname "$0")/.." && pwd)"',
        'if [ -z "${PYTHON:-}" ] && command -v ms-workbench >/dev/null 2>&1; then',
        '    exec ms-workbench reproduce "$RECORD" ${1:+--sessions "$1"}',
        "fi",
        'exec "${PYTHON:-python3}" -m workbench reproduce "$RECORD" ${1:+--sessions "$1"}',
        "",
        "# Each job of session %s as it ran (for reading: ids and paths are the original session's):" % sid,
    ]
    for c in commands:
        lines.append("# %s: %s" % (c["jid"], c["as_run"]))
    return "\n".join(lines) + "\n"
