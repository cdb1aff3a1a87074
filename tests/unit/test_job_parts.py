"""The export and env jobs' parts that need no MindSpore: run state, loader verdicts, summary, inventory facts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import cli_env
from workbench.config import layers as config
from workbench.events.protocol import Evidence, read_all
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext
from workbench.system.atomic import read_json, write_json


def job_context(tmp_path: Path, kind: str, **sections) -> JobContext:
    """A real job folder (sessions/<sid>/jobs/<jid>) with the default config, `sections` merged in."""
    cfg = config.defaults()
    for section, values in sections.items():
        cfg[section].update(values)
    job_dir = tmp_path / "sessions" / "sid" / "jobs" / ("%s-001" % kind)
    job_dir.mkdir(parents=True)
    write_json(job_dir / "config.json", cfg)
    write_json(
        job_dir / "job.json",
        {
            "kind": kind,
            "jid": "%s-001" % kind,
            "device": {"requested": "CPU", "resolved": "CPU", "id": 0, "why": "asked for CPU"},
        },
    )
    return JobContext(job_dir)


def events_of(ctx: JobContext) -> list:
    """What the job wrote so far."""
    path = ctx.dir / "events.jsonl"
    return read_all(str(path)) if path.exists() else []


# ----- export ---------------------------------------------------------------------------------


def test_export_run_keeps_each_batch_size_once_in_order(tmp_path):
    from jobs.export.state import ExportRun

    run = ExportRun(job_context(tmp_path, "export", export={"batch_sizes": [32, 1, 32, 64, 1]}))
    assert run.batch_sizes == [32, 1, 64]
    assert run.target == "CPU" and run.device_id == 0


def test_loader_problem_names_a_hang_a_silent_death_and_an_unfinished_report():
    from jobs.export.fresh_process import loader_problem

    base = {"timeout_s": 120.0, "timed_out": False, "returncode": 0, "stderr_tail": "", "report": {"done": True}}
    assert loader_problem(base, "the loader") is None
    status, detail, hint = loader_problem(dict(base, timed_out=True, report=None), "the loader")
    assert status == Evidence.BLOCKED and "within 120 s" in detail and hint
    status, detail, _ = loader_problem(dict(base, report=None, returncode=1, stderr_tail="boom"), "the loader")
    assert status == Evidence.FAIL and "return code 1" in detail and "boom" in detail
    status, detail, _ = loader_problem(dict(base, report={"done": False, "steps": [{}]}, returncode=-11), "x")
    assert status == Evidence.FAIL and "killed by signal 11" in detail and "steps done: 1" in detail


def test_summary_files_each_check_under_its_format_and_batch():
    from jobs.export.summary import checks_by_format

    def ev(id_, status=Evidence.PASS, **extra):
        return dict({"id": id_, "status": status, "detail": id_}, **extra)

    grouped = checks_by_format(
        [
            ev("source"),
            ev("ckpt-reload", format="ckpt", batch_size=23, max_abs=0.0),
            ev("mindir-export", format="mindir", batch_size=None),
            ev("mindir-b1", Evidence.FAIL, format="mindir", batch_size=1),
            ev("lite-cpu", Evidence.NOT_RUN, format="lite"),
            ev("effective-config.ckpt"),
        ]
    )
    assert grouped["ckpt"]["reload"]["max_abs"] == 0.0
    assert grouped["mindir"]["export"]["id"] == "mindir-export"
    assert grouped["mindir"]["batches"]["1"]["status"] == Evidence.FAIL
    assert grouped["lite"]["cpu"]["status"] == Evidence.NOT_RUN
    assert sorted(grouped["other"]) == ["effective-config.ckpt", "source"]


def test_loader_program_runs_under_its_package_name(tmp_path):
    """`python -m jobs.export.loader` is the argv the export job starts; the lite probe needs no MindSpore."""
    out = tmp_path / "lite-probe.json"
    proc = subprocess.run(
        [sys.executable, "-m", "jobs.export.loader", "lite-probe", "--out", str(out)],
        cwd=str(tmp_path),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = read_json(out)
    assert report["done"] and report["what"] == "lite-probe" and report["ppid"] == os.getpid()
    assert isinstance(report["lite"]["imported"], bool)


# ----- env ------------------------------------------------------------------------------------


def test_inventory_gather_emits_nothing_and_has_every_summary_key_but_probes(tmp_path):
    from jobs.env import inventory
    from jobs.env.job import SUMMARY_KEYS
    from workbench.ascend import cann as cannmod

    ctx = job_context(tmp_path, "env", env={"root": str(tmp_path / "no-ascend")})
    root = ctx.cfg["env"]["root"]
    cann, set_env = cannmod.find_toolkit({}, root), cannmod.set_env_status({}, root)
    facts = inventory.gather(JobConfig(ctx.cfg), cann, set_env)
    assert events_of(ctx) == []
    assert sorted(facts) == sorted(k for k in SUMMARY_KEYS if k != "probes")
    assert facts["driver"]["npu_smi"]["note"] == "not run: env.only_probes is true"
    assert facts["packages"]["numpy"]["found"] and "sys_path" not in facts["python"]


def test_probe_without_a_result_says_hung_crashed_or_exited():
    from jobs.env.probes import ms_words, no_result

    run = {"timed_out": False, "signal": None, "returncode": 3}
    detail, _ = no_result({"run": dict(run, timed_out=True), "timeout_s": 5, "stderr": ""})
    assert detail.startswith("hung: no result within 5 s")
    detail, hint = no_result({"run": dict(run, signal="SIGSEGV", returncode=-11), "timeout_s": 5, "stderr": ""})
    assert detail.startswith("crashed: SIGSEGV") and "stderr.log" in hint
    detail, hint = no_result({"run": run, "timeout_s": 5, "stderr": ""})
    assert detail == "exited with status 3 without writing a result" and hint is None
    message = "cannot use device Ascend:0: RuntimeError: no device\nmore\nLoad dynamic library libge.so failed"
    assert ms_words(message) == "RuntimeError: no device | Load dynamic library libge.so failed"
