"""The `env` job through the real CLI: real probes on CPU, every npu-smi fixture against a fake board.

What cannot exist here (npu-smi, a CANN tree, driver files) is faked from the recorded
outputs in tests/fixtures/ascend/; MindSpore, the probes' subprocesses and the CLI are real.
Runs that are not about the probes set env.probes=false (each probe imports MindSpore, 2-8 s).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from tests.support.ascend_fakes import (
    VERSIONS_800IA2,
    command_output,
    fixture_path,
    fixture_text,
    install_fake_npu_smi,
    make_fake_ascend_tree,
    section,
)
from tests.support.cli import PROJECT_ROOT, run_cli
from tests.support.jobpython import COMPAT, job_mindspore
from tests.support.waiting import poll_until
from workbench.masking.envvars import MASK
from workbench.system.atomic import read_json
from workbench.system.childproc import pid_running

SUMMARY_KEYS = [
    "python",
    "packages",
    "cann",
    "driver",
    "firmware",
    "pairing",
    "devices",
    "processes",
    "cards",
    "probes",
    "environment",
]
DEVICE_KEYS = {"npu", "chip", "name", "health", "power_w", "temp_c", "aicore_pct", "memory_mb", "hbm_mb"}
PROBE_IDS = ["probe-add-fp32", "probe-matmul-fp16", "probe-matmul-fp32"]
NO_PROBES = ["--set", "env.probes=false"]
MS_VERSION = metadata.version("mindspore") if importlib.util.find_spec("mindspore") else None


def ms_version():
    """The MindSpore version the env job sees: the job interpreter's (make test-compat), else this process's."""
    return job_mindspore()["dist_version"] if COMPAT else MS_VERSION


class EnvRun:
    """One finished env job: its CLI process, events, checks and result summary."""

    def __init__(self, proc, sessions: Path):
        self.proc = proc
        dirs = sorted(Path(sessions).glob("*/jobs/env-*"))
        assert len(dirs) == 1, "expected one env job under %s, found %s\nstderr: %s" % (sessions, dirs, proc.stderr)
        self.dir = dirs[0]
        self.events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        self.checks = {ev["id"]: ev for ev in self.events if ev["type"] == "check"}
        results = [ev for ev in self.events if ev["type"] == "result"]
        self.summary: Dict[str, Any] = results[-1]["summary"] if results else {}
        self.finished = self.events[-1] if self.events else {}

    def check(self, id_: str) -> Dict[str, Any]:
        """The check with this id (fails naming the ids seen)."""
        assert id_ in self.checks, "no check %r; checks: %s\nstderr.log: %s" % (
            id_,
            sorted(self.checks),
            (self.dir / "stderr.log").read_text()[-2000:],
        )
        return self.checks[id_]


def run_env(sessions: Path, *sets: str, env: Optional[Dict[str, str]] = None, timeout: float = 300) -> EnvRun:
    """`ms-workbench run env --json` in a subprocess; stdout is exactly the job's events."""
    proc = run_cli("run", "env", "--json", "--sessions", sessions, *sets, env=env, timeout=timeout)
    run = EnvRun(proc, sessions)
    assert proc.stdout == (run.dir / "events.jsonl").read_text(encoding="utf-8")
    return run


