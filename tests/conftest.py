"""Fixtures every test may use: a private device-lock folder, a sessions root checked afterwards, the CLI helpers."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import settings

from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from tests.support.waiting import wait_for
from workbench.system.atomic import read_json

# Hypothesis's 200 ms deadline per example is a timed assert: on a loaded 2-core machine a file-writing example took
# 318 ms once (test_candidate, CI) and failed the run. No deadline for any property test; each keeps its own
# example count. Loaded here, before any test module builds its @settings.
settings.register_profile("workbench", deadline=None)
settings.load_profile("workbench")


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


# find_spec, not import: the test process never loads MindSpore (the jobs it starts do).
HAS_MINDSPORE = importlib.util.find_spec("mindspore") is not None
FOLDER_MARKS = {"jobs": "jobs", "ui": "ui"}  # tests/<folder>/ -> the marker each of its tests carries


def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test by its folder (`-m jobs`, `-m "not ui"`); skip `requires_mindspore` tests without MindSpore."""
    skip_ms = pytest.mark.skip(reason="MindSpore is not installed")
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        if folder in FOLDER_MARKS:
            item.add_marker(FOLDER_MARKS[folder])
        if not HAS_MINDSPORE and item.get_closest_marker("requires_mindspore"):
            item.add_marker(skip_ms)


def pytest_configure(config) -> None:
    """Module-scoped job fixtures start before any per-test folder: give the whole run its own lock folder
    too, so the suite never collides with the machine's real jobs (or another test run) on CPU:0. Each
    pytest-xdist worker gets its own: workers inherit the controller's, and two workers' module fixtures
    would otherwise refuse each other's jobs on CPU:0."""
    if not os.environ.get("MS_WORKBENCH_LOCK_DIR") or os.environ.get("PYTEST_XDIST_WORKER"):
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
