"""Two nodes of one data-parallel `train` run, for real on one machine: each in its own network namespace.

msrun starts its scheduler wherever `master_addr` is a local address, so two nodes on one machine
need two network stacks: the test makes two namespaces joined by a veth pair (addresses exist
only inside them), runs `ms-workbench run train` with workers=2, local_workers=1 in each, with
node_rank 0 and 1 and master_addr = node 0's address, and removes the namespaces afterwards.
Needs root and `ip` (iproute2); skipped, saying which, otherwise.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.support.cli import cli_argv, cli_env
from tests.support.processes import assert_no_process_left, by_type, processes_of
from tests.support.waiting import wait_for
from workbench.events.protocol import read_all
from workbench.events.steps import expand_steps
from workbench.record.collect import collect
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json

pytestmark = [
    pytest.mark.requires_mindspore,
    pytest.mark.slow,
    pytest.mark.skipif(
        not hasattr(os, "geteuid") or os.geteuid() != 0, reason="network namespaces need root (ip netns add)"
    ),
    pytest.mark.skipif(shutil.which("ip") is None, reason="`ip` (iproute2) is missing"),
]

STALL_S = 60  # node 0 must end within this after node 1 is killed
TINY = [
    "device.target=CPU",
    "data.source=synthetic",
    "data.synthetic_test=100",
    "train.batch_size=32",
    "train.warmup_steps=1",
    "train.parallel.workers=2",
    "train.parallel.local_workers=1",
    "limits.job_timeout_s=300",
    "limits.stall_s=%d" % STALL_S,
]
TIMEOUT_S = 320


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), proc.stderr.strip()))


@pytest.fixture
def two_nodes():
    """Two network namespaces joined by a veth pair; yields [(namespace, address)] for node 0 and 1."""
    tag = "%d" % (os.getpid() % 100000)
    subnet = "10.%d.%d" % (200 + os.getpid() % 50, (os.getpid() // 50) % 250)
    nodes = [("wbn%sa" % tag, "%s.1" % subnet), ("wbn%sb" % tag, "%s.2" % subnet)]
    made: List[str] = []
    try:
        for ns, _ in nodes:
            _ip("netns", "add", ns)
            made.append(ns)
        _ip("link", "add", "wbv%sa" % tag, "type", "veth", "peer", "name", "wbv%sb" % tag)
        for (ns, addr), end in zip(nodes, "ab"):
            _ip("link", "set", "wbv%s%s" % (tag, end), "netns", ns)
            _ip("-n", ns, "addr", "add", addr + "/24", "dev", "wbv%s%s" % (tag, end))
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", "wbv%s%s" % (tag, end), "up")
    except RuntimeError as exc:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip("cannot make network namespaces here: %s" % exc)
    try:
        yield nodes
    finally:
        for ns in made:  # deleting a namespace deletes its end of the veth pair, and so the pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def start_node(sessions: Path, node: int, nodes, port: int, extra: List[str], tmp: Path) -> subprocess.Popen:
    """`ms-workbench run train` for one node, inside its namespace."""
    args = ["run", "train", "--sessions", sessions]
    for item in (
        TINY
        + [
            "train.parallel.node_rank=%d" % node,
            "train.parallel.master_addr=%s" % nodes[0][1],
            "train.parallel.master_port=%d" % port,
        ]
        + extra
    ):
        args += ["--set", item]
    out = open(str(tmp / ("node%d.out" % node)), "w")
    err = open(str(tmp / ("node%d.err" % node)), "w")
    return subprocess.Popen(
        ["ip", "netns", "exec", nodes[node][0]] + cli_argv(*args),
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=err,
        start_new_session=True,
    )


def job_of(tmp: Path, node: int) -> Path:
    """The node's job folder, from the CLI's stderr (once it is written)."""
    import re

    def found():
        text = (tmp / ("node%d.err" % node)).read_text()
        match = re.search(r"job \S+ in session \S+: (\S+)", text)
        return Path(match.group(1)) if match else None

    return wait_for(found, 60, poll_s=0.1, what="node %d's job folder" % node)


def start_both(sessions, nodes, tmp, extra) -> Tuple[List[subprocess.Popen], List[Path]]:
    """Start node 0 and node 1 together; return their CLI processes and job folders."""
    port = 20000 + os.getpid() % 20000
    procs = [start_node(sessions, n, nodes, port, extra, tmp) for n in (0, 1)]
    return procs, [job_of(tmp, n) for n in (0, 1)]


def events_by_rank(job: Path) -> Dict[int, List[dict]]:
    """Events of a job folder grouped by rank (job-level events under -1)."""
    out: Dict[int, List[dict]] = {}
    for ev in read_all(str(job / "events.jsonl")):
        out.setdefault(ev.get("rank", -1), []).append(ev)
    return out


def test_two_nodes_train_together_and_both_jobs_end_ok(sessions, two_nodes, tmp_path):
    procs, (job0, job1) = start_both(sessions, two_nodes, tmp_path, ["data.synthetic_train=3000", "train.epochs=2"])
    try:
        wait_for(
            lambda: any(e.get("type") in ("step", "steps") for e in read_all(str(job1 / "events.jsonl"))),
            180,
            poll_s=0.2,
            what="node 1's rank stepping",
        )
        # An ordinary job on the device both nodes share is refused while they run.
        other = subprocess.run(
            cli_argv(
                "run", "train", "--sessions", sessions, "--set", "device.target=CPU", "--set", "data.source=synthetic"
            ),
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        for proc in procs:
            proc.wait(TIMEOUT_S)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert other.returncode != 0 and "refused" in other.stdout + other.stderr, other.stdout + other.stderr
    assert "distributed run msrun %s" % two_nodes[0][1] in other.stdout + other.stderr

    for node, job in enumerate((job0, job1)):
        assert procs[node].returncode == 0, "node %d: %s\n%s" % (
            node,
            job_status(job).label(),
            (tmp_path / ("node%d.out" % node)).read_text()[-3000:],
        )
        assert job_status(job).state == "ok", job_status(job).label()
    ev0, ev1 = events_by_rank(job0), events_by_rank(job1)
    assert set(ev0) == {0} and set(ev1) <= {1, -1}, "each job holds its own node's rank only"

    # Rank 0's job: validation, checkpoints, the weights check over both nodes.
    assert [e["epoch"] for e in by_type(ev0[0], "epoch")] == [1, 2]
    assert (job0 / "artifacts" / "best.ckpt").is_file() and (job0 / "artifacts" / "state.ckpt").is_file()
    check = [c for c in by_type(ev0[0], "check") if c["id"] == "weights-identical"][0]
    assert check["status"] == "observed-pass" and sorted(check["evidence"]["hashes"]) == ["0", "1"]
    assert check["evidence"]["hashes"]["1"] == (job1 / "artifacts" / "weights.rank1.sha256").read_text().split()[0]
    result0 = by_type(ev0[0], "result")[-1]["summary"]
    assert [r["rank"] for r in result0["parallel"]["ranks"]] == [0, 1]

    # Node 1's job: no validation or checkpoints; its record says which rank ran and where rank 0's job is.
    assert not by_type(ev1[1], "epoch") and not (job1 / "artifacts" / "best.ckpt").exists()
    assert not by_type(ev1[1], "result"), "the node's result is job-level, written by its first rank's launcher"
    result1 = by_type(ev1[-1], "result")[-1]["summary"]
    assert result1["ranks_here"] == [1] and result1["parallel"]["node_rank"] == 1
    assert result1["rank0_job"]["dir"] == str(job0) and result1["rank0_job"]["host"]
    assert read_json(job1 / "exit.json")["returncode"] == 0

    # The session records: rank 0's lists both ranks' throughput; node 1's says which rank ran and where rank 0's job is.
    par0 = collect(SessionStore(sessions), job0.parent.parent.name)["training"]["runs"][0]["parallel"]
    assert [r["rank"] for r in par0["ranks"]] == [0, 1] and par0["effective_batch"] == 64
    assert all(r["images_per_s"] > 0 for r in par0["ranks"]) and par0["ranks_missing"] == []
    par1 = collect(SessionStore(sessions), job1.parent.parent.name)["training"]["runs"][0]["parallel"]
    assert par1["ranks_here"] == [1] and par1["rank0_job"]["dir"] == str(job0)
    for job in (job0, job1):
        assert_no_process_left(job)


def test_killing_node_1_ends_node_0_within_the_stall_limit_naming_the_lost_rank(sessions, two_nodes, tmp_path):
    procs, (job0, job1) = start_both(sessions, two_nodes, tmp_path, ["data.synthetic_train=40000", "train.epochs=20"])
    try:
        wait_for(
            lambda: (
                sum(
                    len(expand_steps(e))
                    for e in read_all(str(job0 / "events.jsonl"))
                    if e.get("type") in ("step", "steps")
                )
                > 20
            ),
            180,
            poll_s=0.2,
            what="the run stepping",
        )
        killed = processes_of(job1)
        assert killed, "node 1's job has processes"
        for line in killed:  # the whole node at once, as when a machine goes away
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except ProcessLookupError:
                pass
        t_kill = time.monotonic()
        wait_for(lambda: (job0 / "exit.json").exists(), STALL_S + 30, poll_s=0.2, what="node 0's job to end")
        took = time.monotonic() - t_kill
        procs[0].wait(30)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    status = job_status(job0)
    assert took < STALL_S, "node 0 ended %.0f s after node 1 was killed; limits.stall_s is %d" % (took, STALL_S)
    assert status.state == "failed" and "rank 1" in status.reason and "lost" in status.reason, status.label()
    assert not read_json(job0 / "exit.json")["stalled"], "ended by the job, not by the stall watchdog"
    assert procs[0].returncode == 1
    assert_no_process_left(job0)
