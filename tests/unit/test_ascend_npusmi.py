"""npu-smi parsing against real captures: every layout, every value that matters."""

from __future__ import annotations

import pytest

from tests.support.ascend_fakes import VERSIONS_800IA2, command_output, fixture_text, section
from workbench.ascend.npusmi import (
    NOT_FOUND_RC,
    TIMEOUT_RC,
    classify_failure,
    on_device,
    parse_board,
    parse_info,
    parse_usages,
)

DEVICE_KEYS = {"npu", "chip", "name", "health", "power_w", "temp_c", "aicore_pct", "memory_mb", "hbm_mb"}
A3 = "derived_npu-smi-info_A3_phy-id_from_910B3.txt"
WIDE_26X = "derived_npu-smi-info_26x_container-pid_from_910B3.txt"
DUO = "derived_npu-smi-info_310P3-duo_two-chips_from_310x4.txt"


def parse(name: str):
    return parse_info(fixture_text(name))


def test_910b3_eight_devices_with_hbm_and_processes():
    info = parse("npu-smi-info_910B3_x8_with_processes.txt")
    assert info.version == "23.0.rc3.3"
    assert info.layout == "chip-hbm"
    assert [d["npu"] for d in info.devices] == list(range(8))
    assert all(set(d) == DEVICE_KEYS for d in info.devices)
    assert {d["name"] for d in info.devices} == {"910B3"}
    assert {d["health"] for d in info.devices} == {"OK"}
    first, last = info.devices[0], info.devices[7]
    assert first == {
        "npu": 0,
        "chip": 0,
        "name": "910B3",
        "health": "OK",
        "power_w": 133.9,
        "temp_c": 43.0,
        "aicore_pct": 0.0,
        "memory_mb": [0.0, 0.0],
        "hbm_mb": [60478.0, 65536.0],
    }
    assert (last["power_w"], last["temp_c"], last["aicore_pct"], last["hbm_mb"]) == (
        177.3,
        53.0,
        89.0,
        [60058.0, 65536.0],
    )
    assert [d["aicore_pct"] for d in info.devices] == [0, 93, 94, 89, 83, 0, 9, 89]
    assert [p["pid"] for p in info.processes] == list(range(683932, 683940))
    assert info.processes[3] == {"npu": 3, "chip": 0, "pid": 683935, "name": "python", "memory_mb": 55754.0}
    assert all("container_pid" not in p for p in info.processes)
    assert info.unparsed == [] and info.idle_npus == []


def test_910a_warning_device_and_no_processes():
    info = parse("npu-smi-info_910A_warning_ms1.10_modelarts.txt")
    assert info.version == "23.0.rc3"
    assert info.layout == "chip-hbm"
    assert info.devices == [
        {
            "npu": 1,
            "chip": 0,
            "name": "910A",
            "health": "Warning",
            "power_w": 69.6,
            "temp_c": 35.0,
            "aicore_pct": 0.0,
            "memory_mb": [2681.0, 15137.0],
            "hbm_mb": [1.0, 32768.0],
        }
    ]
    assert info.processes == [] and info.idle_npus == [1]
    assert info.unparsed == []  # the shell prompt and the python lines around the table are ignored


def test_310b4_board_without_hbm_and_na_bus_id():
    info = parse("npu-smi-info_310B4_atlas200IDKA2.txt")
    assert (info.version, info.layout) == ("23.0.rc3", "device-nohbm")
    assert info.devices == [
        {
            "npu": 0,
            "chip": 0,
            "name": "310B4",
            "health": "OK",
            "power_w": 7.7,
            "temp_c": 54.0,
            "aicore_pct": 0.0,
            "memory_mb": [2166.0, 3513.0],
            "hbm_mb": None,
        }
    ]


def test_310_four_chips_on_one_npu_with_numeric_name():
    info = parse("npu-smi-info_310_x4_atlas800-3000_21.0.4_hwdoc.txt")
    assert info.version == "21.0.4.B030" and info.smi_version == "21.0.4"
    assert info.layout == "device-nohbm"
    assert [(d["npu"], d["chip"], d["name"]) for d in info.devices] == [(6, c, "310") for c in range(4)]
    assert [d["temp_c"] for d in info.devices] == [73, 74, 70, 65]
    assert [d["memory_mb"] for d in info.devices] == [[2703, 8192], [2867, 8192], [2867, 8192], [2867, 8192]]
    assert all(d["hbm_mb"] is None and d["power_w"] == 12.8 for d in info.devices)


def test_310p_style_na_power_is_none():
    # 310P cards print NA for power; same table as the 310 capture otherwise.
    text = fixture_text("npu-smi-info_310_x4_atlas800-3000_21.0.4_hwdoc.txt").replace("| 12.8   ", "| NA     ")
    info = parse_info(text)
    assert [d["power_w"] for d in info.devices] == [None] * 4
    assert [d["temp_c"] for d in info.devices] == [73, 74, 70, 65]


def test_800ia2_captures_with_and_without_title_line():
    text = fixture_text(VERSIONS_800IA2)
    with_title = parse_info(section(text, "# Source 1:", "# Source 2:"))
    assert with_title.version == "25.0.rc1.1"
    assert [(d["name"], d["power_w"], d["aicore_pct"], d["hbm_mb"]) for d in with_title.devices] == [
        ("910B4", 105.5, 5.0, [6154.0, 65536.0])
    ]
    no_title = parse_info(section(text, "# Source 2:", "# Source 3:"))
    assert no_title.version is None
    assert no_title.layout == "chip-hbm"
    assert [(d["name"], d["temp_c"], d["hbm_mb"]) for d in no_title.devices] == [("910B4", 40.0, [2828.0, 32768.0])]


