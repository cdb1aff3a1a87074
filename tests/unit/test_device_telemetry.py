"""The training job's device sampler against a fake npu-smi (a real subprocess) that replays real `-t` outputs."""

from __future__ import annotations

import time

from jobs.common.device_telemetry import DeviceTelemetry
from tests.support.ascend_fakes import fixture_path, fixture_text, install_replaying_npu_smi, with_value
from tests.support.waiting import wait_for

INFO = "derived_npu-smi-info_310P3-duo_two-chips_from_310x4.txt"
COMMON = fixture_text("derived_npu-smi-info-t-common_310P3-duo_two-chips-and-mcu.txt")
USAGES = fixture_text("derived_npu-smi-info-t-usages_310P3-duo_two-chips.txt")


def frames(aicore, temps):
    """-t common / -t usages outputs whose AI Core and temperature change per call (layout as recorded)."""
    return {
        "common": [
            with_value(with_value(COMMON, "Aicore Usage Rate(%)", str(a)), "Temperature(C)", str(t))
            for a, t in zip(aicore, temps)
        ],
        "usages": [with_value(USAGES, "Aicore Usage Rate(%)", str(a)) for a in aicore],
    }


def collect(tele, n, timeout_s=30):
    """Drain until n `device` events came (or the sampler stopped); all drained events."""
    got = []

    def enough():
        got.extend(tele.drain())
        return len([e for e in got if e[0] == "device"]) >= n or tele.stopped_why

    wait_for(enough, timeout_s, what="%d device samples" % n)
    return got


def test_samples_follow_the_changing_values_of_the_jobs_own_chip(tmp_path):
    log = tmp_path / "calls.log"
    smi = install_replaying_npu_smi(
        tmp_path / "bin", fixture_path(INFO), frames([5, 60, 95], [70, 76, 81]), log_path=log
    )
    began = time.monotonic()
    tele = DeviceTelemetry(str(smi), str(tmp_path / "smi.lock"), device_id=1, visible=None, timeout_s=10).start()
    got = collect(tele, 3)
    elapsed = time.monotonic() - began
    tele.stop(wait_s=10)
    samples = [f for t, f in got if t == "device"][:3]
    assert [(s["npu"], s["chip"]) for s in samples] == [(0, 1)] * 3  # device id 1 = NPU 0 chip 1 (second die)
    assert [s["ai_core_pct"] for s in samples] == [5.0, 60.0, 95.0]  # one frame per sample, in order
    assert [s["temp_c"] for s in samples] == [70.0, 76.0, 81.0]
    assert log.read_text().split("\n")[:2] == ["common 0", "usages 0"]
    assert all(s["mem_total_mb"] == 8192.0 and s["mem_used_mb"] == round(8192 * 0.35) for s in samples)
    # 310P: only the card's power (the MCU's) exists; it is the card's field, never chip 1's.
    assert all(s["power_w"] is None and s["card_power_w"] == 45.2 for s in samples)
    assert elapsed >= 2 * 0.99  # three samples at most once a second
    assert tele.stopped_why is None


def test_a_failing_npu_smi_is_logged_once_and_sampling_stops(tmp_path):
    smi = install_replaying_npu_smi(tmp_path / "bin", fixture_path(INFO), {"common": [COMMON]})  # -t usages fails
    tele = DeviceTelemetry(str(smi), str(tmp_path / "smi.lock"), device_id=0, visible=None, timeout_s=10).start()
    wait_for(lambda: tele.stopped_why, 30, what="the sampler to give up")
    tele.stop(wait_s=10)
    got = tele.drain()
    assert [t for t, _ in got] == ["log"] and "usages" in got[0][1]["message"]
    assert got[0][1]["message"].startswith("device telemetry stopped: npu-smi -t usages: exit-2")
    assert not tele._thread.is_alive() and tele.samples == 0


def test_a_slow_npu_smi_stops_sampling_after_one_sample(tmp_path):
    smi = install_replaying_npu_smi(tmp_path / "bin", fixture_path(INFO), frames([5], [70]))
    tele = DeviceTelemetry(
        str(smi), str(tmp_path / "smi.lock"), device_id=0, visible=None, timeout_s=10, slow_s=0.0
    ).start()
    wait_for(lambda: tele.stopped_why, 30, what="the sampler to give up")
    tele.stop(wait_s=10)
    got = tele.drain()
    assert [t for t, _ in got] == ["device", "log"] and "too slow" in got[1][1]["message"]


def test_a_device_id_outside_the_visible_devices_is_logged_and_nothing_is_sampled(tmp_path):
    log = tmp_path / "calls.log"
    smi = install_replaying_npu_smi(tmp_path / "bin", fixture_path(INFO), frames([5], [70]), log_path=log)
    tele = DeviceTelemetry(str(smi), str(tmp_path / "smi.lock"), device_id=3, visible="0,1", timeout_s=10).start()
    wait_for(lambda: tele.stopped_why, 30, what="the sampler to give up")
    assert "maps to no NPU" in tele.drain()[0][1]["message"] and not log.exists()
