"""The real CLI in a subprocess: its argv, its environment (the project importable), a run; a program the same way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def cli_argv(*args: Any) -> list:
    """The argv of `python -m workbench ARGS` with this interpreter."""
    return [sys.executable, "-m", "workbench"] + [str(a) for a in args]


def cli_env(env: Optional[dict] = None) -> dict:
    """This process's environment with the project importable, plus `env` on top."""
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full.update(env or {})
    return full


def run_cli(
    *args: Any, env: Optional[dict] = None, timeout: float = 60.0, cwd: Optional[Path] = None
) -> subprocess.CompletedProcess:
    """Run `python -m workbench ARGS` as a real subprocess; return it with text stdout/stderr."""
    return subprocess.run(
        cli_argv(*args),
        cwd=str(cwd or PROJECT_ROOT),
        env=cli_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_program(
    python: str, program: str, *args: Any, cwd: Path, timeout: float = 240.0
) -> subprocess.CompletedProcess:
    """Run `python -c PROGRAM ARGS` with the project importable, in `cwd`; return it with text stdout/stderr."""
    return subprocess.run(
        [python, "-c", program] + [str(a) for a in args],
        cwd=str(cwd),
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