def test_a3_layout_two_chips_per_npu_and_dash_power():
    info = parse(A3)
    assert info.layout == "phyid-hbm"
    assert [(d["npu"], d["chip"]) for d in info.devices] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [d["power_w"] for d in info.devices] == [133.9, None, 194.0, None]
    assert info.devices[1]["aicore_pct"] == 93.0
    assert [(p["npu"], p["chip"]) for p in info.processes] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_310p_duo_two_dies_and_npu_chip_process_column():
    info = parse(DUO)
    assert info.layout == "device-nohbm+container-pid"
    assert [(d["npu"], d["chip"], d["aicore_pct"]) for d in info.devices] == [(0, 0, 0.0), (0, 1, 37.0)]
    assert [(p["npu"], p["chip"], p["pid"], p["container_pid"]) for p in info.processes] == [
        (0, 0, 41235, None),
        (0, 1, 41236, None),
    ]


def test_wide_26x_layout_with_container_pid_column():
    info = parse(WIDE_26X)
    assert info.version == "26.0.rc1"
    assert info.layout == "chip-hbm+container-pid"
    assert [d["hbm_mb"] for d in info.devices] == [[60478.0, 65536.0], [60060.0, 65536.0]]
    assert info.processes == [
        {"npu": 0, "chip": 0, "pid": 683932, "name": "python", "memory_mb": 56154.0, "container_pid": None},
        {"npu": 0, "chip": 0, "pid": 683936, "name": "python", "memory_mb": 55755.0, "container_pid": 412},
    ]
    assert info.idle_npus == [1]


def test_text_without_table_gives_no_devices():
    info = parse_info(command_output(fixture_text("docker-container_npu-smi_dcmi-8020_and_toolkit-info-8.0.0.txt")))
    assert (info.devices, info.processes, info.layout, info.version) == ([], [], "none", None)


def test_garbled_row_is_reported_not_dropped_silently():
    text = fixture_text("npu-smi-info_910B3_x8_with_processes.txt").replace("| 683935        |", "| 68x935        |")
    info = parse_info(text)
    assert len(info.processes) == 7
    assert len(info.unparsed) == 1 and "68x935" in info.unparsed[0]


def test_rows_of_unknown_shape_give_unknown_layout():
    text = fixture_text("npu-smi-info_910B3_x8_with_processes.txt").replace("| OK            |", "| OK | extra |")
    text = text.replace("| 0000:", "| x | 0000:")
    info = parse_info(text)
    assert info.devices == [] and info.layout == "unknown"
    assert len(info.unparsed) == 16
    assert len(info.processes) == 8


def test_board_and_usages():
    board = parse_board(fixture_text("npu-smi-info-t-board_910B-HBM64G_25.5.1_telegraf-fixture.txt")).card
    assert board["Software Version"] == "25.5.1"
    assert board["Firmware Version"] == "7.8.0.6.201"
    assert board["PCIe Bus Info"] == "0000:C1:00.0"
    assert board["PCI Device ID"] == "0xD802"
    assert "# npu-smi info -t board -i 0" not in board
    usages = parse_usages(fixture_text("npu-smi-info-t-usages_910B-HBM64G_25.5.1_telegraf-fixture.txt")).chips[0]
    assert usages["HBM Capacity(MB)"] == 65536.0
    assert usages["HBM Usage Rate(%)"] == 5.0
    assert usages["Ctrlcpu Usage Rate(%)"] == 6.0
    assert usages["Aicore Usage Rate(%)"] == 0.0


@pytest.mark.parametrize(
    "returncode, stdout, stderr, code",
    [
        (
            1,
            "",
            "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
            "dcmi model initialized failed, because the device is used. ret is -8020",
            "dcmi-8020",
        ),
        (1, "DrvMngGetConsoleLogLevel failed. (ret=4)\ndcmi module initialize failed. ret is -8005", "", "dcmi-8005"),
        (126, "", "bash: /usr/local/bin/npu-smi: Permission denied", "npu-smi-permission"),
        (NOT_FOUND_RC, "", "bash: npu-smi: command not found", "npu-smi-not-found"),
        (TIMEOUT_RC, "", "npu-smi timed out after 5.0 s; process group killed", "timeout"),
        (TIMEOUT_RC, "", "npu-smi lock /tmp/x.lock: wait timed out after 5.0 s", "lock-busy"),
        (3, "", "something new", "exit-3"),
    ],
)
def test_classify_failure_known_texts(returncode, stdout, stderr, code):
    found = classify_failure(returncode, stdout, stderr)
    assert found is not None and found["code"] == code
    assert found["cause"] and found["hint"]


def test_classify_failure_on_recorded_container_transcript():
    out = command_output(fixture_text("docker-container_npu-smi_dcmi-8020_and_toolkit-info-8.0.0.txt"))
    assert "ret is -8020" in out
    assert classify_failure(1, out, "")["code"] == "dcmi-8020"


def test_classify_failure_success_is_none():
    table = fixture_text("npu-smi-info_910B3_x8_with_processes.txt")
    assert classify_failure(0, table, "") is None


def test_on_device_needs_the_npu_and_the_chip_where_the_row_has_one():
    info = parse(DUO)
    chip0, chip1 = info.processes
    assert not on_device(chip0, 0, 1) and on_device(chip1, 0, 1)
    assert on_device(chip0, 0, None)  # no chip asked: the NPU alone decides
    assert on_device(dict(chip0, chip=None), 0, 1)  # activity.py blocks such rows on a multi-die NPU
    assert not on_device(chip1, 1, 1)
