"""Device-activity verdicts on the recorded npu-smi tables: which NPU, which pid, which rule."""

from __future__ import annotations

import pytest

from tests.support.ascend_fakes import fixture_text
from workbench.ascend.activity import CONTAINER, HOST, activity_verdict, npu_for_device, pid_space
from workbench.ascend.npusmi import parse_info
from workbench.events.protocol import Evidence

B3 = "npu-smi-info_910B3_x8_with_processes.txt"
WIDE_26X = "derived_npu-smi-info_26x_container-pid_from_910B3.txt"
A3 = "derived_npu-smi-info_A3_phy-id_from_910B3.txt"
DUO = "derived_npu-smi-info_310P3-duo_two-chips_from_310x4.txt"
SHARED_PIDS = "derived_npu-smi-info_310P3-duo_containers-sharing-pids_from_310x4.txt"


def parse(name: str):
    return parse_info(fixture_text(name))


HOLDS_NPU = ["/dev/davinci0"]  # the device nodes a process on an NPU holds open


def verdict(
    name: str, pid: int, device_id: int, visible=None, in_container=None, text=None, host_pid=None, fds=HOLDS_NPU
):
    info = parse_info(text) if text is not None else parse(name)
    space = pid_space({True: CONTAINER, False: HOST, None: None}[in_container], pid, host_pid, device_fds=fds)
    return activity_verdict(info, space, npu_for_device(device_id, visible, info.devices))


def test_device_id_is_a_position_in_the_device_table():
    info = parse(B3)
    assert npu_for_device(3, None, info.devices)["npu"] == 3
    wide = parse(WIDE_26X)
    mapped = npu_for_device(1, None, wide.devices)
    assert (mapped["npu"], mapped["index"], mapped["error"]) == (1, 1, None)


def test_visible_devices_remap_the_id():
    info = parse(B3)
    mapped = npu_for_device(1, "2,5", info.devices)
    assert (mapped["index"], mapped["npu"]) == (5, 5)
    assert "remaps" in mapped["rule"] and "'2,5'" in mapped["rule"]


def test_bad_visible_devices_give_no_npu():
    info = parse(B3)
    assert "ascending" in npu_for_device(0, "5,2", info.devices)["error"]
    outside = npu_for_device(2, "2,5", info.devices)
    assert outside["npu"] is None and "outside" in outside["error"]
    assert npu_for_device(9, None, info.devices)["error"] == "entry 9 asked for, but npu-smi lists 8 device row(s)"


def test_host_pid_matched_on_requested_npu_with_its_aicore():
    found = verdict(B3, 683935, 3, in_container=False)
    assert found["status"] == "observed-pass"
    assert found["evidence"]["rule"] == "host-pid"
    assert found["evidence"]["row"]["pid"] == 683935
    assert found["evidence"]["aicore_pct"] == 89.0
    assert found["detail"].startswith("pid 683935 seen on NPU 3 by the host-pid rule")
    assert "AICore 89%" in found["detail"]


def test_visible_devices_remap_before_matching():
    # Logical device 0 with ASCEND_RT_VISIBLE_DEVICES=3,4 is NPU 3, where pid 683935 runs.
    found = verdict(B3, 683935, 0, visible="3,4", in_container=False)
    assert found["status"] == "observed-pass" and found["evidence"]["mapping"]["npu"] == 3
    # Without the variable, device 0 is NPU 0, where another process runs.
    assert verdict(B3, 683935, 0, in_container=False)["status"] == "observed-fail"


def test_pid_on_another_npu_is_observed_fail_naming_the_pids_seen():
    found = verdict(B3, 683935, 2, in_container=False)
    assert found["status"] == "observed-fail"
    assert "pid 683935 not in npu-smi's process table for NPU 2" in found["detail"]
    assert "683934 on NPU 2" in found["detail"] and "683935 on NPU 3" in found["detail"]
    assert "AICore 94%" in found["detail"]
    assert found["hint"]


def test_unknown_pid_among_several_processes_is_observed_fail():
    found = verdict(B3, 4242, 0, in_container=False)
    assert found["status"] == "observed-fail"
    assert len(found["evidence"]["processes"]) == 8
    assert found["evidence"]["rule"] == "host-pid" and found["evidence"]["row"] is None


