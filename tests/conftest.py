"""Shared test helpers: a sessions folder, the real CLI in a subprocess, polling, event checks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from workbench.events.protocol import validate_file
from workbench.system.atomic import read_json

PROJECT_ROOT = Path(__file__).resolve().parent.parent


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


def poll_until(predicate: Callable[[], Any], timeout_s: float, poll_s: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; return its last value (falsy after timeout_s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(poll_s)  # the poll interval of this condition wait, not a delay anything relies on


def wait_for(predicate: Callable[[], Any], timeout_s: float, poll_s: float = 0.05, what: str = "") -> Any:
    """Poll `predicate` until it returns something truthy and return that; fail after timeout_s."""
    value = poll_until(predicate, timeout_s, poll_s)
    if not value:
        raise AssertionError(
            "timed out after %.1f s waiting for %s" % (timeout_s, what or getattr(predicate, "__name__", "a condition"))
        )
    return value


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` for the block (skips the test without root or mount rights)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % done.stderr.decode(errors="replace").strip())
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def assert_events_valid(job_dir: Path) -> None:
    """Every line of the job's events.jsonl is a valid v1 event with contiguous seq."""
    path = Path(job_dir) / "events.jsonl"
    assert path.is_file(), "%s: no events.jsonl" % job_dir
    problems = validate_file(str(path))
    assert not problems, "%s:\n  %s" % (path, "\n  ".join(problems[:20]))


def _damages_events_on_purpose(job_dir: Path) -> bool:
    """Jobs configured to write torn or garbage lines are checked by their own tests instead."""
    try:
        drill = read_json(job_dir / "config.json").get("drill") or {}
    except (OSError, ValueError):
        return False
    return bool(drill.get("torn") or drill.get("garbage"))


def _stop_leftovers(root: Path) -> None:
    """SIGKILL the supervisors and job groups a test left running (a failed test, say)."""
    for pids_path in root.glob("*/jobs/*/pids.json"):
        if (pids_path.parent / "exit.json").exists():
            continue
        try:
            pids = read_json(pids_path)
        except (OSError, ValueError):
            continue
        for kill, target in ((os.kill, pids.get("supervisor")), (os.killpg, pids.get("pgid"))):
            if target:
                try:
                    kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def pytest_configure(config) -> None:
    """Module-scoped job fixtures start before any per-test folder: give the whole run its own lock folder
    too, so the suite never collides with the machine's real jobs (or another test run) on CPU:0."""
    if not os.environ.get("MS_WORKBENCH_LOCK_DIR"):
        os.environ["MS_WORKBENCH_LOCK_DIR"] = tempfile.mkdtemp(prefix="ms-workbench-test-locks-")


@pytest.fixture(autouse=True)
def private_lock_dir(tmp_path, monkeypatch) -> Path:
    """Device locks are machine-wide; each test gets its own folder so parallel test runs never collide."""
    locks = tmp_path / "locks"
    monkeypatch.setenv("MS_WORKBENCH_LOCK_DIR", str(locks))
    return locks


@pytest.fixture
def sessions(tmp_path, monkeypatch) -> Path:
    """A sessions root for one test; afterwards every job's events.jsonl must validate."""
    root = tmp_path / "sessions"
    # A command that forgets --sessions still lands here, never in the project's sessions/.
    monkeypatch.setenv("MS_WORKBENCH_SESSIONS", str(root))
    yield root
    _stop_leftovers(root)
    for job_dir in sorted(root.glob("*/jobs/*")):
        if (job_dir / "events.jsonl").exists() and not _damages_events_on_purpose(job_dir):
            assert_events_valid(job_dir)


@pytest.fixture(name="run_cli")
def run_cli_fixture() -> Callable[..., subprocess.CompletedProcess]:
    """The `run_cli` helper."""
    return run_cli


@pytest.fixture(name="wait_for")
def wait_for_fixture() -> Callable[..., Any]:
    """The `wait_for` helper."""
    return wait_for


@pytest.fixture(name="assert_events_valid")
def assert_events_valid_fixture() -> Callable[[Path], None]:
    """The `assert_events_valid` helper."""
    return assert_events_valid
