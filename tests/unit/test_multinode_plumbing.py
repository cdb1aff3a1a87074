"""Multi-node plumbing without MindSpore: a lost rank named from msrun's scheduler log and put first,
the job-level `finished ok` of a node without rank 0, and the record's per-rank lines."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.train import msrun_rank
from workbench.events.protocol import read_all, validate_file
from workbench.record.ranks import parallel_block, parallel_summary, parity_caveat
from workbench.run.msrun import heartbeat_env
from workbench.session.store import job_status

# Lines MindSpore 2.10's scheduler wrote when node 1's job was killed (msrun_logs/scheduler.log).
SCHEDULER_LOG = """\
[ERROR] DISTRIBUTED(14659,7fcd4c89e6c0,python):2026-12-01-14:14:55.097.075 [mindspore/ccsrc/cluster/topology/\
meta_server_node.cc:548] UpdateTopoState] The node: 1 is timed out. It may exit with exception, please check this node's log.
[ERROR] DISTRIBUTED(14659,7fcd791d0e40,python):2026-12-01-14:14:57.053.354 [mindspore/ccsrc/cluster/topology/\
meta_server_node.cc:95] Finalize] There are 1 abnormal compute graph nodes.
RuntimeError: The total number of timed out node is 1. Timed out node list is: [const vector]{1}, worker 1 is the \
first one timed out, please check its log.
"""


def job_dir(tmp_path: Path, node_rank: int = 0) -> Path:
    job = tmp_path / ("train-%03d" % (node_rank + 1))
    (job / "msrun_logs").mkdir(parents=True)
    (job / "config.json").write_text(
        json.dumps({"train": {"parallel": {"workers": 2, "local_workers": 1, "node_rank": node_rank}}})
    )
    (job / "events.jsonl").write_text("")
    return job


def test_the_scheduler_log_names_the_lost_rank():
    assert msrun_rank.lost_ranks(SCHEDULER_LOG) == [1]
    assert msrun_rank.lost_ranks("The node: 3 is timed out\nThe node: 2 is timed out") == [3, 2]
    assert msrun_rank.lost_ranks("all fine") == []


def test_the_log_follower_sees_a_line_written_in_two_pieces(tmp_path):
    log = tmp_path / "scheduler.log"
    log.write_text("[ERROR] ... The node: ")
    follower = msrun_rank.LogFollower(log)
    assert msrun_rank.lost_ranks(follower.read_new()) == []
    with open(log, "a") as fh:
        fh.write("1 is timed out.\n")
    assert msrun_rank.lost_ranks(follower.read_new()) == [1]
    assert msrun_rank.LogFollower(tmp_path / "missing.log").read_new() == ""


def test_a_lost_rank_outranks_the_knock_on_failure_reported_before_it(tmp_path):
    job = job_dir(tmp_path)
    knock_on = {
        "status": "failed",
        "error": {"type": "RuntimeError", "rank": 0, "message": "rank 0 failed: Launch kernel failed: AllReduce"},
    }
    msrun_rank.report(job, knock_on, by="launcher of rank 0")
    lost = msrun_rank.lost_outcome(job, [1], 31.0)
    assert lost["error"]["message"].startswith("rank 1 (node 1) lost: ")
    msrun_rank.report(job, lost, by="launcher of the scheduler")
    msrun_rank.report(job, msrun_rank.describe_exit(job, 0, 10, -9, 40.0), by="launcher of rank 0")
    assert validate_file(str(job / "events.jsonl")) == []
    finished = [e for e in read_all(str(job / "events.jsonl")) if e["type"] == "finished"]
    assert [e["error"]["type"] for e in finished] == ["RuntimeError", "RankLost", "RankLost"]
    assert finished[1]["error"]["knock_on"] == knock_on["error"]["message"]
    (job / "exit.json").write_text(json.dumps({"returncode": 1, "duration_s": 41.0}))
    status = job_status(job)
    assert status.state == "failed" and status.reason.startswith("rank 1 (node 1) lost"), status.label()


def test_a_node_without_rank_0_ends_ok_when_its_first_rank_does(tmp_path):
    job = job_dir(tmp_path, node_rank=1)
    with open(job / "events.jsonl", "a") as fh:
        fh.write(
            json.dumps({"v": 1, "seq": 0, "t": 1.0, "type": "finished", "rank": 1, "status": "ok", "error": None})
            + "\n"
        )
    (job / "exit.json").write_text(json.dumps({"returncode": 0, "duration_s": 38.0}))
    assert job_status(job).label() == "failed: exited 0 without a finished event after 38 s"  # the old report
    (job / "ranks").mkdir()
    (job / "ranks" / "node.json").write_text(json.dumps({"ranks_here": [1], "rank0_job": {"dir": "/elsewhere"}}))
    assert msrun_rank.report_node_ok(job, 1)
    assert job_status(job).state == "ok"
    result = [e for e in read_all(str(job / "events.jsonl")) if e["type"] == "result"]
    assert len(result) == 1 and "rank" not in result[0] and result[0]["summary"]["ranks_here"] == [1]
    assert validate_file(str(job / "events.jsonl")) == []


def test_a_node_whose_rank_failed_is_not_turned_ok(tmp_path):
    job = job_dir(tmp_path, node_rank=1)
    msrun_rank.report(job, msrun_rank.describe_exit(job, 1, 11, -11, 2.0), by="launcher of rank 1")
    assert not msrun_rank.report_node_ok(job, 1)


def test_the_record_lists_every_rank_the_effective_batch_and_the_caveat():
    cfg = {"train": {"batch_size": 32, "parallel": {"workers": 2, "local_workers": 1}}}
    perf = [
        {"type": "perf", "rank": 0, "scope": "run", "steady": {"images_per_s": 1000.0, "median_ms": 30.0, "n": 90}},
        {"type": "perf", "rank": 0, "scope": "epoch", "steady": {"images_per_s": 5.0}},
    ]
    result = {
        "parallel": {
            "ranks": [
                {"rank": 0, "images_per_s": 999.0},
                {"rank": 1, "images_per_s": 900.0, "median_ms": 35.0, "steps": 90},
            ]
        }
    }
    out = parallel_summary(cfg, perf, result)
    assert out["effective_batch"] == 64
    assert [(r["rank"], r["images_per_s"]) for r in out["ranks"]] == [(0, 1000.0), (1, 900.0)]
    assert out["ranks"][1]["source"].startswith("collected") and out["images_per_s_all_ranks"] == 1900.0
    assert parallel_summary({"train": {"batch_size": 64, "parallel": {"workers": 1}}}, perf) is None
    text = "\n".join(parallel_block(dict(out, settings={"workers": 2, "local_workers": 1, "node_rank": 0})))
    assert "effective batch **64**" in text and "| 1 | 900 images/s | 35 ms | 90 |" in text and "1 900 images/s" in text
    assert parity_caveat({"goal_met": True}) is None
    assert "has not met its goal" in parity_caveat({"goal_met": False, "measured": "k=5", "where": "docs"})


def test_a_rank_that_crashed_here_stays_named_when_the_scheduler_also_reports_it_lost(tmp_path):
    job = job_dir(tmp_path)
    msrun_rank.report(job, msrun_rank.describe_exit(job, 1, 11, -11, 2.0), by="launcher of rank 1")
    chosen = msrun_rank.report(job, msrun_rank.lost_outcome(job, [1], 30.0), by="launcher of the scheduler")
    assert chosen["error"]["message"] == "rank 1 (pid 11) died with SIGSEGV after 2.0 s"


def test_the_heartbeat_limit_is_a_third_of_the_stall_limit_within_10_to_30_s():
    def limit(stall_s, environ=None):
        return heartbeat_env({"limits": {"stall_s": stall_s}}, environ or {}).get("MS_NODE_TIMEOUT")

    assert [limit(s) for s in (60, 300.0, 20, 0)] == ["20", "30", "10", None]
    assert limit(60, {"MS_NODE_TIMEOUT": "5"}) is None, "the user's own setting wins"