def test_container_pid_matched_and_named():
    found = verdict(WIDE_26X, 412, 0, in_container=True)
    assert found["status"] == "observed-pass"
    assert found["evidence"]["rule"] == "container-pid"
    assert found["evidence"]["row"]["pid"] == 683936
    assert "by the container-pid rule" in found["detail"]


def test_several_processes_on_one_npu_pick_our_row():
    found = verdict(WIDE_26X, 683932, 0, in_container=False)
    assert found["status"] == "observed-pass" and found["evidence"]["rule"] == "host-pid"
    assert [p["pid"] for p in found["evidence"]["processes"]] == [683932, 683936]
    assert found["evidence"]["row"]["container_pid"] is None


def test_container_pid_colliding_with_a_host_pid_follows_where_we_run():
    # Give the containerised process the container pid 683932, the host pid of the other row.
    text = fixture_text(WIDE_26X).replace("| 412                     |", "| 683932                  |")
    inside = verdict(WIDE_26X, 683932, 0, in_container=True, text=text)
    assert inside["status"] == "observed-pass"
    assert (inside["evidence"]["rule"], inside["evidence"]["row"]["pid"]) == ("container-pid", 683936)
    host = verdict(WIDE_26X, 683932, 0, in_container=False, text=text)
    assert (host["evidence"]["rule"], host["evidence"]["row"]["pid"]) == ("host-pid", 683932)
    assert "not this job: host pid 683936 (in container 683932)" in host["detail"]


def test_host_job_is_not_another_containers_process_with_the_same_pid():
    # Host pid 412 is not on the table; a container's process has in-container pid 412.
    found = verdict(WIDE_26X, 412, 0, in_container=False)
    assert found["status"] == Evidence.FAIL, found
    assert found["evidence"]["row"] is None
    assert "not this job: host pid 683936 (in container 412)" in found["detail"]
    # The same on a two-die card, on our die and on the sibling die.
    for device_id in (0, 1):
        shared = verdict(SHARED_PIDS, 41238, device_id, in_container=False)
        assert shared["status"] == Evidence.FAIL, shared
        assert "host pid 41237 (in container 41238) on NPU 0 chip 0" in shared["detail"]


@pytest.mark.parametrize("device_id", [0, 1])
def test_two_containers_with_the_same_pid_are_blocked_naming_both(device_id):
    found = verdict(SHARED_PIDS, 75, device_id, in_container=True)
    assert found["status"] == Evidence.BLOCKED, found
    assert "in-container pid 75 is on 2 rows" in found["detail"]
    assert "host pid 41235 (in container 75) on NPU 0 chip 0" in found["detail"]
    assert "host pid 41236 (in container 75) on NPU 0 chip 1" in found["detail"]


def test_pid_one_in_two_containers_is_blocked():
    text = fixture_text(SHARED_PIDS).replace("| 75                            |", "| 1                             |")
    assert verdict(SHARED_PIDS, 1, 1, in_container=True, text=text)["status"] == Evidence.BLOCKED


def test_containerised_job_never_matches_a_host_pid_it_happens_to_equal():
    # In-container pid 41235 equals the host pid of the chip-0 row, whose own container pid is 75.
    found = verdict(SHARED_PIDS, 41235, 0, in_container=True)
    assert found["status"] == Evidence.FAIL, found
    assert found["evidence"]["rule"] == "container-pid" and found["evidence"]["row"] is None


def test_known_host_pid_whose_row_names_another_container_pid_is_blocked():
    # NSpid gave host pid 41236, but that row says in-container pid 75 while ours is 80.
    found = verdict(SHARED_PIDS, 80, 1, in_container=True, host_pid=41236)
    assert found["status"] == Evidence.BLOCKED, found
    assert "names in-container pid 75, not this job's 80" in found["detail"]
    agree = verdict(SHARED_PIDS, 75, 1, in_container=True, host_pid=41236)
    assert agree["status"] == Evidence.PASS and agree["evidence"]["rule"] == "host-pid"
    assert "pid 75 (host pid 41236) seen on NPU 0 chip 1" in agree["detail"]


