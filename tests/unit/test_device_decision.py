"""The runner decides a job's device once, before the job starts, and records the decision in the job's files."""

from __future__ import annotations

import json
import sys

import yaml

from workbench.config.layers import defaults
from workbench.run.device import resolve
from workbench.run.runner import JobRunner, decide_device, device_record, effective_config
from workbench.session.store import SessionStore


def test_auto_is_decided_by_the_device_rule_and_keeps_the_request_and_reason():
    expected = resolve("auto", 2)
    decided = decide_device({"target": "auto", "id": 2})
    assert decided == {"target": expected["resolved"], "id": 2, "requested": "auto", "why": expected["why"]}
    assert decided["target"] in ("CPU", "GPU", "Ascend")


def test_an_explicit_target_is_kept_and_says_so():
    assert decide_device({"target": "Ascend", "id": 1}) == {
        "target": "Ascend",
        "id": 1,
        "requested": "Ascend",
        "why": "set in config",
    }
    record = device_record(decide_device({"target": "CPU", "id": 0}))
    assert record["resolved"] == record["target"] == "CPU" and record["requested"] == "CPU"


def test_the_effective_config_has_no_auto_left_and_the_callers_config_is_untouched():
    cfg = defaults()
    cfg["align"]["candidate"]["target"] = "auto"
    out = effective_config(cfg)
    assert cfg["device"] == {
        "target": "auto",
        "id": 0,
        "requested": None,
        "why": None,
    }  # the caller's layers stay as they were
    for section in (out["device"], out["align"]["reference"], out["align"]["candidate"]):
        assert section["target"] != "auto" and section["why"]
    assert out["device"]["requested"] == "auto" and out["align"]["candidate"]["requested"] == "auto"
    assert out["align"]["reference"] == dict(cfg["align"]["reference"], requested="CPU", why="set in config")
    # One decision per start: every `auto` of the job lands on the same target.
    assert out["align"]["candidate"]["target"] == out["device"]["target"]


def test_the_job_files_carry_the_decision(tmp_path):
    store = SessionStore(tmp_path / "sessions")
    sid = store.create([sys.executable])
    cfg = defaults()
    cfg["drill"]["steps"] = 0
    runner = JobRunner(store)
    job_dir = runner.start(sid, "drill", cfg)
    assert runner.wait(job_dir, timeout_s=60)
    decided = resolve("auto", 0)
    config_json = json.loads((job_dir / "config.json").read_text())
    config_yaml = yaml.safe_load((job_dir / "config.yaml").read_text())
    job = json.loads((job_dir / "job.json").read_text())
    want = {"target": decided["resolved"], "id": 0, "requested": "auto", "why": decided["why"]}
    assert config_json["device"] == config_yaml["device"] == want
    assert job["device"] == dict(want, resolved=decided["resolved"])


def test_one_rule_says_where_mindspore_does_not_run_as_asked():
    from jobs.common.msdevice import device_mismatches

    asked = {"target": "Ascend", "device_id": 0, "mode": "graph"}
    assert device_mismatches(asked, {"target": "Ascend", "device_id": 0, "mode": "graph"}) == []
    assert device_mismatches(asked, {"target": "CPU", "device_id": 0, "mode": "graph"}) == [
        "target: asked Ascend, MindSpore reports CPU"
    ]


def test_a_jobs_effective_config_loads_again_as_a_config_file(tmp_path):
    """The resume command feeds a job's config.yaml back with --config: the runner's recorded keys must load."""
    from workbench.config import layers as config
    from workbench.run.runner import effective_config

    path = tmp_path / "config.yaml"
    path.write_text(config.dump(effective_config(config.load(user_file=False))))
    again = config.load(str(path), user_file=False)
    assert again["device"]["requested"] == "auto" and again["device"]["target"] in ("CPU", "GPU", "Ascend")
    assert again["align"]["candidate"]["why"]
