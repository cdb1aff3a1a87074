"""The device-activity check in a real JobContext, against a fake npu-smi that prints recorded tables."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jobs.common.device_activity import (
    INIT_PID_NS,
    BackgroundSample,
    open_device_nodes,
    pid_namespace,
    sample_device_activity,
)
from tests.support.ascend_fakes import DOCKER_FIXTURE, fixture_path, install_fake_npu_smi
from tests.support.events import assert_events_valid
from workbench.ascend.activity import CONTAINER, HOST, pid_space
from workbench.config.layers import defaults
from workbench.events.protocol import Evidence, read_all
from workbench.jobkit.context import JobContext
from workbench.system.atomic import sha256_file, write_json

B3 = "npu-smi-info_910B3_x8_with_processes.txt"
WIDE_26X = "derived_npu-smi-info_26x_container-pid_from_910B3.txt"
DUO = "derived_npu-smi-info_310P3-duo_two-chips_from_310x4.txt"
ASCEND = {"requested": "Ascend", "resolved": "Ascend", "id": 3, "why": "asked for"}


def make_ctx(root: Path, device=None) -> JobContext:
    """A real job folder laid out like the session store's: <root>/sessions/<sid>/jobs/<jid>."""
    job_dir = root / "sessions" / "20260101-000000-abcd" / "jobs" / "train-001"
    job_dir.mkdir(parents=True)
    write_json(job_dir / "config.json", defaults())
    write_json(
        job_dir / "job.json",
        {
            "jid": "train-001",
            "kind": "train",
            "session": "20260101-000000-abcd",
            "created": 0,
            "device": dict(device or ASCEND),
            "argv": [],
            "command": [],
        },
    )
    return JobContext(job_dir)


def events(ctx: JobContext):
    ctx.events.close()
    assert_events_valid(ctx.dir)
    return read_all(str(ctx.dir / "events.jsonl"))


@pytest.fixture()
def fake_smi(tmp_path):
    def install(name: str, **kw) -> str:
        return str(install_fake_npu_smi(tmp_path / "bin", fixture_path(name), **kw))

    return install


def test_host_pid_on_requested_npu_passes_and_keeps_raw_output(tmp_path, fake_smi, monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    ctx = make_ctx(tmp_path)
    check = sample_device_activity(ctx, ctx.device, npu_smi=fake_smi(B3), space=pid_space(HOST, 683935))
    assert check["status"] == "observed-pass"
    assert check["evidence"]["rule"] == "host-pid" and check["evidence"]["aicore_pct"] == 89.0
    raw = ctx.artifacts / "npu-smi-during-train.txt"
    assert "683935" in raw.read_text()
    evs = events(ctx)
    art = [e for e in evs if e["type"] == "artifact"]
    assert [a["path"] for a in art] == ["artifacts/npu-smi-during-train.txt"]
    assert art[0]["sha256"] == sha256_file(raw)
    assert [e["id"] for e in evs if e["type"] == "check"] == ["device-activity"]
    # The same lock file as the env job: one npu-smi poller per sessions root.
    assert check["evidence"]["lock"] == str(tmp_path / "sessions" / ".locks" / "npu-smi.lock")
    assert os.path.exists(check["evidence"]["lock"])


def test_container_pid_matched_through_visible_devices(tmp_path, fake_smi, monkeypatch):
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "0,1")
    ctx = make_ctx(tmp_path, dict(ASCEND, id=0))
    check = sample_device_activity(
        ctx, ctx.device, npu_smi=fake_smi(WIDE_26X), space=pid_space(CONTAINER, 412, device_fds=["/dev/davinci0"])
    )
    assert check["status"] == "observed-pass"
    assert check["evidence"]["rule"] == "container-pid"
    assert "via ASCEND_RT_VISIBLE_DEVICES=0,1" in check["detail"]


