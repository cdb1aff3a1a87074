"""train.cpu_isa_cap: the rule (jobs/train/cpu_isa.py) and, in a real 2-step CNN run, the convolution kernel oneDNN ran."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.train import cpu_isa
from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import read_all

SYNTH = [
    "data.source=synthetic",
    "data.synthetic_train=300",
    "data.synthetic_test=100",
    "train.val_limit=100",
    "train.warmup_steps=0",
    "train.epochs=1",
    "train.max_steps=2",
    "model.name=cnn",
    "device.target=CPU",
]


def test_auto_caps_the_cnn_on_cpu_only_and_never_overrides_the_user():
    assert cpu_isa.decide("auto", "cnn", "CPU", {})["applied"] == "AVX2"
    assert cpu_isa.decide("auto", "mlp", "CPU", {})["applied"] is None
    assert cpu_isa.decide("auto", "cnn", "Ascend", {})["applied"] is None
    assert cpu_isa.decide("none", "cnn", "CPU", {})["applied"] is None
    assert cpu_isa.decide("AVX512_CORE", "mlp", "CPU", {})["applied"] == "AVX512_CORE"
    told = cpu_isa.decide("AVX2", "cnn", "CPU", {cpu_isa.ENV: "ALL"})
    assert told["applied"] is None and "already set" in told["why"]
    env = {}
    cpu_isa.apply(cpu_isa.decide("auto", "cnn", "CPU", env), env)
    assert env == {cpu_isa.ENV: "AVX2"}


def conv_kernels(job_dir: Path):
    """The implementation names of the convolutions oneDNN executed, from its verbose lines in stdout.log."""
    text = (job_dir / "stdout.log").read_text(errors="replace") + (job_dir / "stderr.log").read_text(errors="replace")
    return [
        m.group(1) for m in re.finditer(r"onednn_verbose,(?:v\d+,)?(?:primitive,)?exec,cpu,convolution,([^,]+),", text)
    ]


@pytest.mark.requires_mindspore
def test_the_capped_cnn_runs_its_convolutions_with_gemm(tmp_path):
    proc = run_cli(
        "run",
        "train",
        "--sessions",
        tmp_path / "sessions",
        *[a for s in SYNTH for a in ("--set", s)],
        env={"ONEDNN_VERBOSE": "1"},
        timeout=300,
    )
    found = re.search(r"job \S+ in session \S+: (\S+)", proc.stderr)
    assert found and proc.returncode == 0, proc.stderr[-3000:]
    job_dir = Path(found.group(1))
    assert_events_valid(job_dir)
    started = [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "started"][0]
    assert started["cpu_isa_cap"]["setting"] == "auto" and started["cpu_isa_cap"]["applied"] == "AVX2"
    kernels = conv_kernels(job_dir)
    assert kernels, "no oneDNN convolution in the verbose output"
    assert all("gemm" in k for k in kernels) and not any("ncsp" in k or "ref" in k for k in kernels), sorted(
        set(kernels)
    )
