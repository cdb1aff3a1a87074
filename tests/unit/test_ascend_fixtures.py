"""The in-repo Ascend fixtures: copies of shared/fixtures/ascend, and labelled derived inputs."""

from __future__ import annotations

import pytest

from tests.support.ascend_fakes import FIXTURE_DIR, shared_dir

SHARED = shared_dir() / "fixtures" / "ascend"


def test_every_shared_fixture_is_copied():
    if not SHARED.is_dir():
        pytest.skip("no shared/fixtures/ascend at %s (set MSWB_SHARED)" % SHARED)
    for source in sorted(SHARED.iterdir()):
        copy = FIXTURE_DIR / source.name
        assert copy.is_file(), "%s has no copy in %s" % (source.name, FIXTURE_DIR)
        assert copy.read_bytes() == source.read_bytes(), "%s differs from %s" % (copy, source)


DERIVED = {
    "derived_npu-smi-info_26x_container-pid_from_910B3.txt",
    "derived_npu-smi-info_A3_phy-id_from_910B3.txt",
    "derived_npu-smi-info_310P3-duo_two-chips_from_310x4.txt",
    "derived_npu-smi-info-t-common_310P3-duo_two-chips-and-mcu.txt",
    "derived_npu-smi-info-t-usages_310P3-duo_two-chips.txt",
    "derived_npu-smi-info-t-health_310P3-duo_two-chips-and-mcu.txt",
    "derived_version.info_driver25.0-firmware7.5_two-way.txt",
    "derived_container-driver-mounts_lib64-common-and-driver.txt",
    "derived_npu-smi-info_310P3-duo_containers-sharing-pids_from_310x4.txt",
    "derived_npu-smi-info-t-health_310P3-duo_error-code.txt",
}


def test_derived_inputs_say_so():
    derived = sorted(FIXTURE_DIR.glob("derived_*"))
    assert {path.name for path in derived} == DERIVED
    for path in derived:
        assert path.read_text().startswith("# DERIVED test input, not a capture."), path