def test_own_pid_missing_is_observed_fail_naming_pids(tmp_path, fake_smi, monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    ctx = make_ctx(tmp_path)
    check = sample_device_activity(
        ctx, ctx.device, npu_smi=fake_smi(B3), space=pid_space(HOST, os.getpid())
    )  # our real pid
    assert check["status"] == "observed-fail"
    assert check["evidence"]["pid"] == os.getpid()
    assert "683935 on NPU 3" in check["detail"]


def test_two_dies_of_one_npu_are_two_devices(tmp_path, fake_smi, monkeypatch):
    # Logical device 1 of a 310P Duo card is NPU 0 chip 1: the pid on chip 0 is not this job's device.
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    smi = fake_smi(DUO)
    sibling = sample_device_activity(
        make_ctx(tmp_path / "a", dict(ASCEND, id=1)), dict(ASCEND, id=1), npu_smi=smi, space=pid_space(HOST, 41235)
    )
    assert sibling["status"] == Evidence.FAIL, sibling
    assert "41235 on NPU 0 chip 0" in sibling["detail"]
    own = sample_device_activity(
        make_ctx(tmp_path / "b", dict(ASCEND, id=1)), dict(ASCEND, id=1), npu_smi=smi, space=pid_space(HOST, 41236)
    )
    assert own["status"] == Evidence.PASS, own
    assert (own["evidence"]["row"]["npu"], own["evidence"]["row"]["chip"]) == (0, 1)


def test_several_processes_on_one_npu(tmp_path, fake_smi, monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    ctx = make_ctx(tmp_path, dict(ASCEND, id=0))
    check = sample_device_activity(ctx, ctx.device, npu_smi=fake_smi(WIDE_26X), space=pid_space(HOST, 683936))
    assert check["status"] == "observed-pass"
    assert [p["pid"] for p in check["evidence"]["processes"] if p["npu"] == 0] == [683932, 683936]
    assert check["evidence"]["row"]["pid"] == 683936


def test_cpu_target_is_not_run_without_touching_npu_smi(tmp_path, fake_smi):
    log = tmp_path / "calls.log"
    smi = fake_smi(B3, log_path=log)
    ctx = make_ctx(tmp_path, {"requested": "CPU", "resolved": "CPU", "id": 0, "why": "asked for"})
    check = sample_device_activity(ctx, ctx.device, npu_smi=smi)
    assert check["status"] == "not-run"
    assert "Ascend only" in check["detail"]
    assert not log.exists()
    assert [e["type"] for e in events(ctx)] == ["check"]


def test_missing_npu_smi_is_not_run(tmp_path):
    ctx = make_ctx(tmp_path)
    check = sample_device_activity(ctx, ctx.device, npu_smi=str(tmp_path / "nowhere" / "npu-smi"))
    assert check["status"] == "not-run"
    assert "no npu-smi found (looked for" in check["detail"]


@pytest.mark.parametrize("exit_code", [0, 255])
def test_failing_npu_smi_is_blocked_with_its_words_and_the_container_hint(tmp_path, fake_smi, exit_code):
    ctx = make_ctx(tmp_path)
    smi = fake_smi(DOCKER_FIXTURE, exit_code=exit_code)  # real npu-smi exits 0 or 255 on a dcmi error
    check = sample_device_activity(ctx, ctx.device, npu_smi=smi, space=pid_space(HOST, 683935))
    assert check["status"] == Evidence.BLOCKED
    assert check["evidence"]["failure"]["code"] == "dcmi-8020"
    assert "dcmi model initialized failed, because the device is used. ret is -8020" in check["detail"]
    assert "--device=/dev/davinci0 --device=/dev/davinci_manager" in check["hint"]
    assert (ctx.artifacts / "npu-smi-during-train.txt").is_file()


def test_background_sample_reports_from_the_caller(tmp_path, fake_smi, monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    ctx = make_ctx(tmp_path)
    sample = BackgroundSample(
        ctx, ctx.device, npu_smi=fake_smi(B3, hang_s=0.3), space=pid_space(HOST, 683935), when={"after_step": 11}
    ).start()
    # The fake sleeps 0.3 s before printing, so the sample cannot be in yet.
    assert not sample.done() and sample.report(wait_s=0) is None
    check = sample.report(wait_s=10)
    assert check["status"] == "observed-pass"
    assert check["evidence"]["when"] == {"after_step": 11}
    assert sample.report(wait_s=1) is None  # once only
    lines = (ctx.dir / "events.jsonl").read_text().splitlines()
    assert sum(1 for line in lines if json.loads(line)["type"] == "check") == 1


def test_host_job_is_not_a_containers_process_with_its_pid(tmp_path, fake_smi, monkeypatch):
    # The job's host pid 412 is not on the table; another container's process has in-container pid 412.
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    ctx = make_ctx(tmp_path, dict(ASCEND, id=0))
    check = sample_device_activity(ctx, ctx.device, npu_smi=fake_smi(WIDE_26X), space=pid_space(HOST, 412))
    assert check["status"] == Evidence.FAIL, check
    assert "not this job: host pid 683936 (in container 412)" in check["detail"]


def fake_proc(root: Path, own_ns: str, init_ns: str, nspid=None) -> str:
    """A /proc with self/ns/pid, 1/ns/pid (links as the kernel names them) and self/status's NSpid."""
    for who, target in (("self", own_ns), ("1", init_ns)):
        (root / who / "ns").mkdir(parents=True)
        os.symlink(target, str(root / who / "ns" / "pid"))
    if nspid:
        (root / "self" / "status").write_text("Name:\tpython\nNSpid:\t%s\n" % "\t".join(map(str, nspid)))
    return str(root)


def test_pid_namespace_host_container_and_host_proc(tmp_path):
    host = pid_namespace(412, fake_proc(tmp_path / "a", INIT_PID_NS, INIT_PID_NS, [412]))
    assert (host["space"], host["pid"], host["host_pid"]) == (HOST, 412, 412)
    # --pid=host containers share the initial namespace: their pids are host pids.
    own = pid_namespace(75, fake_proc(tmp_path / "b", "pid:[4026532412]", "pid:[4026532412]", [75]))
    assert (own["space"], own["pid"], own["host_pid"]) == (CONTAINER, 75, None)
    # A container that reads the host's /proc sees its host pid first in NSpid.
    seen = pid_namespace(75, fake_proc(tmp_path / "c", "pid:[4026532412]", INIT_PID_NS, [41236, 75]))
    assert (seen["space"], seen["pid"], seen["host_pid"]) == (CONTAINER, 75, 41236)
    unknown = pid_namespace(75, str(tmp_path / "none"))
    assert unknown["space"] is None and "cannot be read" in unknown["why"]


def test_pid_namespace_of_this_process_names_its_own_pid():
    space = pid_namespace()
    assert space["pid"] == os.getpid() and space["space"] in (HOST, CONTAINER)
    assert (space["space"] == HOST) == (os.readlink("/proc/self/ns/pid") == INIT_PID_NS)


def test_open_device_nodes_lists_the_davinci_nodes_a_process_holds(tmp_path):
    fd = tmp_path / "75" / "fd"
    fd.mkdir(parents=True)
    for n, target in enumerate(["/dev/davinci_manager", "/dev/davinci3", "/dev/null", "/dev/davinci3", "pipe:[1]"]):
        os.symlink(target, str(fd / str(n)))
    assert open_device_nodes(75, str(tmp_path)) == ["/dev/davinci3"]
    assert open_device_nodes(76, str(tmp_path)) is None  # unreadable: not "none held"
    assert open_device_nodes(os.getpid()) == []  # this test process holds no NPU
