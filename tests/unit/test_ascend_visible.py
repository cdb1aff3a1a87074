"""ASCEND_RT_VISIBLE_DEVICES checks, with device lists from real npu-smi captures."""

from __future__ import annotations

import pytest

from tests.support.ascend_fakes import fixture_text
from workbench.ascend.npusmi import parse_info
from workbench.ascend.visible import check_visible_devices


def seen(name: str):
    """One id per device (chip) npu-smi listed in a capture."""
    return [d["npu"] for d in parse_info(fixture_text(name)).devices]


EIGHT = seen("npu-smi-info_910B3_x8_with_processes.txt")


@pytest.mark.parametrize(
    "value, status, words",
    [
        ("0", "observed-pass", "within the 8 device(s)"),
        ("0,1,2,3,4,5,6,7", "observed-pass", "ascending"),
        ("3,5", "observed-pass", "within"),
        ("0,2,4,6,1,3,5,7", "observed-fail", "not in ascending order"),  # the value in E13
        ("0,1,1", "observed-fail", "1 more than once"),
        ("8", "observed-fail", "8 outside [0, 8)"),
        ("0, 1", "observed-fail", "comma-separated integers"),
        ("", "observed-fail", "comma-separated integers"),
        ("0,,1", "observed-fail", "comma-separated integers"),
        ("npu0", "observed-fail", "comma-separated integers"),
    ],
)
def test_values_against_eight_devices(value, status, words):
    result = check_visible_devices(value, EIGHT)
    assert result["status"] == status, result
    assert words in result["detail"]


def test_unset_is_not_run():
    assert check_visible_devices(None, EIGHT)["status"] == "not-run"


def test_range_is_an_index_into_what_this_container_sees():
    # E14: a VM that sees 2 NPUs was given "4" -> "input data rang[0-2)".
    result = check_visible_devices("4", [4, 5])
    assert result["status"] == "observed-fail" and "[0, 2)" in result["detail"]
    assert check_visible_devices("1", [4, 5])["status"] == "observed-pass"


def test_single_device_board():
    board = seen("npu-smi-info_310B4_atlas200IDKA2.txt")
    assert check_visible_devices("0", board)["status"] == "observed-pass"
    assert check_visible_devices("1", board)["status"] == "observed-fail"


def test_no_device_list_is_blocked_but_format_still_checked():
    assert check_visible_devices("0,1", None)["status"] == "blocked"
    assert check_visible_devices("1,0", None)["status"] == "observed-fail"
    assert check_visible_devices("0,1", None)["ids"] == [0, 1]