def test_unknown_pid_namespace_is_blocked():
    found = verdict(B3, 683935, 3, in_container=None)
    assert found["status"] == Evidence.BLOCKED
    assert "pid namespace is unknown" in found["detail"]


def test_in_container_with_host_pids_only_a_coincidental_hit_is_blocked():
    # In-container pid 683935 equals the host pid on NPU 3: still not evidence for this job.
    found = verdict(B3, 683935, 3, in_container=True)
    assert found["status"] == Evidence.BLOCKED
    assert "host pids only" in found["detail"]


def test_in_container_with_host_pids_only_is_blocked_not_failed():
    found = verdict(B3, 412, 3, in_container=True)
    assert found["status"] == "blocked"
    assert "host pids only" in found["detail"]


def test_idle_npu_is_observed_fail():
    found = verdict(WIDE_26X, 683932, 1, in_container=False)
    assert found["status"] == "observed-fail"
    assert found["evidence"]["aicore_pct"] == 93.0


@pytest.mark.parametrize("name, job_pid, sibling_pid", [(A3, 683933, 683932), (DUO, 41236, 41235)])
def test_two_dies_under_one_npu_match_on_npu_and_chip(name, job_pid, sibling_pid):
    # Logical device 1 is the second row of the device table: NPU 0, chip 1 (A3 and 310P Duo alike).
    # The sibling die of the same NPU is another device: a pid there is not this job on its device.
    sibling = verdict(name, sibling_pid, 1, in_container=False)
    assert sibling["status"] == Evidence.FAIL, sibling
    assert "not in npu-smi's process table for NPU 0 chip 1" in sibling["detail"]
    assert "%d on NPU 0 chip 0" % sibling_pid in sibling["detail"]
    on_chip = verdict(name, job_pid, 1, in_container=False)
    assert (on_chip["evidence"]["mapping"]["npu"], on_chip["evidence"]["mapping"]["chip"]) == (0, 1)
    assert on_chip["status"] == Evidence.PASS, on_chip
    assert on_chip["evidence"]["row"]["chip"] == 1
    assert "seen on NPU 0 chip 1" in on_chip["detail"]


def test_chip_row_gives_the_aicore_of_the_asked_for_die():
    found = verdict(DUO, 41236, 1, in_container=False)
    assert found["evidence"]["aicore_pct"] == 37.0
    assert [c["chip"] for c in found["evidence"]["chips"]] == [0, 1]


def test_rows_without_a_chip_number_cannot_place_the_job_on_a_die():
    # An older process table printing only the NPU number: the die cannot be checked.
    text = fixture_text(A3).replace("| 0       1                 | 683933", "| 0                         | 683933")
    found = verdict(A3, 683933, 1, in_container=False, text=text)
    assert found["status"] == Evidence.BLOCKED, found
    assert "carries no chip number and NPU 0 has 2 dies: cannot place it on chip 1" in found["detail"]
    # A single-die NPU needs no chip number.
    single = fixture_text(B3).replace("| 3       0                 | 683935", "| 3                         | 683935")
    assert verdict(B3, 683935, 3, in_container=False, text=single)["status"] == Evidence.PASS


def test_unmappable_device_is_blocked():
    found = verdict(B3, 683935, 1, visible="3")
    assert found["status"] == "blocked"
    assert "outside ASCEND_RT_VISIBLE_DEVICES" in found["detail"]


def test_a_unique_container_pid_is_ours_only_if_this_process_holds_a_device_open():
    # Pid 412 is the only in-container 412 on NPU 0; a process on CPU holds no /dev/davinciN.
    on_cpu = verdict(WIDE_26X, 412, 0, in_container=True, fds=[])
    assert on_cpu["status"] == Evidence.FAIL, on_cpu
    assert "is another container's: this process holds no /dev/davinci* node open" in on_cpu["detail"]
    unknown = verdict(WIDE_26X, 412, 0, in_container=True, fds=None)
    assert unknown["status"] == Evidence.BLOCKED and "could not be read" in unknown["detail"]
    holds = verdict(WIDE_26X, 412, 0, in_container=True)
    assert holds["status"] == Evidence.PASS and "holds /dev/davinci0 open" in holds["detail"]
