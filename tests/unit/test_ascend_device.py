"""`device.target=auto` and an explicit Ascend on machines that show npu-smi but no usable device.

The fake npu-smi prints what real npu-smi printed (the dcmi -8020 container transcript, the
910B3 table); device nodes are plain files under a temporary root, which is all detection reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ascend_fakes import DOCKER_FIXTURE, command_output, fixture_path, fixture_text, install_fake_npu_smi
from workbench.events.protocol import Evidence
from workbench.run import device as devicemod
from workbench.run.device import detect, resolve

B3 = "npu-smi-info_910B3_x8_with_processes.txt"
DCMI_LINE = "dcmi model initialized failed, because the device is used. ret is -8020"
DEVICE_FLAGS = "--device=/dev/davinci0 --device=/dev/davinci_manager --device=/dev/devmm_svm --device=/dev/hisi_hdc"


def board(tmp_path: Path, capture=None, nodes=(), exit_code: int = 0):
    """(env, root, lock) of a machine with these /dev nodes and, when `capture` is given, a fake npu-smi on PATH."""
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    for name in nodes:
        (root / "dev" / name).write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if capture is not None:
        install_fake_npu_smi(bin_dir, fixture_path(capture), exit_code=exit_code)
    return {"PATH": str(bin_dir)}, str(root), str(tmp_path / "npu-smi.lock")


def auto(env, root, lock):
    return detect(env, root, lock_path=lock)


@pytest.mark.parametrize("exit_code", [0, 255])
def test_npu_smi_on_path_without_device_node_resolves_to_cpu(tmp_path, exit_code):
    found = auto(*board(tmp_path, DOCKER_FIXTURE, exit_code=exit_code))
    assert found["target"] == "CPU", found
    assert "no /dev/davinci* device node" in found["why"]
    assert DCMI_LINE in found["why"]  # npu-smi's own words, so the reason says what it said
    assert found["ascend"]["devices"] == 0 and found["ascend"]["failure"]["code"] == "dcmi-8020"


@pytest.mark.parametrize("exit_code", [0, 255])
def test_device_node_with_failing_npu_smi_resolves_to_cpu(tmp_path, exit_code):
    found = auto(*board(tmp_path, DOCKER_FIXTURE, nodes=("davinci0", "davinci_manager"), exit_code=exit_code))
    assert found["target"] == "CPU", found
    assert "found davinci0" in found["why"] and "npu-smi info failed (dcmi-8020)" in found["why"]
    assert DCMI_LINE in found["why"]


def test_device_node_without_npu_smi_resolves_to_cpu(tmp_path):
    found = auto(*board(tmp_path, None, nodes=("davinci0",)))
    assert found["target"] == "CPU", found
    assert "found davinci0" in found["why"] and "no npu-smi" in found["why"]


def test_device_node_and_an_npu_smi_that_lists_devices_is_ascend(tmp_path):
    found = auto(*board(tmp_path, B3, nodes=["davinci%d" % i for i in range(8)] + ["davinci_manager"]))
    assert found["target"] == "Ascend", found
    assert "found davinci0" in found["why"] and "npu-smi lists 8 device(s)" in found["why"]
    assert found["ascend"]["nodes"][:2] == ["davinci0", "davinci1"]  # davinci_manager is not a device


def test_nothing_at_all_is_cpu_naming_both(tmp_path):
    found = auto(*board(tmp_path))
    assert found["target"] == "CPU"
    assert "no /dev/davinci* device node" in found["why"] and "no npu-smi" in found["why"]


def test_auto_records_its_reason_and_explicit_targets_are_kept(tmp_path):
    env, root, lock = board(tmp_path, DOCKER_FIXTURE)
    resolved = resolve("auto", 0, env, root=root, lock_path=lock)
    assert resolved["resolved"] == "CPU" and resolved["why"].startswith("auto: ")
    assert resolve("Ascend", 3, env, root=root, lock_path=lock) == {
        "requested": "Ascend",
        "resolved": "Ascend",
        "id": 3,
        "why": "set in config",
    }


def test_explicit_ascend_with_failing_npu_smi_is_blocked_with_its_text_and_the_container_hint(tmp_path):
    env, root, lock = board(tmp_path, DOCKER_FIXTURE, exit_code=255)
    device = resolve("Ascend", 0, env, root=root, lock_path=lock)
    verdict = devicemod.setting_verdict(device, auto(env, root, lock))
    assert verdict["status"] == Evidence.BLOCKED, verdict
    assert DCMI_LINE in verdict["detail"]
    assert DEVICE_FLAGS in verdict["hint"] and "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver" in verdict["hint"]


def test_explicit_ascend_on_a_working_board_and_auto_pass(tmp_path):
    env, root, lock = board(tmp_path, B3, nodes=("davinci0",))
    found = auto(env, root, lock)
    assert (
        devicemod.setting_verdict(resolve("Ascend", 0, env, root=root, lock_path=lock), found)["status"]
        == Evidence.PASS
    )
    assert (
        devicemod.setting_verdict(resolve("auto", 0, env, root=root, lock_path=lock), found)["status"] == Evidence.PASS
    )


def test_explicit_gpu_without_gpu_is_observed_fail(tmp_path):
    env, root, lock = board(tmp_path)
    found = auto(env, root, lock)
    verdict = devicemod.setting_verdict(resolve("GPU", 0, env, root=root, lock_path=lock), found)
    assert verdict["status"] == Evidence.FAIL and "no GPU" in verdict["detail"]


@pytest.mark.parametrize(
    "capture, visible, device_id, words",
    [
        # One 310B4 on an Atlas 200I DK A2: id 7 cannot exist.
        ("npu-smi-info_310B4_atlas200IDKA2.txt", None, 7, "device.id=7: the runtime sees ids 0..0 (npu-smi lists 1"),
        # Eight 910B3 rows, but ASCEND_RT_VISIBLE_DEVICES=0 leaves one: the runtime numbers it 0.
        (B3, "0", 1, "device.id=1: the runtime sees ids 0..0 (ASCEND_RT_VISIBLE_DEVICES='0' leaves 1 of the 8"),
        (B3, None, -1, "device.id=-1: the runtime sees ids 0..7"),
        (B3, "3,9", 0, "9 outside [0, 8)"),
    ],
)
def test_device_id_beyond_the_visible_devices_is_observed_fail(
    tmp_path, monkeypatch, capture, visible, device_id, words
):
    env, root, lock = board(tmp_path, capture, nodes=("davinci0",))
    if visible is not None:
        env["ASCEND_RT_VISIBLE_DEVICES"] = visible
    found = auto(env, root, lock)
    assert found["target"] == "Ascend", found
    for requested in ("Ascend", "auto"):
        verdict = devicemod.setting_verdict(resolve(requested, device_id, env, root=root, lock_path=lock), found)
        assert verdict["status"] == Evidence.FAIL, verdict
        assert words in verdict["detail"], verdict["detail"]


def test_device_id_within_the_visible_devices_says_which_ids_exist(tmp_path):
    env, root, lock = board(tmp_path, B3, nodes=("davinci0",))
    env["ASCEND_RT_VISIBLE_DEVICES"] = "4,5"
    found = auto(env, root, lock)
    verdict = devicemod.setting_verdict(resolve("Ascend", 1, env, root=root, lock_path=lock), found)
    assert verdict["status"] == Evidence.PASS, verdict
    assert "device.id=1 is one of ids 0..1 (ASCEND_RT_VISIBLE_DEVICES='4,5' leaves 2 of the 8" in verdict["detail"]


def test_rows_without_a_column_header_are_named_not_no_output(tmp_path):
    # The 910B3 table with its title and both column headers cut: device rows only.
    table = command_output(fixture_text(B3))
    rows = "".join(line + "\n" for line in table.splitlines() if line.startswith("| ") and "npu-smi" not in line)
    rows = "".join(line + "\n" for line in rows.splitlines() if "Name" not in line and "Chip" not in line[:20])
    capture = tmp_path / "headerless.txt"
    capture.write_text(rows)
    env, root, lock = board(tmp_path, None, nodes=("davinci0",))
    install_fake_npu_smi(Path(env["PATH"]), capture)
    found = auto(env, root, lock)
    assert found["target"] == "CPU"
    assert "(no output)" not in found["why"]
    assert "table row(s) under no column header this parser knows (first: '| 0     910B3" in found["why"], found["why"]


def test_a_non_executable_npu_smi_is_named_not_missing(tmp_path):
    env, root, lock = board(tmp_path, B3, nodes=("davinci0",))
    smi = Path(env["PATH"]) / "npu-smi"
    smi.chmod(0o644)
    found = auto(env, root, lock)
    assert found["target"] == "CPU"
    assert "no npu-smi" not in found["why"]
    assert "npu-smi cannot be run: %s is not executable (mode 0644)" % smi in found["why"], found["why"]
    verdict = devicemod.setting_verdict(resolve("Ascend", 0, env, root=root, lock_path=lock), found)
    assert verdict["status"] == Evidence.BLOCKED and "not executable (mode 0644)" in verdict["detail"]