def fake_board(
    tmp_path: Path,
    npu_smi_fixture: Optional[Path],
    tree: Optional[str] = "8.0.0",
    extra_env: Optional[Dict[str, str]] = None,
    device_node: bool = True,
    **fake_kw: Any,
) -> Tuple[List[str], Dict[str, str]]:
    """Fake npu-smi first on PATH and a fake Ascend tree under tmp_path/root (with <root>/dev/davinci0).

    Returns the --set arguments and the environment the CLI needs on top of this one (PATH and
    what the tree's set_env.sh sets). With a fake npu-smi the target is set to Ascend: `auto`
    is resolved from this machine's /dev, which has no NPU (the env job itself detects under
    env.root, where the fake device node is).
    """
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT_ROOT)}
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    if tree:
        tree_env = make_fake_ascend_tree(root, tree)
        env.update({k: v for k, v in tree_env.items() if k not in ("PATH", "PYTHONPATH")})
        env["PATH"] = tree_env["PATH"] + os.pathsep + env["PATH"]
        env["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT), tree_env.get("PYTHONPATH", "")])
    if device_node:
        (root / "dev").mkdir(exist_ok=True)
        (root / "dev" / "davinci0").write_text("")  # a plain file: detection only looks for the name
    sets = ["--set", "env.root=%s" % root]
    if npu_smi_fixture is not None:
        install_fake_npu_smi(tmp_path / "bin", npu_smi_fixture, **fake_kw)
        env["PATH"] = str(tmp_path / "bin") + os.pathsep + env["PATH"]
        sets += ["--set", "device.target=Ascend"]
    env.update(extra_env or {})
    return sets, env


def fixture_section(tmp_path: Path, start: str, stop: str) -> Path:
    """One capture cut out of the 800I A2 transcript, as its own file."""
    path = tmp_path / ("800ia2-%s.txt" % start.strip("# :").replace(" ", "-"))
    path.write_text(section(fixture_text(VERSIONS_800IA2), start, stop), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Real probes on this machine


@pytest.mark.requires_mindspore
def test_cpu_probes_pass_with_fetched_values(sessions):
    run = run_env(
        sessions,
        env={
            "PATH": os.pathsep.join(
                p
                for p in os.environ.get("PATH", "").split(os.pathsep)
                if not os.path.exists(os.path.join(p, "npu-smi"))
            )
        },
    )
    assert run.proc.returncode == 0, run.proc.stderr + json.dumps(run.finished)
    started = run.events[0]
    assert started["type"] == "started" and started["device"]["resolved"] == "CPU"
    assert started["device"]["requested"] == "auto" and "no /dev/davinci" in started["device"]["why"]
    # probes come first: nothing else touched the device before them
    assert [ev["id"] for ev in run.events if ev["type"] == "check"][:3] == PROBE_IDS
    for id_ in PROBE_IDS:
        check = run.check(id_)
        assert check["status"] == "observed-pass", check
        result = check["evidence"]["result"]
        assert result["device"]["target"] == "CPU" and result["shape"] == [64, 64]
        assert (
            isinstance(result["max_abs_diff"], float)
            and 0 <= result["max_abs_diff"] <= result["atol"] + 50 * result["rtol"]
        )
        assert result["mindspore"]["version"] == ms_version()
    assert "Float16" in run.check("probe-matmul-fp16")["detail"]
    assert list(run.summary) == SUMMARY_KEYS
    assert [(p["op"], p["verdict"]) for p in run.summary["probes"]] == [
        ("add-fp32", "observed-pass"),
        ("matmul-fp16", "observed-pass"),
        ("matmul-fp32", "observed-pass"),
    ]
    assert run.summary["packages"]["mindspore"]["version"] == ms_version()
    assert run.summary["packages"]["mindspore"]["found"] and not run.summary["packages"]["mindspore"]["duplicates"]
    assert run.summary["devices"] == [] and run.summary["processes"] == []
    assert run.check("npu-smi")["status"] == "not-run"
    assert run.check("cann-toolkit")["status"] == "not-run"  # not needed for CPU
    report = read_json(run.dir / "artifacts" / "env-report.json")
    assert report == run.summary
    assert run.finished == dict(run.finished, type="finished", status="ok", error=None)


@pytest.mark.requires_mindspore
def test_ascend_request_is_blocked_with_mindspores_message_and_exit_1(sessions):
    run = run_env(sessions, "--set", "device.target=Ascend")
    assert run.proc.returncode == 1
    first = run.check("probe-add-fp32")
    assert first["status"] == "blocked", first
    assert "Unsupported device target Ascend" in first["detail"]  # MindSpore's own words
    assert "CANN toolkit not found" in first["detail"]  # what is missing
    assert first["hint"] and "set_env.sh" in first["hint"]
    assert "libge_runner.so" in first["evidence"]["raw"] + json.dumps(first["evidence"]["result"])
    for id_ in PROBE_IDS[1:]:
        assert run.check(id_)["status"] == "blocked" and "not started" in run.check(id_)["detail"]
    passes = [
        ev["id"] for ev in run.checks.values() if ev["id"].startswith("probe-") and ev["status"] == "observed-pass"
    ]
    assert passes == []
    assert all(p["verdict"] != "observed-pass" for p in run.summary["probes"])
    assert run.finished["status"] == "failed" and run.finished["error"]["type"] == "DeviceProbeFailed"
    assert run.finished["error"]["hint"]
    setting = run.check("device-setting")  # asked for Ascend on a machine without one: a missing precondition
    assert setting["status"] == "blocked" and "no /dev/davinci* device node visible" in setting["detail"], setting
    assert "--device=/dev/davinci0" in setting["hint"]


def test_probe_that_hangs_and_probe_that_segfaults_do_not_stop_the_others(sessions, tmp_path):
    run = run_env(
        sessions,
        "--set",
        "env.probe_module=tests.fixtures.probe_standin",
        "--set",
        "limits.probe_timeout_s=2",
        "--set",
        "device.target=CPU",
    )
    assert run.proc.returncode == 1
    hung = run.check("probe-add-fp32")
    assert hung["status"] == "observed-fail" and hung["detail"].startswith("hung: no result within 2 s")
    assert hung["evidence"]["process"]["timed_out"] is True
    child_pid = int((run.dir / "artifacts" / "probes" / "add-fp32.json.child.pid").read_text())
    assert not _alive(child_pid), "the hung probe's grandchild %d survived the group kill" % child_pid
    crashed = run.check("probe-matmul-fp16")
    assert crashed["status"] == "observed-fail" and "SIGSEGV" in crashed["detail"]
    assert crashed["evidence"]["process"]["returncode"] == -11
    assert "about to die of SIGSEGV" in crashed["evidence"]["raw"]
    gave_up = run.check("probe-matmul-fp32")  # started although the two before it hung and crashed
    assert gave_up["status"] == "observed-fail" and gave_up["detail"] == "exited with status 3 without writing a result"
    assert "giving up with status 3" in gave_up["evidence"]["raw"]
    assert run.check("interpreter")["status"] == "observed-pass"  # the rest of the checks still ran
    assert run.check("env-vars")["status"] == "observed-pass"
    assert [p["signal"] for p in run.summary["probes"]] == ["SIGKILL", "SIGSEGV", None]  # SIGKILL: ours, at the limit
    assert [p["returncode"] for p in run.summary["probes"]] == [-9, -11, 3]
    assert [p["timed_out"] for p in run.summary["probes"]] == [True, False, False]
    assert run.finished["status"] == "failed"


def _alive(pid: int) -> bool:
    """Still alive after 5 s of waiting for it to die."""
    return not poll_until(lambda: not pid_running(pid), 5)


# ---------------------------------------------------------------------------------------------
# Every npu-smi fixture against a fake board (probes off)

A3 = "derived_npu-smi-info_A3_phy-id_from_910B3.txt"
WIDE = "derived_npu-smi-info_26x_container-pid_from_910B3.txt"
# fixture -> (tree, devices [(npu, chip, name, health)], a device's full row or None, processes, npu-smi version)
FIXTURES = {
    "910B3_x8": (
        "npu-smi-info_910B3_x8_with_processes.txt",
        "8.0.0",
        [(n, 0, "910B3", "OK") for n in range(8)],
        {
            "npu": 0,
            "chip": 0,
            "name": "910B3",
            "health": "OK",
            "power_w": 133.9,
            "temp_c": 43.0,
            "aicore_pct": 0.0,
            "memory_mb": [0.0, 0.0],
            "hbm_mb": [60478.0, 65536.0],
        },
        8,
        "23.0.rc3.3",
    ),
    "910A_warning": (
        "npu-smi-info_910A_warning_ms1.10_modelarts.txt",
        "8.0.0",
        [(1, 0, "910A", "Warning")],
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
        },
        0,
        "23.0.rc3",
    ),
    "310B4": (
        "npu-smi-info_310B4_atlas200IDKA2.txt",
        "7.0.RC1",
        [(0, 0, "310B4", "OK")],
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
        },
        0,
        "23.0.rc3",
    ),
    "310_x4": (
        "npu-smi-info_310_x4_atlas800-3000_21.0.4_hwdoc.txt",
        "8.2.RC1",
        [(6, c, "310", "OK") for c in range(4)],
        {
            "npu": 6,
            "chip": 3,
            "name": "310",
            "health": "OK",
            "power_w": 12.8,
            "temp_c": 65.0,
            "aicore_pct": 0.0,
            "memory_mb": [2867.0, 8192.0],
            "hbm_mb": None,
        },
        0,
        "21.0.4.B030",
    ),
    "A3_phy_id": (
        A3,
        "8.2.RC1",
        [(0, 0, "Ascend910", "OK"), (0, 1, "Ascend910", "OK"), (1, 0, "Ascend910", "OK"), (1, 1, "Ascend910", "OK")],
        None,
        4,
        "23.0.rc3.3",
    ),
    "26x_container_pid": (WIDE, "8.0.0", [(0, 0, "910B3", "OK"), (1, 0, "910B3", "OK")], None, 2, "26.0.rc1"),
    "800IA2_with_title": ("# Source 1:", "8.2.RC1", [(0, 0, "910B4", "OK")], None, None, "25.0.rc1.1"),
    "800IA2_no_title": ("# Source 2:", "8.0.0", [(0, 0, "910B4", "OK")], None, None, None),
}
# tree -> (CANN version, driver version, firmware version, firmware in driver range)
TREES = {
    "8.0.0": ("8.0.0", "24.1.rc3", "7.5.0.1.129", True),
    "8.2.RC1": ("8.2.RC1", "25.0.rc1.1", "7.7.0.1.231", True),
    "7.0.RC1": ("7.0.RC1", None, None, None),
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_npu_smi_fixture_on_a_fake_board(name, sessions, tmp_path):
    source, tree, devices, full_row, n_processes, smi_version = FIXTURES[name]
    if source.startswith("# Source"):
        number = int(source.split()[2].rstrip(":"))
        capture = fixture_section(tmp_path, source, "# Source %d:" % (number + 1))
    else:
        capture = fixture_path(source)
    sets, env = fake_board(tmp_path, capture, tree)
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    assert run.proc.returncode == 0, run.proc.stderr + json.dumps(run.finished)
    got = run.summary["devices"]
    assert [(d["npu"], d["chip"], d["name"], d["health"]) for d in got] == devices
    assert all(set(d) == DEVICE_KEYS for d in got)
    if full_row is not None:
        assert full_row in got
    if n_processes is not None:
        assert len(run.summary["processes"]) == n_processes
        assert all({"npu", "pid", "name", "memory_mb"} <= set(p) for p in run.summary["processes"])
    smi = run.check("npu-smi")
    assert smi["status"] == "observed-pass", smi
    assert run.summary["driver"]["npu_smi"]["version"] == smi_version
    raw = (run.dir / "artifacts" / "npu-smi-info.txt").read_text()
    assert raw == command_output(capture.read_text())  # exactly what npu-smi printed
    assert any(ev["type"] == "artifact" and ev["path"] == "artifacts/npu-smi-info.txt" for ev in run.events)
    health = run.check("npu-health")
    bad = [d for d in devices if d[3] != "OK"]
    assert health["status"] == ("observed-fail" if bad else "observed-pass")
    if bad:
        assert "NPU 1 chip 0 (910A) health Warning" in health["detail"] and health["hint"]
    cann_v, driver_v, firmware_v, fits = TREES[tree]
    assert run.summary["cann"]["version"] == cann_v and run.check("cann-toolkit")["status"] == "observed-pass"
    assert run.summary["cann"]["set_env"]["sourced"] is True
    assert run.check("cann-set-env")["status"] == "observed-pass"
    assert run.summary["driver"]["version"] == driver_v
    assert run.summary["firmware"]["version"] == firmware_v
    assert run.summary["firmware"]["in_driver_range"] is fits
    if driver_v is None:  # the 310B board image records only the toolkit: say so, do not pass
        assert run.check("driver")["status"] == "observed-fail"  # target Ascend: a missing driver file fails
    # MindSpore here has no row in the pairing table: not-run, naming the versions compared.
    pairing = run.summary["pairing"]
    assert (pairing["status"], pairing["mindspore"], pairing["cann"]) == ("not-run", ms_version(), cann_v)
    assert run.check("pairing")["status"] == "not-run"
    assert run.events[0]["device"]["resolved"] == "Ascend"
    setting = run.check("device-setting")  # the device node under env.root and a device table: Ascend is met
    assert setting["status"] == "observed-pass", setting
    detected = setting["evidence"]["detected"]
    assert (
        detected["target"] == "Ascend"
        and "found davinci0; npu-smi lists %d device(s)" % len(devices) in detected["why"]
    )
    assert [run.check(i)["status"] for i in PROBE_IDS] == ["not-run"] * 3


def test_npu_smi_dcmi_failure_blocks_the_device_layer_with_a_hint(sessions, tmp_path):
    capture = fixture_path("docker-container_npu-smi_dcmi-8020_and_toolkit-info-8.0.0.txt")
    sets, env = fake_board(tmp_path, capture, "8.0.0", exit_code=255)
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    assert run.proc.returncode == 0  # a failed npu-smi is a finding, not a crash
    smi = run.check("npu-smi")
    assert smi["status"] == "blocked", smi  # the device layer cannot answer: never a pass
    assert "dcmi-8020" in smi["detail"] and "ret is -8020" in smi["detail"]  # npu-smi's own words
    assert "--device /dev/davinci" in smi["hint"] and "--device=/dev/davinci_manager" in smi["hint"]
    assert "ret is -8020" in smi["evidence"]["raw"]
    assert "ret is -8020" in (run.dir / "artifacts" / "npu-smi-info.txt").read_text()
    assert run.summary["devices"] == [] and run.summary["driver"]["npu_smi"]["failure"]["code"] == "dcmi-8020"
    assert run.summary["cards"] == []
    assert run.check("npu-health")["status"] == "not-run"
    setting = run.check("device-setting")  # explicit Ascend: blocked with npu-smi's words, not observed-pass
    assert setting["status"] == "blocked" and "npu-smi info failed (dcmi-8020)" in setting["detail"], setting


def test_auto_with_npu_smi_but_no_device_node_resolves_to_cpu_with_the_reason(sessions, tmp_path):
    capture = fixture_path("docker-container_npu-smi_dcmi-8020_and_toolkit-info-8.0.0.txt")
    sets, env = fake_board(tmp_path, capture, "8.0.0", exit_code=255, device_node=False)
    sets = sets[:2]  # env.root only: device.target stays auto
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    device = run.events[0]["device"]
    assert (device["requested"], device["resolved"]) == ("auto", "CPU"), device
    assert "no /dev/davinci* device node visible" in device["why"] and "dcmi-8020" in device["why"]
    assert run.check("device-setting")["status"] == "observed-pass"  # auto asked for what is here: CPU
    assert run.check("npu-smi")["status"] == "blocked"


def test_two_die_card_gives_one_status_row_per_chip_and_the_mcu_apart(sessions, tmp_path):
    smi = {
        "info": fixture_path("derived_npu-smi-info_310P3-duo_two-chips_from_310x4.txt"),
        "common": fixture_path("derived_npu-smi-info-t-common_310P3-duo_two-chips-and-mcu.txt"),
        "usages": fixture_path("derived_npu-smi-info-t-usages_310P3-duo_two-chips.txt"),
        "health": fixture_path("derived_npu-smi-info-t-health_310P3-duo_two-chips-and-mcu.txt"),
    }
    sets, env = fake_board(tmp_path, smi, "8.0.0")
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    assert run.proc.returncode == 0, run.proc.stderr
    cards = run.summary["cards"]
    assert [(c["npu"], [ch["chip"] for ch in c["chips"]]) for c in cards] == [(0, [0, 1])]
    card = cards[0]
    assert card["mcu"] is not None and card["errors"] == {}, card
    chips = card["chips"]
    assert all(ch["temperature_c"] is not None and ch["aicore_pct"] is not None for ch in chips), chips
    assert all(ch["temperature_c"] != card["mcu"]["temperature_c"] for ch in chips)  # the MCU never stands for a chip
    assert [(p["npu"], p["chip"], p["pid"]) for p in run.summary["processes"]] == [(0, 0, 41235), (0, 1, 41236)]


def test_npu_smi_that_hangs_is_killed_at_its_time_limit(sessions, tmp_path):
    sets, env = fake_board(tmp_path, fixture_path("npu-smi-info_310B4_atlas200IDKA2.txt"), None, hang_s=60)
    start = time.monotonic()
    run = run_env(sessions, *sets, *NO_PROBES, "--set", "env.npu_smi_timeout_s=1", env=env)
    assert time.monotonic() - start < 45
    smi = run.check("npu-smi")
    assert smi["status"] == "blocked" and "timeout" in smi["detail"], smi
    assert (Path(sessions) / ".locks" / "npu-smi.lock").exists()  # the single-poller lock of this sessions root
    assert run.check("cann-toolkit")["status"] == "observed-fail"  # target Ascend, and no tree at all


def test_settings_visible_devices_and_masked_secrets(sessions, tmp_path):
    secret = "s3cr3t-value-4711"
    sets, env = fake_board(
        tmp_path,
        fixture_path("npu-smi-info_910A_warning_ms1.10_modelarts.txt"),
        "8.0.0",
        extra_env={
            "MS_ROLE": "MS_SCHED",
            "MS_API_TOKEN": secret,
            "ASCEND_RT_VISIBLE_DEVICES": "0,1",
            "NOT_ALLOWED_VAR": "x",
        },
    )
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    role = run.check("ms-role")
    assert role["status"] == "observed-fail" and "MS_SCHED" in role["detail"] and "CPU" in role["detail"]
    vis = run.check("visible-devices")
    assert vis["status"] == "observed-fail" and "107001" in vis["detail"]
    environment = run.summary["environment"]
    assert environment["MS_API_TOKEN"] == MASK and environment["MS_ROLE"] == "MS_SCHED"
    assert environment["ASCEND_RT_VISIBLE_DEVICES"] == "0,1" and "NOT_ALLOWED_VAR" not in environment
    assert secret not in (run.dir / "events.jsonl").read_text()
    assert secret not in (run.dir / "artifacts" / "env-report.json").read_text()
    assert "MS_API_TOKEN" in run.check("env-vars")["detail"]


# ---------------------------------------------------------------------------------------------
# Package layouts: a second copy on the path (the course's two-MindSpore board)


def _layout(site: Path, name: str, version: str, with_package: bool) -> None:
    """Files a second install leaves on the path; its __init__ refuses import, so nothing can run it."""
    dist = site / ("%s-%s.dist-info" % (name, version))
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    if with_package:
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(
            "raise ImportError('a layout fixture of the env tests: the env job must never import %s')\n" % name
        )
        (site / name / "version.py").write_text("__version__ = '%s'\n" % version)


def test_stale_dist_info_is_a_duplicate_and_the_real_copy_still_wins(sessions, tmp_path):
    stale = tmp_path / "conda-site"
    _layout(stale, "mindspore", "2.3.1", with_package=False)
    env = {"PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(stale)])}
    run = run_env(sessions, *NO_PROBES, env=env)
    ms = run.summary["packages"]["mindspore"]
    assert ms["version"] == ms_version() and ms["duplicates"] is True
    assert ms["metadata_version"] == "2.3.1"  # importlib.metadata alone would have named the stale copy
    assert [c["wins"] for c in ms["copies"]] == [False, True]
    dup = run.check("pkg-duplicates")
    assert dup["status"] == "observed-fail" and "WINS: %s" % ms_version() in dup["detail"] and "2.3.1" in dup["detail"]
    assert "importlib.metadata reports 2.3.1" in run.check("pkg-mindspore")["detail"]


@pytest.mark.parametrize(
    "tree, status, expected", [("8.0.0", "observed-pass", "official"), ("8.2.RC1", "observed-fail", "official")]
)
def test_winning_user_copy_decides_pairing_and_numpy_rule(tree, status, expected, sessions, tmp_path):
    user = tmp_path / "user-site"
    _layout(user, "mindspore", "2.4.10", with_package=True)
    _layout(user, "numpy", "2.1.0", with_package=True)
    sets, env = fake_board(tmp_path, None, tree)
    env = dict(env, PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), str(user)]))
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    assert run.proc.returncode == 0, run.proc.stderr  # the job imported neither copy
    ms = run.summary["packages"]["mindspore"]
    assert (ms["version"], ms["label"], ms["duplicates"]) == ("2.4.10", "PYTHONPATH", True)
    assert ms["path"] == str(user / "mindspore")
    pairing = run.summary["pairing"]
    assert (pairing["status"], pairing["source"], pairing["cann"]) == (status, expected, tree)
    assert {"mindspore": "2.4.10", "cann": "8.0.0", "source": "official"}.items() <= pairing["rows"][0].items()
    numpy_rule = run.check("numpy-abi")
    assert numpy_rule["status"] == "observed-fail" and "pip install 'numpy<2'" in numpy_rule["hint"]


