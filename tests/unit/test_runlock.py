"""Shared device locks for the nodes of one distributed run; everyone else stays refused."""

from __future__ import annotations

import os

from workbench.run.locks import run_key, try_shared_lock
from workbench.run.supervise import try_lock

KEY = "msrun 10.0.0.1:8118, 2 workers"


def holder(jid: str) -> dict:
    return {"session": "s1", "jid": jid, "pid": os.getpid()}


def test_nodes_of_one_run_share_the_device_and_other_jobs_are_refused(tmp_path):
    lock = tmp_path / "CPU-0.lock"
    node0, who = try_shared_lock(lock, holder("train-001"), KEY)
    assert node0 is not None and who is None
    node1, who = try_shared_lock(lock, holder("train-002"), KEY)
    assert node1 is not None and who is None, who

    fd, who = try_lock(lock, holder("train-003"))  # an ordinary job
    assert fd is None and KEY in who and "train-001" in who
    fd, who = try_shared_lock(lock, holder("train-004"), "msrun 10.0.0.1:9000, 2 workers")  # another run
    assert fd is None and KEY in who

    os.close(node0)
    fd, who = try_lock(lock, holder("train-005"))
    assert fd is None, "node 1 still holds it"
    os.close(node1)
    fd, who = try_lock(lock, holder("train-006"))
    assert fd is not None and who is None
    os.close(fd)


def test_an_exclusive_holder_refuses_a_node_even_when_a_stale_run_key_is_in_the_file(tmp_path):
    lock = tmp_path / "CPU-0.lock"
    node0, _ = try_shared_lock(lock, holder("train-001"), KEY)
    os.close(node0)  # the run ended; its key stays in the file
    job, _ = try_lock(lock, holder("train-002"))
    assert job is not None
    fd, who = try_shared_lock(lock, holder("train-003"), KEY)
    assert fd is None and "train-002" in who
    os.close(job)
    fd, who = try_shared_lock(lock, holder("train-004"), KEY)
    assert fd is not None, who
    os.close(fd)


def test_only_multi_node_runs_have_a_run_key():
    par = {"workers": 2, "local_workers": 1, "master_addr": "10.0.0.1", "master_port": 8118}
    assert run_key({"train": {"parallel": par}}) == KEY
    assert run_key({"train": {"parallel": dict(par, local_workers=0)}}) is None
    assert run_key({"train": {"parallel": dict(par, local_workers=2)}}) is None
    assert run_key({"train": {"parallel": dict(par, workers=1, local_workers=0)}}) is None
