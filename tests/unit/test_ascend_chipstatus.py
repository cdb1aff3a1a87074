"""Per-chip `npu-smi info -t ...` records on a two-chip card with an MCU block, and the chip status read from them."""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.ascend_fakes import DOCKER_FIXTURE, fixture_path, fixture_text, install_fake_npu_smi
from workbench.ascend import chipstatus
from workbench.ascend.npusmi import parse_board, parse_usages, run_npu_smi
from workbench.ascend.smiblocks import decimal

COMMON = "derived_npu-smi-info-t-common_310P3-duo_two-chips-and-mcu.txt"
USAGES = "derived_npu-smi-info-t-usages_310P3-duo_two-chips.txt"
HEALTH = "derived_npu-smi-info-t-health_310P3-duo_two-chips-and-mcu.txt"
USAGES_910B = "npu-smi-info-t-usages_910B-HBM64G_25.5.1_telegraf-fixture.txt"
BOARD_910B = "npu-smi-info-t-board_910B-HBM64G_25.5.1_telegraf-fixture.txt"


def without_blank_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip())


@pytest.mark.parametrize("squeeze", [False, True])
def test_common_gives_one_record_per_chip_and_the_mcu_apart(squeeze):
    text = fixture_text(COMMON)
    records = parse_usages(without_blank_lines(text) if squeeze else text)
    assert (records.npu, records.chip_count) == (0, 2)
    assert sorted(records.chips) == [0, 1]
    assert records.chips[0]["Temperature(C)"] == 73.0 and records.chips[1]["Temperature(C)"] == 74.0
    assert records.chips[1]["Aicore Usage Rate(%)"] == 37.0
    assert "NPU Real-time Power(W)" not in records.chips[1]  # the card's power is the MCU's, not chip 1's
    assert records.mcu == {"Chip Name": "mcu", "Temperature(C)": 48.0, "NPU Real-time Power(W)": 45.2}


@pytest.mark.parametrize("squeeze", [False, True])
def test_usages_chip_id_closes_each_block(squeeze):
    text = fixture_text(USAGES)
    records = parse_usages(without_blank_lines(text) if squeeze else text)
    assert [records.chips[c]["DDR Usage Rate(%)"] for c in (0, 1)] == [33.0, 35.0]
    assert [records.chips[c]["Aicore Usage Rate(%)"] for c in (0, 1)] == [0.0, 37.0]
    assert records.mcu is None and records.card == {}


@pytest.mark.parametrize("squeeze", [False, True])
def test_health_per_chip_not_the_mcus(squeeze):
    text = fixture_text(HEALTH)
    records = parse_board(without_blank_lines(text) if squeeze else text)
    assert {c: r["Health"] for c, r in records.chips.items()} == {0: "OK", 1: "Warning"}
    assert records.mcu == {"Health": "OK", "Chip Name": "MCU"}


def test_real_910b_usages_and_board():
    usages = parse_usages(fixture_text(USAGES_910B))
    assert list(usages.chips) == [0]
    assert usages.chips[0]["HBM Capacity(MB)"] == 65536.0 and usages.chips[0]["HBM Usage Rate(%)"] == 5.0
    board = parse_board(fixture_text(BOARD_910B))
    assert board.npu == 0 and board.chip_count == 1 and board.chips == {}
    assert board.card["Firmware Version"] == "7.8.0.6.201" and board.card["Software Version"] == "25.5.1"


def test_a_chip_asked_for_with_c_has_no_chip_id_line():
    records = parse_board(
        "        Health Status                  : OK\n        Error Code                     : NA\n", chip=1
    )
    assert records.chips == {1: {"Health Status": "OK", "Error Code": "NA"}}


@pytest.fixture
def duo_run(tmp_path):
    smi = install_fake_npu_smi(
        tmp_path / "bin",
        {"common": fixture_path(COMMON), "usages": fixture_path(USAGES), "health": fixture_path(HEALTH)},
    )
    return functools.partial(run_npu_smi, timeout_s=10, lock_path=str(tmp_path / "smi.lock"), command=str(smi))


