"""CANN discovery, version files and set_env.sh status, on trees built from real captures."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

import pytest

from tests.support.ascend_fakes import (
    DK_A2_INFO,
    DOCKER_FIXTURE,
    SET_ENV_FIXTURE,
    VERSIONS_800IA2,
    command_output,
    container_driver_env,
    fixture_text,
    make_fake_ascend_tree,
    section,
    transcript_files,
    write_transcript_files,
)
from workbench.ascend import cann
from workbench.ascend.npusmi import parse_board, parse_info
from workbench.events.protocol import Evidence


def test_install_info_fixtures():
    dk = cann.parse_install_info(command_output(fixture_text(DK_A2_INFO), "ascend_toolkit_install.info"))
    assert dk["version"] == "7.0.RC1" and dk["innerversion"] == "V100R001C13SPC005B246"
    assert dk["arch"] == "aarch64" and dk["path"] == "/usr/local/Ascend/ascend-toolkit/7.0.RC1/aarch64-linux"
    docker = cann.parse_install_info(command_output(fixture_text(DOCKER_FIXTURE), "ascend_toolkit_install.info"))
    assert (docker["package_name"], docker["version"]) == ("Ascend-cann-toolkit", "8.0.0")
    assert docker["innerversion"] == "V100R001C20SPC001B251"
    files = dict(transcript_files(fixture_text(VERSIONS_800IA2)))
    a2 = cann.parse_install_info(
        files["/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info"]
    )
    assert a2["version"] == "8.2.RC1"


def test_version_cfg_fixture():
    cfg = cann.parse_version_cfg(section(fixture_text(SET_ENV_FIXTURE), "# version: 1.0", "echo $PATH"))
    assert (cfg["cann_version"], cfg["internal_version"]) == ("8.0.0", "7.6.0.1.220")
    assert set(cfg["entries"]) == {"runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs"}
    assert cfg["entries"]["opp"]["installed"] == [["7.6.0.1.220", "8.0.0"]]
    assert set(cfg["entries"]["toolkit"]) == {"running", "upgrade", "installed"}


def test_version_info_fixtures():
    text = fixture_text(VERSIONS_800IA2)
    one = dict(transcript_files(section(text, "# Source 1:", "# Source 2:")))
    driver = cann.parse_version_info(one["/usr/local/Ascend/driver/version.info"])
    assert (driver["version"], driver["package_version"]) == ("25.0.rc1.1", "25.0.rc1.1")
    assert driver["fields"]["compatible_version_fw"] == "[7.0.0,7.7.99]"
    firmware = cann.parse_version_info(one["/usr/local/Ascend/firmware/version.info"])
    assert firmware["version"] == "7.7.0.1.231"
    toolkit = cann.parse_version_info(one["/usr/local/Ascend/ascend-toolkit/latest/toolkit/version.info"])
    assert (toolkit["version"], toolkit["version_dir"]) == ("8.2.0.0.201", "8.2.RC1")
    assert toolkit["fields"]["required_package_opp_kernel_version"] == ">=7.6, <=8.2"
    atb = cann.parse_version_info(one["/usr/local/Ascend/nnal/atb/latest/version.info"])
    assert atb["fields"]["Ascend-cann-atb Version"] == "8.2.RC1.B150"
    two = dict(transcript_files(section(text, "# Source 2:", "# Source 3:")))
    assert cann.parse_version_info(two["/usr/local/Ascend/driver/version.info"])["version"] == "24.1.rc3"
    assert cann.parse_version_info(two["/usr/local/Ascend/firmware/version.info"])["version"] == "7.5.0.1.129"


def test_firmware_range_check():
    text = fixture_text(VERSIONS_800IA2)
    one = dict(transcript_files(section(text, "# Source 1:", "# Source 2:")))
    two = dict(transcript_files(section(text, "# Source 2:", "# Source 3:")))
    drv25 = cann.parse_version_info(one["/usr/local/Ascend/driver/version.info"])["fields"]
    drv24 = cann.parse_version_info(two["/usr/local/Ascend/driver/version.info"])["fields"]
    assert cann.firmware_in_driver_range(drv25, "7.7.0.1.231") is True
    assert cann.firmware_in_driver_range(drv24, "7.5.0.1.129") is True
    assert cann.firmware_in_driver_range(drv24, "7.7.0.1.231") is False  # 7.7 is past [7.0.0,7.5.99]
    assert cann.firmware_in_driver_range({}, "7.7.0.1.231") is None


TWO_WAY = "derived_version.info_driver25.0-firmware7.5_two-way.txt"
BOARD = "npu-smi-info-t-board_910B-HBM64G_25.5.1_telegraf-fixture.txt"


def test_firmware_whose_driver_list_excludes_the_driver_fails(tmp_path):
    # Driver 25.0.rc1.1 admits firmware 7.5 ([7.0.0,7.7.99]); firmware 7.5 lists drivers up to 24.1 only.
    write_transcript_files(tmp_path, fixture_text(TWO_WAY))
    status = cann.driver_status(str(tmp_path))
    assert status["firmware_in_driver_range"] is True
    assert status["driver_in_firmware_range"] is False
    verdict = status["compatibility"]
    assert verdict["status"] == Evidence.FAIL, verdict
    assert verdict["checked"] == ["driver's compatible_version_fw", "firmware's compatible_version_drv"]
    assert "firmware 7.5.0.1.129 does not list driver 25.0.rc1.1" in verdict["detail"]
    assert "[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.]" in verdict["detail"]
    assert verdict["hint"]


@pytest.mark.parametrize("source, driver, firmware", [(1, "25.0.rc1.1", "7.7.0.1.231"), (2, "24.1.rc3", "7.5.0.1.129")])
def test_real_pairs_admit_each_other_both_ways(tmp_path, source, driver, firmware):
    block = section(fixture_text(VERSIONS_800IA2), "# Source %d:" % source, "# Source %d:" % (source + 1))
    write_transcript_files(tmp_path, block, only=("/driver/", "/firmware/"))
    verdict = cann.driver_status(str(tmp_path))["compatibility"]
    assert verdict["status"] == Evidence.PASS, verdict
    assert len(verdict["checked"]) == 2
    assert "driver %s and firmware %s list each other" % (driver, firmware) in verdict["detail"]


@pytest.mark.parametrize(
    "a, b, admitted",
    [
        ("25.0.rc1.1", "[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.],[25.0,25.0.]", True),
        ("24.1.rc3", "[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.]", True),
        ("25.5.1", "[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.],[25.0,25.0.]", False),
        ("23.0.rc3", "[23.0.rc2,23.0.rc2.],[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]", True),
        ("23.0.rc1", "[23.0.rc2,23.0.rc2.],[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]", False),
        ("6.4.12.1.241", "[6.4.0,6.4.99],[7.0.0,7.7.99]", True),
        ("7.8.0.6.201", "[7.0.0,7.7.99]", False),
        # A version or a bound the check cannot read is unknown, never "does not list".
        ("V7.5.0.1.129", "[7.0.0,7.5.99]", None),
        ("7.5.0.1.129", "[V7.0.0,7.5.99]", None),
        ("7.5.0.1.129", "[V6.0.0,6.9.99],[7.0.0,7.5.99]", True),
        ("24.1..rc3", "[24.1,24.1.]", None),
    ],
)
def test_ranges_with_open_ended_prefixes(a, b, admitted):
    # "[24.1,24.1.]" (trailing dot) is every 24.1.x release; rcN sorts before the final release.
    assert cann.in_ranges(a, b) is admitted


def test_only_the_firmware_file_checks_its_side_and_says_so(tmp_path):
    block = section(fixture_text(VERSIONS_800IA2), "# Source 1:", "# Source 2:")
    write_transcript_files(tmp_path, block, only=("/firmware/",))
    driver_from_smi = parse_info(block).version  # npu-smi's title line carries the driver version
    status = cann.driver_status(str(tmp_path), driver_version=driver_from_smi)
    verdict = status["compatibility"]
    # One way only is not the pair: a pass of that side and a not-run of the other, each visible.
    assert verdict["status"] == Evidence.NOT_RUN, verdict
    assert verdict["checked"] == ["firmware's compatible_version_drv"]
    assert "one way only: firmware's compatible_version_drv passes" in verdict["detail"]
    assert "no driver version.info" in verdict["detail"] and "driver 25.0.rc1.1 (from npu-smi)" in verdict["detail"]
    driver_side, firmware_side = verdict["sides"]
    assert firmware_side["status"] == Evidence.PASS
    assert firmware_side["detail"].startswith("firmware 7.7.0.1.231 lists driver 25.0.rc1.1")
    assert driver_side["status"] == Evidence.NOT_RUN
    assert driver_side["detail"].startswith("not checked: no driver version.info")


def test_only_the_driver_file_with_the_boards_firmware(tmp_path):
    block = section(fixture_text(VERSIONS_800IA2), "# Source 2:", "# Source 3:")
    write_transcript_files(tmp_path, block, only=("/driver/",))
    assert cann.driver_status(str(tmp_path))["compatibility"]["status"] == Evidence.NOT_RUN
    board = parse_board(fixture_text(BOARD))  # firmware 7.8.0.6.201, past this driver's [7.0.0,7.5.99]
    verdict = cann.driver_status(str(tmp_path), firmware_version=board.card["Firmware Version"])["compatibility"]
    assert verdict["status"] == Evidence.FAIL
    assert verdict["checked"] == ["driver's compatible_version_fw"]
    assert "driver 24.1.rc3 does not list firmware 7.8.0.6.201" in verdict["detail"]
    assert "no firmware version.info" in verdict["detail"]


def test_an_unreadable_version_string_is_not_checked_not_refused(tmp_path):
    # Source 2's driver and firmware, the firmware's Version= written with a 'V' prefix.
    block = section(fixture_text(VERSIONS_800IA2), "# Source 2:", "# Source 3:")
    write_transcript_files(
        tmp_path, block.replace("Version=7.5.0.1.129", "Version=V7.5.0.1.129"), only=("/driver/", "/firmware/")
    )
    verdict = cann.driver_status(str(tmp_path))["compatibility"]
    driver_side, firmware_side = verdict["sides"]
    assert driver_side["status"] == Evidence.NOT_RUN
    assert driver_side["detail"] == "not checked: cannot read firmware version 'V7.5.0.1.129'"
    assert "does not list" not in verdict["detail"]
    assert verdict["status"] == Evidence.NOT_RUN and firmware_side["status"] == Evidence.PASS


def test_driver_file_and_npu_smi_disagreeing_is_a_fail_naming_both(tmp_path):
    # Source 2's driver files (24.1.rc3) read under the npu-smi of Source 1 (title 25.0.rc1.1).
    text = fixture_text(VERSIONS_800IA2)
    write_transcript_files(tmp_path, section(text, "# Source 2:", "# Source 3:"), only=("/driver/",))
    smi = parse_info(section(text, "# Source 1:", "# Source 2:")).version
    sources = cann.driver_status(str(tmp_path), driver_version=smi)["sources"]
    assert sources["status"] == Evidence.FAIL
    assert sources["detail"] == "%s says driver 24.1.rc3 but npu-smi prints 25.0.rc1.1" % (
        tmp_path / "usr/local/Ascend/driver/version.info"
    )
    assert cann.driver_status(str(tmp_path), driver_version="24.1.rc3")["sources"]["status"] == Evidence.PASS
    assert cann.driver_status(str(tmp_path))["sources"]["status"] == Evidence.NOT_RUN


@pytest.mark.parametrize(
    "fixture, version, version_from, internal, driver, firmware",
    [
        ("8.0.0", "8.0.0", "ascend_toolkit_install.info", "7.6.0.1.220", "24.1.rc3", "7.5.0.1.129"),
        ("8.2.RC1", "8.2.RC1", "ascend_toolkit_install.info", "8.2.0.0.201", "25.0.rc1.1", "7.7.0.1.231"),
        ("7.0.RC1", "7.0.RC1", "ascend_toolkit_install.info", None, None, None),
    ],
)
def test_fake_trees_found_through_env(tmp_path, fixture, version, version_from, internal, driver, firmware):
    env = make_fake_ascend_tree(tmp_path, fixture)
    found = cann.find_toolkit(env, str(tmp_path))
    assert found["found"] and found["source"] == "ASCEND_HOME_PATH"
    assert found["home"] == str(tmp_path / "usr/local/Ascend/ascend-toolkit/latest")
    assert (found["version"], found["version_from"], found["internal_version"]) == (version, version_from, internal)
    assert found["install_info"]["file"].endswith("aarch64-linux/ascend_toolkit_install.info")
    status = cann.driver_status(str(tmp_path))
    assert (status["driver"]["version"], status["firmware"]["version"]) == (driver, firmware)
    if driver is None:
        assert str(tmp_path / "var/davinci/driver/version.info") in status["missing"]
        assert status["firmware_in_driver_range"] is None
    else:
        assert status["firmware_in_driver_range"] is True and status["missing"] == []


def test_version_cfg_missing_is_listed(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.2.RC1")
    found = cann.find_toolkit(env, str(tmp_path))
    assert found["version_cfg"] is None
    assert found["missing"] == [os.path.join(found["home"], "version.cfg")]
    assert found["components"]["opp_kernel"]["fields"]["ops_version"] == "8.2.0.0.201"


def test_found_without_env_under_usual_root(tmp_path):
    make_fake_ascend_tree(tmp_path, "8.0.0")
    found = cann.find_toolkit({}, str(tmp_path))
    assert found["found"] and found["source"] == "usual" and found["version"] == "8.0.0"
    assert found["looked_at"][0] == {
        "path": str(tmp_path / "usr/local/Ascend/ascend-toolkit/latest"),
        "source": "usual",
        "exists": True,
    }


def test_env_pointing_nowhere_is_shown_and_usual_root_used(tmp_path):
    make_fake_ascend_tree(tmp_path, "8.0.0")
    found = cann.find_toolkit({"ASCEND_HOME_PATH": "/opt/gone/latest"}, str(tmp_path))
    assert found["looked_at"][0] == {
        "path": str(tmp_path / "opt/gone/latest"),
        "source": "ASCEND_HOME_PATH",
        "exists": False,
    }
    assert found["source"] == "usual" and found["version"] == "8.0.0"


def test_cann_85_versioned_directory_layout(tmp_path):
    # CANN 8.5 installs as /usr/local/Ascend/cann-<version>; no recorded files from it yet,
    # so only discovery and the version from the directory name are checked.
    (tmp_path / "usr/local/Ascend/cann-8.3.RC1").mkdir(parents=True)
    (tmp_path / "usr/local/Ascend/cann-8.5.0").mkdir(parents=True)
    found = cann.find_toolkit({}, str(tmp_path))
    assert found["home"] == str(tmp_path / "usr/local/Ascend/cann-8.5.0")
    assert (found["version"], found["version_from"]) == ("8.5.0", "directory name")
    assert found["install_info"] is None


def test_nothing_installed(tmp_path):
    found = cann.find_toolkit({"HOME": str(tmp_path / "home")}, str(tmp_path))
    assert not found["found"] and found["home"] is None and found["version"] is None
    assert str(tmp_path / "usr/local/Ascend/ascend-toolkit/latest") in found["missing"]
    assert str(tmp_path / "home/Ascend/ascend-toolkit/latest") in found["missing"]
    status = cann.driver_status(str(tmp_path))
    assert not status["driver"]["found"] and len(status["missing"]) == 3


def test_set_env_sourced(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == "observed-pass" and status["sourced"] and status["missing"] == []
    # Every entry the recorded set_env.sh adds is checked, and all exist in the built tree.
    assert len(status["checks"]) == 20
    assert all(check["present"] and check["exists"] for check in status["checks"])
    hal = tmp_path / "usr/local/Ascend/driver/lib64/driver"
    assert status["driver_libraries"]["reachable_in"] == [str(hal)]
    tiling = [c for c in status["checks"] if "op_tiling" in c["expected"]]
    assert tiling[0]["expected"].endswith(os.path.join("linux", platform.machine()))


def test_set_env_not_sourced(tmp_path):
    make_fake_ascend_tree(tmp_path, "8.0.0")
    status = cann.set_env_status({"PATH": "/usr/bin:/bin"}, str(tmp_path))
    assert status["status"] == "observed-fail" and not status["sourced"]
    assert "ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME are unset" in status["detail"]


def test_set_env_partial_names_what_is_missing(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    home = env["ASCEND_HOME_PATH"]
    env["LD_LIBRARY_PATH"] = ":".join(p for p in env["LD_LIBRARY_PATH"].split(":") if p != home + "/lib64")
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == "observed-fail"
    assert status["missing"] == ["LD_LIBRARY_PATH: %s/lib64 not set" % home]


def test_set_env_pointing_at_removed_directory(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    shutil.rmtree(os.path.join(env["ASCEND_OPP_PATH"]))
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == "observed-fail"
    assert "ASCEND_OPP_PATH: %s does not exist" % env["ASCEND_OPP_PATH"] in status["missing"]


def test_optional_entry_missing_does_not_fail(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    shutil.rmtree(os.path.join(env["ASCEND_HOME_PATH"], "tools", "aml"))
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == "observed-pass"
    aml = [c for c in status["checks"] if c["expected"].endswith(os.path.join("aml", "lib64"))]
    assert aml[0]["present"] and not aml[0]["exists"] and not aml[0]["required"]


def set_ld_path(env, *dirs):
    return dict(env, LD_LIBRARY_PATH=os.pathsep.join(str(d) for d in dirs))


def test_driver_subdirectories_on_the_path_hold_the_driver_libraries(tmp_path):
    # Containers mount the driver's lib64/common and lib64/driver and name those, not lib64 itself.
    env = container_driver_env(tmp_path, make_fake_ascend_tree(tmp_path, "8.0.0"))
    driver = tmp_path / "usr/local/Ascend/driver/lib64"
    assert str(driver) not in env["LD_LIBRARY_PATH"].split(os.pathsep)
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == Evidence.PASS and status["sourced"], status["missing"]
    assert status["driver_libraries"]["reachable_in"] == [str(driver / "driver")]
    assert "libascend_hal.so reachable in %s" % (driver / "driver") in status["detail"]


def test_driver_library_directory_missing_from_the_path_names_where_it_is(tmp_path):
    env = container_driver_env(tmp_path, make_fake_ascend_tree(tmp_path, "8.0.0"))
    driver = tmp_path / "usr/local/Ascend/driver/lib64"
    env["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"].replace(str(driver / "driver") + os.pathsep, "")
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == Evidence.FAIL and not status["sourced"]
    assert status["missing"] == [
        "LD_LIBRARY_PATH: libascend_hal.so is in %s, which no LD_LIBRARY_PATH entry names" % (driver / "driver")
    ]


def test_lib64_itself_on_the_path_is_not_where_the_library_is(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    driver = tmp_path / "usr/local/Ascend/driver/lib64"
    kept = [p for p in env["LD_LIBRARY_PATH"].split(os.pathsep) if not p.startswith(str(driver) + os.sep)]
    status = cann.set_env_status(set_ld_path(env, *kept), str(tmp_path))
    assert status["status"] == Evidence.FAIL
    assert "libascend_hal.so is in %s" % (driver / "driver") in status["missing"][0]


def test_no_driver_installed_is_not_blamed_on_set_env_nor_passed_by_it(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    shutil.rmtree(tmp_path / "usr/local/Ascend/driver/lib64/driver")
    status = cann.set_env_status(env, str(tmp_path))
    assert status["sourced"] and status["status"] == Evidence.PASS
    assert status["driver_libraries"]["reachable"] is False and status["driver_libraries"]["installed_in"] == []
    # The set_env.sh pass says nothing its status contradicts; the missing library is its own fail.
    assert "not found" not in status["detail"] and "the driver-library check" in status["detail"]
    library = status["driver_library"]
    assert library["status"] == Evidence.FAIL and "libascend_hal.so not found under" in library["detail"]


def test_reachable_driver_library_passes_naming_where(tmp_path):
    status = cann.set_env_status(make_fake_ascend_tree(tmp_path, "8.0.0"), str(tmp_path))
    hal = tmp_path / "usr/local/Ascend/driver/lib64/driver"
    assert status["driver_library"] == {
        "status": Evidence.PASS,
        "detail": "libascend_hal.so reachable in %s (LD_LIBRARY_PATH)" % hal,
    }


def swap_toolkit_name(env, old: str, new: str, variables):
    """env with the toolkit directory named `new` instead of `old` in these variables (the same directory)."""
    return dict(env, **{v: env[v].replace("ascend-toolkit/%s" % old, "ascend-toolkit/%s" % new) for v in variables})


@pytest.mark.parametrize(
    "home_name, path_name", [("latest", "8.0.0"), ("8.0.0", "latest")], ids=["home-latest", "home-8.0.0"]
)
def test_one_toolkit_under_two_names_is_one_directory(tmp_path, home_name, path_name):
    # set_env.sh names ascend-toolkit/latest; latest links to 8.0.0 (as in the recorded `ls`).
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    assert "ascend-toolkit/latest" in env["ASCEND_HOME_PATH"]
    env = swap_toolkit_name(env, "latest", home_name, ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"))
    env = swap_toolkit_name(env, "latest", path_name, ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH"))
    assert home_name in env["ASCEND_HOME_PATH"] and "ascend-toolkit/%s/lib64" % path_name in env["LD_LIBRARY_PATH"]
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == Evidence.PASS and status["missing"] == [], status["missing"]
    lib64 = next(c for c in status["checks"] if c["expected"].endswith("ascend-toolkit/%s/lib64" % home_name))
    assert lib64["present"] and lib64["actual"].endswith("ascend-toolkit/%s/lib64" % path_name)


def test_a_directory_that_only_shares_a_name_prefix_is_not_the_same(tmp_path):
    # A copy (not a link) of the toolkit is another directory: its lib64 does not stand for latest/lib64.
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    toolkit = tmp_path / "usr/local/Ascend/ascend-toolkit"
    shutil.copytree(str(toolkit / "8.0.0" / "lib64"), str(toolkit / "copy" / "lib64"))
    env["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"].replace(
        "ascend-toolkit/latest/lib64:", "ascend-toolkit/copy/lib64:"
    )
    status = cann.set_env_status(env, str(tmp_path))
    assert status["status"] == Evidence.FAIL
    assert status["missing"] == ["LD_LIBRARY_PATH: %s/lib64 not set" % env["ASCEND_HOME_PATH"]]


def test_the_same_driver_directory_under_two_names_is_listed_once(tmp_path):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    driver = tmp_path / "usr/local/Ascend/driver/lib64/driver"
    alias = tmp_path / "drv-alias"
    alias.symlink_to(driver)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(alias), env["LD_LIBRARY_PATH"]])
    found = cann.driver_libraries(env, str(tmp_path))
    assert found["reachable_in"] == [str(alias)] and found["installed_in"] == [str(driver)]


E2_LINE = "Load dynamic library: libmindspore_ascend.so.2 failed. libge_runner.so: cannot open shared object file"


def test_library_a_probe_error_names_is_looked_up(tmp_path):
    assert E2_LINE in fixture_text("errors_verbatim_collection.md")
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    home = env["ASCEND_HOME_PATH"]
    (tmp_path / home.lstrip("/") if not home.startswith(str(tmp_path)) else Path(home)).joinpath(
        "lib64", "libge_runner.so"
    ).write_bytes(b"")
    found = cann.libraries_in_error(E2_LINE, env, str(tmp_path))
    assert [lib["name"] for lib in found["libraries"]] == ["libge_runner.so"]
    assert found["unreachable"] == [] and "reachable" in found["detail"]
    without = set_ld_path(env, *[p for p in env["LD_LIBRARY_PATH"].split(os.pathsep) if p != home + "/lib64"])
    missing = cann.libraries_in_error(E2_LINE, without, str(tmp_path))
    assert missing["unreachable"] == ["libge_runner.so"]
    assert "libge_runner.so is in %s/lib64, which no LD_LIBRARY_PATH entry names" % home in missing["detail"]
