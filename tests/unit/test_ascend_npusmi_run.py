"""run_npu_smi against a fake npu-smi (recorded outputs): output, failures, timeout, single poller."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import List, Tuple

import pytest

from tests.support.ascend_fakes import command_output, fixture_path, fixture_text, install_fake_npu_smi
from tests.support.waiting import wait_for
from workbench.ascend.npusmi import NOT_FOUND_RC, TIMEOUT_RC, classify_failure, parse_board, parse_info, run_npu_smi
from workbench.system.childproc import group_members

INFO = "npu-smi-info_910B3_x8_with_processes.txt"
DCMI = "docker-container_npu-smi_dcmi-8020_and_toolkit-info-8.0.0.txt"


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    """A bin dir first on PATH (the rest of PATH stays, the fake needs sh, cat, sleep, date)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", "%s%s%s" % (bin_dir, os.pathsep, os.environ.get("PATH", "")))
    return bin_dir


def intervals(log: Path) -> List[Tuple[float, float]]:
    """(start, end) per fake run, from its log lines."""
    starts, ends = {}, {}
    for line in log.read_text().splitlines():
        kind, pid, stamp = line.split()
        (starts if kind == "start" else ends)[pid] = float(stamp)
    return sorted((starts[pid], ends[pid]) for pid in starts)


def test_info_and_board_round_trip(fake_bin, tmp_path):
    install_fake_npu_smi(
        fake_bin,
        {
            "info": fixture_path(INFO),
            "board": fixture_path("npu-smi-info-t-board_910B-HBM64G_25.5.1_telegraf-fixture.txt"),
        },
    )
    rc, out, err, elapsed_s = run_npu_smi(["info"], timeout_s=10, lock_path=str(tmp_path / "smi.lock"))
    assert (rc, err) == (0, "")
    assert out == command_output(fixture_text(INFO))
    assert [d["npu"] for d in parse_info(out).devices] == list(range(8))
    assert 0 < elapsed_s < 10
    rc, out, _, _ = run_npu_smi(["info", "-t", "board", "-i", "0"], timeout_s=10, lock_path=str(tmp_path / "smi.lock"))
    assert rc == 0 and parse_board(out).card["Firmware Version"] == "7.8.0.6.201"
    rc, _, err, _ = run_npu_smi(["info", "-t", "memory", "-i", "0"], timeout_s=10, lock_path=str(tmp_path / "smi.lock"))
    assert rc == 2 and "unsupported arguments" in err


def test_recorded_dcmi_failure_is_classified(fake_bin, tmp_path):
    recorded = command_output(fixture_text(DCMI))
    install_fake_npu_smi(fake_bin, fixture_path(DCMI), exit_code=1, stderr_text="")
    rc, out, err, _ = run_npu_smi(["info"], timeout_s=10, lock_path=str(tmp_path / "smi.lock"))
    assert rc == 1 and out == recorded
    assert classify_failure(rc, out, err)["code"] == "dcmi-8020"


def test_missing_npu_smi(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    rc, out, err, _ = run_npu_smi(["info"], timeout_s=5, lock_path=str(tmp_path / "smi.lock"))
    assert rc == NOT_FOUND_RC and out == ""
    assert classify_failure(rc, out, err)["code"] == "npu-smi-not-found"


def live_group_members(pgid: int) -> List[int]:
    """Pids of non-zombie processes in process group `pgid` (read from /proc)."""
    return group_members(pgid)


def test_hanging_npu_smi_is_killed_at_timeout(fake_bin, tmp_path):
    log = tmp_path / "runs.log"
    install_fake_npu_smi(fake_bin, fixture_path(INFO), hang_s=30, log_path=log)
    rc, out, err, elapsed_s = run_npu_smi(["info"], timeout_s=0.5, lock_path=str(tmp_path / "smi.lock"))
    assert rc == TIMEOUT_RC and out == ""
    assert "timed out after 0.5 s" in err and "still open" not in err
    assert 0.5 <= elapsed_s < 10  # killed at its timeout, not waited out (the fake hangs 30 s)
    assert classify_failure(rc, out, err)["code"] == "timeout"
    # The whole group died, `sleep` included (killing only sh would leave it holding the pipe).
    shell_pid = int(log.read_text().split()[1])
    wait_for(lambda: live_group_members(shell_pid) == [], 10, what="the fake's process group to be gone")


def _run_two_at_once(lock_a: str, lock_b: str) -> None:
    """Start two run_npu_smi calls together and wait for both."""
    results = []
    threads = [
        threading.Thread(target=lambda p=p: results.append(run_npu_smi(["info"], 10, p))) for p in (lock_a, lock_b)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r[0] for r in results] == [0, 0]


def test_single_poller_lock_serialises_runs(fake_bin, tmp_path):
    log = tmp_path / "runs.log"
    install_fake_npu_smi(fake_bin, fixture_path(INFO), hang_s=0.4, log_path=log)
    lock = str(tmp_path / "smi.lock")
    _run_two_at_once(lock, lock)
    (s1, e1), (s2, e2) = intervals(log)
    assert s2 >= e1, "second npu-smi started at %.3f before the first ended at %.3f" % (s2, e1)


def test_without_shared_lock_runs_overlap(fake_bin, tmp_path):
    # Control for the test above: the fake and the log do show overlap when nothing serialises.
    log = tmp_path / "runs.log"
    install_fake_npu_smi(fake_bin, fixture_path(INFO), hang_s=0.4, log_path=log)
    _run_two_at_once(str(tmp_path / "a.lock"), str(tmp_path / "b.lock"))
    (s1, e1), (s2, e2) = intervals(log)
    assert s2 < e1


def test_lock_wait_counts_against_timeout(fake_bin, tmp_path):
    log = tmp_path / "runs.log"
    install_fake_npu_smi(fake_bin, fixture_path(INFO), hang_s=2, log_path=log)
    lock = str(tmp_path / "smi.lock")
    holder = threading.Thread(target=run_npu_smi, args=(["info"], 10, lock))
    holder.start()
    # The fake logs its start once it runs, and it runs under the lock: from then on the lock is held.
    wait_for(lambda: log.exists() and "start" in log.read_text(), 10, what="the first npu-smi to hold the lock")
    rc, _, err, elapsed_s = run_npu_smi(["info"], timeout_s=0.3, lock_path=lock)
    holder.join(30)
    assert rc == TIMEOUT_RC and "lock" in err
    assert elapsed_s < 1.5
    assert classify_failure(rc, "", err)["code"] == "lock-busy"