def test_read_chip_status_of_the_second_die(duo_run):
    status = chipstatus.read_chip_status(duo_run, 0, 1)
    assert (status["npu"], status["chip"], status["health"]) == (0, 1, "Warning")
    assert (status["temperature_c"], status["aicore_pct"]) == (74.0, 37.0)
    assert status["power_w"] is None and status["card_power_w"] == 45.2  # 310P: power is the card's
    assert status["memory_mb"] == [2867.0, 8192.0] and status["hbm_mb"] is None
    assert status["mcu"] == {"health": "OK", "error_code": None, "temperature_c": 48.0, "power_w": 45.2}
    assert status["errors"] == {}


def test_read_card_status_lists_every_chip(duo_run):
    card = chipstatus.read_card_status(duo_run, 0)
    assert [(c["chip"], c["health"], c["temperature_c"]) for c in card["chips"]] == [
        (0, "OK", 73.0),
        (1, "Warning", 74.0),
    ]
    rows = chipstatus.chip_status_rows([card])
    assert [r["device"] for r in rows] == ["NPU 0 chip 0", "NPU 0 chip 1", "NPU 0 MCU"]
    assert rows[1] == {
        "device": "NPU 0 chip 1",
        "health": "Warning",
        "temp": "74 °C",
        "power": "45.2 W (card)",
        "aicore": "37 %",
        "memory": "2867 / 8192 MB",
    }
    assert rows[2]["temp"] == "48 °C" and rows[2]["aicore"] == "—"


def test_single_chip_910b_from_usages_with_a_failing_common(tmp_path):
    smi = install_fake_npu_smi(tmp_path / "bin", {"usages": fixture_path(USAGES_910B)})
    run = functools.partial(run_npu_smi, timeout_s=10, lock_path=str(tmp_path / "smi.lock"), command=str(smi))
    status = chipstatus.read_chip_status(run, 0, 0)
    assert status["aicore_pct"] == 0.0 and status["hbm_mb"] == [3277.0, 65536.0]  # 5 % of 65536 MB
    assert status["memory_mb"] is None  # DDR Capacity 0: this chip has HBM only
    assert status["temperature_c"] is None and status["health"] is None
    assert set(status["errors"]) == {"common", "health"} and "exit-2" in status["errors"]["common"]


def test_npu_smi_without_device_gives_errors_not_values(tmp_path):
    smi = install_fake_npu_smi(
        tmp_path / "bin",
        {
            "common": fixture_path(DOCKER_FIXTURE),
            "usages": fixture_path(DOCKER_FIXTURE),
            "health": fixture_path(DOCKER_FIXTURE),
        },
    )
    run = functools.partial(run_npu_smi, timeout_s=10, lock_path=str(tmp_path / "smi.lock"), command=str(smi))
    status = chipstatus.read_chip_status(run, 0, 0)
    assert all(status[k] is None for k in ("health", "temperature_c", "power_w", "aicore_pct", "hbm_mb"))
    assert all("dcmi-8020" in text for text in status["errors"].values()) and len(status["errors"]) == 3


HEALTH_CODE = "derived_npu-smi-info-t-health_310P3-duo_error-code.txt"


def test_a_hex_health_code_is_a_code_not_a_number(tmp_path):
    records = parse_usages(fixture_text(HEALTH_CODE))  # the reader read_card_status uses for every kind
    assert records.chips[1]["Error Code"] == "80E01801"
    smi = install_fake_npu_smi(
        tmp_path / "bin",
        {"common": fixture_path(COMMON), "usages": fixture_path(USAGES), "health": fixture_path(HEALTH_CODE)},
    )
    run = functools.partial(run_npu_smi, timeout_s=10, lock_path=str(tmp_path / "smi.lock"), command=str(smi))
    card = chipstatus.read_card_status(run, 0)
    assert [(c["chip"], c["health"], c["error_code"]) for c in card["chips"]] == [
        (0, "OK", None),
        (1, "Alarm", "80E01801"),
    ]
    rows = chipstatus.chip_status_rows([card])
    assert rows[1]["health"] == "Alarm (80E01801)" and rows[0]["health"] == "OK"


@given(st.from_regex(r"[0-9]{1,4}[eE][0-9]{1,6}|[0-9A-F]{8}|[+-]?(inf|nan|Infinity)", fullmatch=True))
def test_only_plain_decimals_become_numbers(text):
    value = decimal(text)
    assert value is None or (math.isfinite(value) and text.strip().lstrip("+-").replace(".", "").isdigit())
