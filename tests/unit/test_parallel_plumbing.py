"""Data-parallel plumbing without MindSpore: msrun's command line, PATH, port and layout checks,
sharding, concurrent event writers and the launcher's failure reports."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jobs.train import msrun_rank
from jobs.train.dataparallel import rank_env, rank_order, usable_samples
from workbench.config.layers import defaults
from workbench.events.protocol import read_all, validate_file
from workbench.jobkit.context import JobFailed
from workbench.run.msrun import LOG_DIR, RANK_LAUNCHER, ParallelError, msrun_argv, parallel_env, plan
from workbench.run.runner import device_targets, effective_config, is_data_parallel, job_argv

VENV_PYTHON = Path(sys.executable)  # the test interpreter: MindSpore installed msrun next to it


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cfg_with(**par) -> dict:
    """Defaults with train.parallel overridden."""
    cfg = defaults()
    cfg["train"]["parallel"].update(par)
    return cfg


@pytest.fixture
def msrun_python(tmp_path) -> Path:
    """An interpreter path whose folder holds an executable msrun (the venv's, when it has one)."""
    if (VENV_PYTHON.parent / "msrun").is_file():
        return VENV_PYTHON
    pytest.skip("msrun is not installed next to %s" % VENV_PYTHON)


def test_msrun_argv_is_msrun_with_this_nodes_ranks_and_the_launcher(tmp_path, msrun_python):
    port = free_port()
    argv = msrun_argv(cfg_with(workers=2, master_port=port), str(msrun_python), tmp_path)
    assert argv == [
        str(msrun_python.parent / "msrun"),
        "--worker_num=2",
        "--local_worker_num=2",
        "--master_addr=127.0.0.1",
        "--master_port=%d" % port,
        "--node_rank=0",
        "--log_dir=%s" % (tmp_path / LOG_DIR),
        "--join=True",
        str(RANK_LAUNCHER),
        "--job-dir",
        str(tmp_path),
    ]
    assert RANK_LAUNCHER.is_file()


def test_msrun_argv_for_one_node_of_several_skips_the_port_check(tmp_path, msrun_python):
    # 192.0.2.1 (TEST-NET-1) is nobody's address here: the scheduler runs on another node.
    argv = msrun_argv(
        cfg_with(workers=4, local_workers=2, node_rank=1, master_addr="192.0.2.1", master_port=8118),
        str(msrun_python),
        tmp_path,
    )
    assert "--worker_num=4" in argv and "--local_worker_num=2" in argv and "--node_rank=1" in argv
    assert "--master_addr=192.0.2.1" in argv


def test_runner_uses_msrun_only_for_parallel_training(tmp_path, msrun_python):
    python = str(msrun_python)
    assert not is_data_parallel("train", cfg_with(workers=1)) and not is_data_parallel("env", cfg_with(workers=2))
    assert job_argv("train", python, tmp_path)[:3] == [python, "-m", "jobs.train"]
    msrun = plan(cfg_with(workers=2, master_port=free_port()), python, tmp_path)
    assert is_data_parallel("train", cfg_with(workers=2))
    assert job_argv("train", python, tmp_path, msrun)[0].endswith("msrun") and msrun.device_ids == [0, 1]
    assert msrun.env["PATH"].split(os.pathsep)[0] == str(tmp_path / "bin")


def test_parallel_does_not_import_the_runner():
    # One way: the runner asks parallel for its plan; parallel knows nothing of the runner.
    code = "import sys, workbench.run.msrun; print('workbench.run.runner' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_busy_master_port_fails_naming_it(tmp_path, msrun_python):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        with pytest.raises(ParallelError) as err:
            msrun_argv(cfg_with(workers=2, master_port=port), str(msrun_python), tmp_path)
    assert "train.parallel.master_port %d is already in use on 127.0.0.1" % port in str(err.value)


def test_missing_msrun_names_where_it_looked(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    python = bindir / "python3.9"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    with pytest.raises(ParallelError) as err:
        msrun_argv(cfg_with(workers=2, master_port=free_port()), str(python), tmp_path)
    text = str(err.value)
    assert str(bindir / "msrun") in text and "'python'" in text and "MindSpore" in text


@pytest.mark.parametrize(
    "par, words",
    [
        ({"workers": 2, "local_workers": 3}, "train.parallel.local_workers is 3 but train.parallel.workers is 2"),
        ({"workers": 3, "local_workers": 2}, "not a multiple of train.parallel.local_workers 2"),
        ({"workers": 4, "local_workers": 2, "node_rank": 2}, "train.parallel.node_rank is 2"),
        ({"workers": 2, "node_rank": 1}, "train.parallel.node_rank is 1"),
        ({"workers": 2, "master_addr": "192.0.2.1"}, "is not an address of this machine"),
        ({"workers": 2, "master_port": 80}, "train.parallel.master_port is 80"),
    ],
)
def test_inconsistent_layouts_fail_naming_the_key(tmp_path, msrun_python, par, words):
    with pytest.raises(ParallelError) as err:
        msrun_argv(cfg_with(**par), str(msrun_python), tmp_path)
    assert words in str(err.value)


def test_parallel_path_runs_the_configured_interpreter_as_python(tmp_path):
    env = parallel_env(sys.executable, tmp_path, base_path="/usr/bin:/bin")
    first = env["PATH"].split(os.pathsep)[0]
    assert first == str(tmp_path / "bin") and env["PATH"].endswith("/usr/bin:/bin")
    out = subprocess.run(
        ["python", "-c", "import sys; print(sys.executable); import numpy"],
        env=dict(os.environ, PATH=env["PATH"]),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == sys.executable  # same interpreter, same venv (numpy imported)


def with_device(cfg: dict, target: str) -> dict:
    """The effective config of `cfg` with device.target set (an explicit target: no detection)."""
    cfg["device"]["target"] = target
    return effective_config(cfg)


def test_parallel_ascend_training_locks_one_device_per_local_rank():
    cfg = with_device(cfg_with(workers=4, local_workers=2, node_rank=0), "Ascend")
    assert device_targets("train", cfg, [0, 1]) == [("Ascend", 0), ("Ascend", 1)]
    cpu = with_device(cfg_with(workers=4, local_workers=2, node_rank=0), "CPU")
    assert device_targets("train", cpu, [0, 1]) == [("CPU", 0)]
    assert device_targets("train", with_device(cfg_with(workers=1), "Ascend")) == [("Ascend", 0)]


@pytest.mark.parametrize(
    "n, batch, size", [(10, 2, 2), (11, 2, 2), (1800, 32, 3), (7, 1, 7), (54000, 32, 8), (301, 32, 2), (6430, 32, 2)]
)
def test_the_ranks_together_see_exactly_the_single_process_batches(n, batch, size):
    order = np.random.default_rng(1).permutation(n)  # what one process with batch * size would draw
    parts = [rank_order(order, batch, rank, size) for rank in range(size)]
    assert {len(p) for p in parts} == {n // size}, "every rank has as many samples"
    usable = order[: n - n % size]
    steps = -(-len(parts[0]) // batch)
    for k in range(steps):  # global batch k = the union of the ranks' batch k, each an equal part
        sizes = {len(p[k * batch : (k + 1) * batch]) for p in parts}
        assert len(sizes) == 1
        joined = np.concatenate([p[k * batch : (k + 1) * batch] for p in parts])
        assert list(joined) == list(usable[k * batch * size : k * batch * size + len(joined)])
    assert sorted(np.concatenate(parts)) == sorted(usable), "disjoint, and only n % size left out"


def test_rank_order_errors():
    with pytest.raises(ValueError, match="rank 2 is outside 0..1"):
        rank_order(np.arange(10), 2, 2, 2)
    with pytest.raises(ValueError, match="3 training samples cannot give each of 4 ranks one sample"):
        usable_samples(3, 4)


def test_rank_env_requires_msrun_worker():
    cfg = cfg_with(workers=2)
    assert rank_env(cfg_with(workers=1), {}) is None
    info = rank_env(cfg, {"MS_ROLE": "MS_WORKER", "RANK_ID": "1", "DEVICE_ID": "1"})
    assert info == {"rank": 1, "size": 2, "local_rank": 1, "node_rank": 0}
    with pytest.raises(JobFailed, match="not started by msrun"):
        rank_env(cfg, {"RANK_ID": "1"})


WRITER = """
import sys
from workbench.events.protocol import EventWriter
rank, n = int(sys.argv[2]), int(sys.argv[3])
w = EventWriter(sys.argv[1], extra={"rank": rank})
for i in range(n):
    w.emit("log", level="info", message="r%d-%d " % (rank, i) + "x" * 3000)
w.close()
"""


def test_ranks_appending_to_one_events_file_never_interleave_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(rank), "400"], env=env) for rank in range(4)
    ]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    assert validate_file(str(path)) == []
    events = read_all(str(path))
    assert len(events) == 1600
    assert {(e["rank"], e["message"].split(" ")[0]) for e in events} == {
        (r, "r%d-%d" % (r, i)) for r in range(4) for i in range(400)
    }


def _job_dir(tmp_path: Path) -> Path:
    job = tmp_path / "train-001"
    job.mkdir()
    # rank 1's own stream so far, then rank 0's
    lines = [
        {
            "v": 1,
            "seq": 0,
            "t": 1.0,
            "type": "started",
            "rank": 1,
            "kind": "train",
            "pid": 11,
            "python": "p",
            "argv": [],
            "version": "0",
            "device": {},
        },
        {
            "v": 1,
            "seq": 0,
            "t": 1.0,
            "type": "started",
            "rank": 0,
            "kind": "train",
            "pid": 10,
            "python": "p",
            "argv": [],
            "version": "0",
            "device": {},
        },
    ]
    (job / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return job


def test_first_rank_failure_is_reported_and_restated_by_later_ones(tmp_path):
    job = _job_dir(tmp_path)
    crash = msrun_rank.describe_exit(job, 1, 11, -11, 3.25)
    assert crash["error"]["message"] == "rank 1 (pid 11) died with SIGSEGV after 3.2 s"
    assert crash["error"]["signal"] == "SIGSEGV" and crash["status"] == "failed"
    msrun_rank.report(job, crash, by="launcher of rank 1")
    later = msrun_rank.describe_exit(job, 0, 10, 1, 4.0)
    assert "rank 0 (pid 10) exited with code 1" in later["error"]["message"]
    msrun_rank.report(job, later, by="launcher of rank 0")
    assert validate_file(str(job / "events.jsonl")) == []
    job_level = [e for e in read_all(str(job / "events.jsonl")) if "rank" not in e]
    assert [(e["seq"], e["type"]) for e in job_level] == [(0, "finished"), (1, "log"), (2, "finished")]
    assert job_level[-1]["error"]["message"] == "rank 1 (pid 11) died with SIGSEGV after 3.2 s"
    assert "rank 0 (pid 10) exited with code 1" in job_level[1]["message"]


def test_a_rank_that_failed_with_its_own_finished_event_is_reported_with_its_message(tmp_path):
    job = _job_dir(tmp_path)
    with open(job / "events.jsonl", "a") as fh:
        fh.write(
            json.dumps(
                {
                    "v": 1,
                    "seq": 1,
                    "t": 2.0,
                    "type": "finished",
                    "rank": 1,
                    "status": "failed",
                    "error": {
                        "type": "NonFiniteLoss",
                        "message": "non-finite loss at step 3",
                        "hint": "lower train.lr",
                    },
                }
            )
            + "\n"
        )
    out = msrun_rank.describe_exit(job, 1, 11, 1, 5.0)
    assert out["error"]["message"] == "rank 1 failed: non-finite loss at step 3"
    assert out["error"]["type"] == "NonFiniteLoss" and out["error"]["hint"] == "lower train.lr"