def test_only_probes_emits_the_probe_checks_and_the_device_setting(sessions):
    run = run_env(sessions, "--set", "env.only_probes=true", *NO_PROBES)
    assert run.events[0]["scope"] == "probes"
    assert sorted(run.checks) == sorted(PROBE_IDS + ["device-setting"])
    assert list(run.summary) == SUMMARY_KEYS


@pytest.mark.requires_mindspore
def test_explicit_ascend_probe_without_a_device_node_is_blocked_like_the_device_setting(sessions, tmp_path):
    # CANN tree found and set_env.sh sourced, npu-smi lists a device, but no /dev/davinci* node.
    sets, env = fake_board(tmp_path, fixture_path("npu-smi-info_310B4_atlas200IDKA2.txt"), "8.0.0", device_node=False)
    run = run_env(sessions, *sets, "--set", "env.only_probes=true", env=env)
    first = run.check("probe-add-fp32")
    assert first["status"] == "blocked", first
    assert "precondition missing: no /dev/davinci* device node visible" in first["detail"]
    assert "Unsupported device target Ascend" in first["detail"]  # MindSpore's words are kept
    setting = run.check("device-setting")
    assert setting["status"] == "blocked" and "no /dev/davinci* device node visible" in setting["detail"], setting
    assert all(p["verdict"] == "blocked" for p in run.summary["probes"])


