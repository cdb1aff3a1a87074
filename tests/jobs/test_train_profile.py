"""`train.profile.steps=N`: a real train job on CPU profiles N steps after warm-up, through the CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from tests.support.jobpython import job_mindspore
from workbench.events.protocol import read_all
from workbench.events.steps import expand_steps
from workbench.system.atomic import sha256_file

pytestmark = [pytest.mark.requires_mindspore, pytest.mark.slow]

# 1800 synthetic training images at batch 64: 28 full steps and a tail of 8, one epoch.
SETS = [
    "data.source=synthetic",
    "data.synthetic_train=2000",
    "data.synthetic_test=300",
    "train.val_limit=200",
    "train.warmup_steps=3",
    "train.epochs=1",
    "train.profile.steps=6",
]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp("profile") / "sessions"
    args = ["run", "train", "--sessions", root]
    for item in SETS:
        args += ["--set", item]
    proc = run_cli(*args, timeout=240)
    found = re.search(r"job \S+ in session \S+: (\S+)", proc.stderr)
    assert found and proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    job_dir = Path(found.group(1))
    assert_events_valid(job_dir)
    return job_dir, read_all(str(job_dir / "events.jsonl"))


def test_profiled_steps_follow_warmup_and_leave_the_steady_statistics(job):
    _, evs = job
    phases = [s["phase"] for e in evs if e["type"] == "steps" for s in expand_steps(e)]
    # 6 steady steps first, so the window has unprofiled neighbours on both sides
    assert phases[:16] == ["compile", "warmup", "warmup", "warmup"] + ["steady"] * 6 + ["profiled"] * 6
    assert phases.count("profiled") == 6
    perf = [e for e in evs if e["type"] == "perf" and e["scope"] == "run"][-1]
    assert perf["profiled_steps"] == 6
    # 29 steps - compile - 3 warm-up - 6 profiled - the tail's recompile
    assert perf["steady"]["n"] == 29 - 1 - 3 - 6 - 1
    summary = [e for e in evs if e["type"] == "result"][-1]["summary"]
    assert summary["perf"]["profile_slowdown"] == pytest.approx(perf["profile_slowdown"])
    prof = summary["profile"]
    steps = [s for e in evs if e["type"] == "steps" for s in expand_steps(e)]
    profiled_ms = sorted(s["step_ms"] for s in steps if s["phase"] == "profiled")
    assert prof["profiled_median_ms"] == pytest.approx((profiled_ms[2] + profiled_ms[3]) / 2)
    assert prof["steady_median_ms"] == pytest.approx(perf["steady"]["median_ms"])
    assert prof["slowdown"] == pytest.approx(prof["profiled_median_ms"] / prof["steady_median_ms"])
    around = [s["step_ms"] for s in steps[4:10] + steps[16:22]]
    assert prof["adjacent_steps"] == 12
    assert prof["adjacent_median_ms"] == pytest.approx(sorted(around)[5] / 2 + sorted(around)[6] / 2)
    assert prof["slowdown_adjacent"] == pytest.approx(prof["profiled_median_ms"] / prof["adjacent_median_ms"])


def test_profile_summary_names_real_operators(job):
    _, evs = job
    prof = [e for e in evs if e["type"] == "result"][-1]["summary"]["profile"]
    # the schedule-based profiler where the job's MindSpore has it (2.10), else the 2.4-style class (2.5 dev)
    assert prof["api"] == job_mindspore()["profile_api"] and prof["error"] is None
    assert prof["steps"] == 6 and prof["per_step"]["usable"] is True
    assert prof["per_step"]["ops"] == [prof["per_step"]["ops"][0]] * 6 and prof["ops_per_step"] > 10
    types = {op["type"] for op in prof["top_types"]}
    assert {"MatMul", "BiasAdd", "ReLU", "Adam"} <= types
    for op in prof["top_ops"]:
        assert set(op) >= {"name", "type", "count", "total_ms", "mean_us", "share"} and op["count"] == 6
    assert prof["device_ms_per_step"] is None and "CPU target" in prof["device_time_note"]
    check = [e for e in evs if e["type"] == "check" and e["id"] == "profile"][-1]
    assert check["status"] == "observed-pass" and "6 steps profiled" in check["detail"]


def test_trace_artifacts_exist_with_hashes_and_stdout_stays_out(job):
    job_dir, evs = job
    arts = [e for e in evs if e["type"] == "artifact" and e["kind"].startswith("profile-")]
    kinds = {a["kind"] for a in arts}
    assert {"profile-chrome-trace", "profile-log"} <= kinds
    for art in arts:
        assert art["path"].startswith("artifacts/profile/")
        assert art["sha256"] == sha256_file(job_dir / art["path"])
    assert "Perfetto" in [a for a in arts if a["kind"] == "profile-chrome-trace"][0]["opens_with"]
    log = (job_dir / "artifacts" / "profile" / "profiler-stdout.log").read_text()
    assert "parsing" in log.lower()
    assert "parsing" not in (job_dir / "stdout.log").read_text().lower()


def test_device_activity_is_not_run_on_cpu_after_warmup(job):
    _, evs = job
    activity = [e for e in evs if e["type"] == "check" and e["id"] == "device-activity"]
    assert len(activity) == 1 and activity[0]["status"] == "not-run"
    assert activity[0]["evidence"]["when"]["after_global_step"] == 4  # compile + 3 warm-up steps
    seq_of_first_profiled = next(
        e["seq"] for e in evs if e["type"] == "steps" and "profiled" in [s["phase"] for s in expand_steps(e)]
    )
    assert activity[0]["seq"] < seq_of_first_profiled  # sampled before the window opened
