"""ProfiledWindow with real MindSpore on CPU, in a subprocess: both profiler APIs, stdout kept out.

The train job covers the API this MindSpore prefers (tests/jobs/test_train_profile.py); here the
window runs in a small program with each API forced, so the 2.4 path (mindspore.Profiler with
start/stop/analyse) is exercised on this 2.10 install too.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.cli import run_program
from tests.support.events import assert_events_valid
from workbench.events.protocol import read_all
from workbench.system.atomic import sha256_file

pytestmark = [pytest.mark.requires_mindspore, pytest.mark.slow]

PROGRAM = r"""
import json, statistics, sys, time
from pathlib import Path
from workbench.system.atomic import write_json
from workbench.config.layers import defaults
from workbench.jobkit.context import JobContext

job_dir, api = Path(sys.argv[1]), sys.argv[2]
job_dir.mkdir(parents=True)
write_json(job_dir / "config.json", defaults())
write_json(job_dir / "job.json", {"jid": "train-001", "kind": "train", "session": "s", "created": 0,
           "device": {"requested": "CPU", "resolved": "CPU", "id": 0, "why": "test"}, "argv": [], "command": []})
ctx = JobContext(job_dir)
from jobs.common import msdevice
from jobs.train.profiler import ProfiledWindow
msdevice.set_device("CPU", 0, "graph")
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn
net = nn.SequentialCell(nn.Flatten(), nn.Dense(784, 16), nn.ReLU(), nn.Dense(16, 10))
step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                           nn.SGD(net.trainable_params(), 0.01))
x = Tensor(np.ones((8, 1, 28, 28), np.float32)); y = Tensor(np.arange(8, dtype=np.int32))
steady = []
for _ in range(12):
    t0 = time.perf_counter(); step(x, y).asnumpy(); steady.append((time.perf_counter() - t0) * 1000)
print("before the window")
window = ProfiledWindow(ctx, 4, "CPU", api=api)
window.begin()
for n in range(10):
    window.step_begin()
    t0 = time.perf_counter(); step(x, y).asnumpy()
    if window.step_end((time.perf_counter() - t0) * 1000, 13 + n):
        break
window.close()
window.emit_artifacts()
ctx.events.close()
print("after the window")
print("SUMMARY " + json.dumps(window.summary(statistics.median(steady[2:]))))
"""


@pytest.mark.parametrize("api", ["mindspore.Profiler", "mindspore.profiler.profile"])
def test_window_with_each_api(tmp_path, api):
    job_dir = tmp_path / "sessions" / "s" / "jobs" / "train-001"
    proc = run_program(sys.executable, PROGRAM, job_dir, api, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Only the program's own lines reach its stdout: the profiler's progress went to the log.
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["before the window", "after the window"] and lines[2].startswith("SUMMARY ")
    assert len(lines) == 3, proc.stdout[:2000]
    log = job_dir / "artifacts" / "profile" / "profiler-stdout.log"
    assert "pars" in log.read_text().lower()
    summary = json.loads(lines[2][len("SUMMARY ") :])
    assert summary["api"] == api and summary["error"] is None
    assert summary["steps"] == 4 and summary["ops_per_step"] > 5
    assert {"MatMul", "BiasAdd", "ReLU", "SGD"} <= {t["type"] for t in summary["top_types"]}
    assert len(summary["top_ops"]) == 10 and summary["operators"] > 10
    assert summary["slowdown"] is not None and summary["slowdown"] > 0
    assert summary["per_step"]["usable"] is True
    assert_events_valid(job_dir)
    arts = [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "artifact"]
    traces = [a for a in arts if a["kind"] == "profile-chrome-trace"]
    assert traces and all("Perfetto" in a["opens_with"] for a in traces)
    for art in arts:
        assert art["sha256"] == sha256_file(job_dir / art["path"])