def test_driver_files_that_are_not_npu_smis_driver_fail_naming_both(sessions, tmp_path):
    # The 8.0.0 tree carries Source 2's driver files (24.1.rc3); npu-smi is Source 1's (title 25.0.rc1.1).
    capture = fixture_section(tmp_path, "# Source 1:", "# Source 2:")
    sets, env = fake_board(tmp_path, capture, "8.0.0")
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    driver = run.check("driver")
    assert driver["status"] == "observed-fail", driver
    assert "says driver 24.1.rc3 but npu-smi prints 25.0.rc1.1" in driver["detail"]
    # Each direction of the driver/firmware fit is its own check; both files are there, both pass.
    assert run.check("firmware-in-driver-range")["status"] == "observed-pass"
    assert run.check("driver-in-firmware-range")["status"] == "observed-pass"
    assert run.check("driver-library")["status"] == "observed-pass"


def test_no_driver_library_is_a_failed_driver_library_not_a_set_env_pass_saying_so(sessions, tmp_path):
    sets, env = fake_board(tmp_path, fixture_path("npu-smi-info_910B3_x8_with_processes.txt"), "8.0.0")
    driver = tmp_path / "root" / "usr" / "local" / "Ascend" / "driver" / "lib64"
    for library in driver.rglob("*.so"):
        library.unlink()
    run = run_env(sessions, *sets, *NO_PROBES, env=env)
    set_env = run.check("cann-set-env")
    assert set_env["status"] == "observed-pass" and "not found" not in set_env["detail"], set_env
    library = run.check("driver-library")
    assert library["status"] == "observed-fail" and "libascend_hal.so not found under" in library["detail"]
    assert "install the Ascend driver" in library["hint"]
