"""Data-parallel `train` through msrun with real MindSpore on CPU: 2 ranks, a crashing rank, a cancel.

Each test runs the real CLI, which starts the supervisor, msrun, its scheduler and two ranks.
The `sessions` fixture validates every events.jsonl afterwards (seq contiguous per rank).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import List

import pytest

from tests.support.cli import run_cli
from tests.support.processes import assert_no_process_left, by_type, processes_of
from tests.support.waiting import wait_for
from workbench.events.protocol import read_all
from workbench.events.steps import expand_steps
from workbench.record.collect import collect
from workbench.record.markdown import report as markdown
from workbench.run.runner import JobRunner
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json

pytestmark = [pytest.mark.requires_mindspore, pytest.mark.slow]

# 1000 synthetic images -> 900 train / 100 val.
TINY = [
    "device.target=CPU",
    "data.source=synthetic",
    "data.synthetic_train=1000",
    "data.synthetic_test=100",
    "train.epochs=1",
    "train.batch_size=32",
    "train.warmup_steps=1",
    "train.parallel.workers=2",
    "limits.job_timeout_s=240",
    "limits.stall_s=120",
]
CLI_TIMEOUT_S = 300


def free_port() -> int:
    """A port nothing listens on now (msrun's scheduler takes it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sets(*extra: str) -> List[str]:
    """--set arguments for TINY plus `extra`, on a fresh master port."""
    out: List[str] = []
    for item in TINY + ["train.parallel.master_port=%d" % free_port()] + list(extra):
        out += ["--set", item]
    return out


def job_dir_of(proc) -> Path:
    """The job folder named on the CLI's stderr."""
    found = re.search(r"job \S+ in session \S+: (\S+)", proc.stderr)
    assert found, "no job line in stderr:\n%s\n%s" % (proc.stderr, proc.stdout)
    return Path(found.group(1))


def test_two_ranks_train_on_their_shards_and_end_with_identical_weights(sessions):
    # train_limit 301: 150 samples per rank, 1 dropped; batch 32 -> 4 full batches + a tail of 22.
    # The monitor samples steps 2 and 4 on both ranks (reading Adam's moment around the plain step, which
    # averages the gradients: the weights would differ at the end if a rank applied its own); rank 0 reports.
    proc = run_cli(
        "run",
        "train",
        "--sessions",
        sessions,
        *sets("train.train_limit=301", "train.monitor.every=2"),
        timeout=CLI_TIMEOUT_S,
    )
    job = job_dir_of(proc)
    assert proc.returncode == 0, "%s\n%s" % (job_status(job).label(), (job / "stderr.log").read_text()[-3000:])
    events = read_all(str(job / "events.jsonl"))

    assert {e.get("rank") for e in events} == {0, 1}, "every event carries its rank"
    started = {e["rank"]: e for e in by_type(events, "started")}
    assert sorted(started) == [0, 1] and started[0]["pid"] != started[1]["pid"]
    assert started[1]["parallel"] == {"rank": 1, "size": 2, "local_rank": 1, "node_rank": 0}
    for rank in (0, 1):
        steps = [s for e in by_type(events, "steps") if e["rank"] == rank for s in expand_steps(e)]
        assert [s["batch_size"] for s in steps] == [32, 32, 32, 32, 22], "rank %d" % rank
    drops = [e["message"] for e in by_type(events, "log") if "dropped" in e.get("message", "")]
    assert len(drops) == 2 and all("150 each, 1 dropped" in m for m in drops)

    # Rank 0 alone validates, saves and summarises.
    epochs = by_type(events, "epoch")
    assert [e["rank"] for e in epochs] == [0]
    val = epochs[0]["val"]
    assert 0.0 <= val["accuracy"] <= 1.0 and 0.0 <= val["macro_f1"] <= 1.0 and len(val["confusion"]) == 10
    assert [e["rank"] for e in by_type(events, "result")] == [0]
    assert {a["path"] for a in by_type(events, "artifact") if a["rank"] == 1} == {"artifacts/weights.rank1.sha256"}
    assert sorted((e["rank"], e["status"]) for e in by_type(events, "finished")) == [(0, "ok"), (1, "ok")]

    weights = [e for e in by_type(events, "check") if e["id"] == "weights-identical"]
    assert len(weights) == 1 and weights[0]["rank"] == 0 and weights[0]["status"] == "observed-pass"
    hashes = weights[0]["evidence"]["hashes"]
    for rank in (0, 1):
        on_disk = (job / "artifacts" / ("weights.rank%d.sha256" % rank)).read_text().split()[0]
        assert hashes[str(rank)] == on_disk and len(on_disk) == 64

    monitor = by_type(events, "monitor")
    assert [e["rank"] for e in monitor] and {e["rank"] for e in monitor} == {0}
    assert [s for e in monitor for s in e["global_step"]] == [2, 4]
    assert all(v > 0 for e in monitor for row in e["grad_norm"] + e["update_ratio"] for v in row)
    state = [e for e in by_type(events, "check") if e["id"] == "train-state"]
    assert [(e["rank"], e["evidence"]["samples"]) for e in state] == [(0, 2)]

    assert (job / "msrun_logs" / "scheduler.log").is_file()  # empty when all went well at GLOG_v=3
    for name in ("worker_0.log", "worker_1.log"):
        assert (job / "msrun_logs" / name).stat().st_size > 0, name
    spec = read_json(job / "job.json")
    assert spec["argv"][0].endswith("msrun") and spec["env"]["PATH"].startswith(str(job / "bin"))

    record = collect(SessionStore(sessions), job.parent.parent.name)
    par = record["training"]["runs"][0]["parallel"]
    assert par["settings"]["workers"] == 2 and par["ranks_seen"] == [0, 1]
    assert par["weights_identical"] == "observed-pass"
    # The record lists every rank's throughput, the effective batch and the parity caveat.
    assert [r["rank"] for r in par["ranks"]] == [0, 1]
    assert all(r["images_per_s"] > 0 for r in par["ranks"])
    assert par["effective_batch"] == 2 * par["batch_per_rank"]  # parity bench met its goal: no caveat
    assert par["parity_caveat"] is None
    text = markdown.render(record)
    assert "effective batch **%d**" % par["effective_batch"] in text
    assert "Caveat:" not in text
    assert_no_process_left(job)


def test_a_non_finite_loss_on_the_ranks_is_reported_and_not_localised(sessions):
    # fp16 with the hidden gain overflows at step 1 on every rank (the single-process run localises it)
    proc = run_cli(
        "run",
        "train",
        "--sessions",
        sessions,
        *sets("train.train_limit=128", "train.precision=fp16", "model.hidden_gain=1e5"),
        timeout=CLI_TIMEOUT_S,
    )
    job = job_dir_of(proc)
    assert proc.returncode == 1
    events = read_all(str(job / "events.jsonl"))
    finite = [e for e in by_type(events, "check") if e["id"] == "finite-loss"]
    assert sorted((e["rank"], e["status"], e["evidence"]["global_step"]) for e in finite) == [
        (0, "observed-fail", 1),
        (1, "observed-fail", 1),
    ]
    origin = [e for e in by_type(events, "check") if e["id"] == "overflow-origin"]
    assert sorted(e["rank"] for e in origin) == [0, 1]
    for e in origin:
        assert e["status"] == "not-run" and e["detail"] == "not localised in a data-parallel run"
    assert not (job / "artifacts" / "numerics").exists()  # no case kept, no replay started
    assert_no_process_left(job)


def test_a_crashing_rank_ends_the_job_naming_the_rank_and_signal(sessions):
    proc = run_cli(
        "run",
        "train",
        "--sessions",
        sessions,
        *sets("train.epochs=2", "train.parallel.crash_rank=1"),
        timeout=CLI_TIMEOUT_S,
    )
    job = job_dir_of(proc)
    assert proc.returncode == 1
    status = job_status(job)
    assert status.state in ("failed", "crashed"), status.label()
    assert re.search(r"rank 1 \(pid \d+\) died with SIGSEGV", status.reason), status.label()
    assert "rank 1 (pid" in proc.stdout and "SIGSEGV" in proc.stdout
    assert read_json(job / "exit.json")["returncode"] != 0
    assert read_json(job / "ranks" / "rank1.json")["signal"] == "SIGSEGV"
    events = read_all(str(job / "events.jsonl"))
    assert not [e for e in by_type(events, "finished") if e.get("rank") == 1 and e["status"] == "ok"]
    assert [e for e in by_type(events, "steps") if e["rank"] == 1], "rank 1 trained before it crashed"
    assert_no_process_left(job)


def test_cancel_stops_msrun_the_scheduler_and_every_rank(sessions):
    proc = run_cli(
        "run",
        "train",
        "--sessions",
        sessions,
        "--detach",
        *sets("data.synthetic_train=20000", "train.epochs=5"),
        timeout=60,
    )
    job = Path(proc.stdout.strip().splitlines()[-1])

    def both_ranks_stepping():
        ranks = {e.get("rank") for e in read_all(str(job / "events.jsonl")) if e.get("type") == "steps"}
        return ranks == {0, 1}

    try:
        wait_for(both_ranks_stepping, 180, poll_s=0.2, what="steps from both ranks")
        assert len(processes_of(job)) >= 6  # supervisor, msrun, 2 launchers, 2 ranks, scheduler + its launcher
        assert JobRunner.cancel(job)
        assert JobRunner.wait(job, timeout_s=60)
    finally:
        if not (job / "exit.json").exists():
            JobRunner.cancel(job)
    assert job_status(job).state == "cancelled", job_status(job).label()
    assert_no_process_left(job)
