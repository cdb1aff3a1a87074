"""The headless command line, run as a real program: exit codes, --json, sessions and watch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workbench.events.protocol import read_all
from workbench.system.atomic import read_json

FAST = ["--set", "drill.steps=4", "--set", "drill.rate=200"]


def job_dirs(root: Path):
    """Every job folder under a sessions root."""
    return sorted(Path(root).glob("*/jobs/*"))


def only_job(root: Path) -> Path:
    """The single job folder under a sessions root."""
    dirs = job_dirs(root)
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_run_ok_exits_0_and_json_stdout_is_the_events_file(run_cli, sessions):
    proc = run_cli("run", "drill", "--json", "--sessions", sessions, *FAST)
    assert proc.returncode == 0, proc.stderr
    job_dir = only_job(sessions)
    events_text = (job_dir / "events.jsonl").read_text(encoding="utf-8")
    assert proc.stdout == events_text
    assert [json.loads(line)["type"] for line in proc.stdout.splitlines()] == ["started"] + ["step"] * 4 + [
        "result",
        "finished",
    ]


def test_run_plain_output(run_cli, sessions):
    proc = run_cli("run", "drill", "--sessions", sessions, "--every", "2", *FAST)
    assert proc.returncode == 0
    job_dir = only_job(sessions)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("started drill pid ")
    assert [l for l in lines if l.startswith("epoch 1 step")] == [
        "epoch 1 step 2 loss 0.5 (5.00 ms)",
        "epoch 1 step 4 loss 0.25 (5.00 ms)",
    ]
    assert lines[-1] == "drill-001: ok (%s)" % job_dir
    assert "job drill-001 in session %s" % job_dir.parent.parent.name in proc.stderr


def test_run_crash_exits_1(run_cli, sessions):
    proc = run_cli(
        "run",
        "drill",
        "--json",
        "--sessions",
        sessions,
        *FAST,
        "--set",
        "drill.crash_signal=SIGKILL",
        "--set",
        "drill.crash_after=1",
    )
    assert proc.returncode == 1
    assert proc.stdout == (only_job(sessions) / "events.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "item, needles",
    [
        ("drill.stepz=3", ["--set drill.stepz=3", "unknown key 'drill.stepz'", "value 3"]),
        ("drill.steps=-1", ["--set drill.steps=-1", "'drill.steps'", "value -1", ">= 0"]),
        ("drill.rate=fast", ["--set drill.rate=fast", "'drill.rate'", "value 'fast'", "float"]),
        ("device.target=TPU", ["--set device.target=TPU", "'device.target'", "'TPU'", "one of auto, CPU"]),
    ],
)
def test_config_error_exits_2_and_starts_nothing(run_cli, sessions, item, needles):
    proc = run_cli("run", "drill", "--sessions", sessions, "--set", item)
    assert proc.returncode == 2
    assert proc.stderr.startswith("config error: ")
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)
    assert proc.stdout == ""
    assert not sessions.exists() or job_dirs(sessions) == []


def test_config_file_error_names_the_file(run_cli, sessions, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("limits:\n  grace_s: soon\n", encoding="utf-8")
    proc = run_cli("run", "drill", "--sessions", sessions, "--config", bad)
    assert proc.returncode == 2
    assert "%s: key 'limits.grace_s' has value 'soon'" % bad in proc.stderr
    assert not sessions.exists() or job_dirs(sessions) == []


def test_user_file_is_read_and_layered(run_cli, sessions, tmp_path):
    home = tmp_path / "home"
    user_file = home / ".config" / "ms-workbench" / "config.yaml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("drill:\n  steps: -2\n", encoding="utf-8")
    proc = run_cli("run", "drill", "--sessions", sessions, env={"HOME": str(home)})
    assert proc.returncode == 2 and str(user_file) in proc.stderr and "'drill.steps'" in proc.stderr

    user_file.write_text(yaml.safe_dump({"drill": {"steps": 9, "rate": 150, "crash_after": 7}}), encoding="utf-8")
    project = tmp_path / "project.yaml"
    project.write_text(yaml.safe_dump({"drill": {"steps": 6, "rate": 300}}), encoding="utf-8")
    proc = run_cli(
        "run", "drill", "--sessions", sessions, "--config", project, "--set", "drill.steps=3", env={"HOME": str(home)}
    )
    assert proc.returncode == 0, proc.stderr
    job_dir = only_job(sessions)
    drill = read_json(job_dir / "config.json")["drill"]
    assert (drill["steps"], drill["rate"], drill["crash_after"]) == (3, 300, 7)
    assert yaml.safe_load((job_dir / "config.yaml").read_text())["drill"] == drill
    assert [e["type"] for e in read_all(str(job_dir / "events.jsonl"))].count("step") == 3


def test_bad_interpreter_exits_2_without_a_job(run_cli, sessions, tmp_path):
    proc = run_cli("run", "drill", "--sessions", sessions, "--python", tmp_path / "no-such-python")
    assert proc.returncode == 2
    assert "no-such-python" in proc.stderr and "'python'" in proc.stderr
    assert job_dirs(sessions) == []


def test_unknown_job_kind_exits_2(run_cli, sessions):
    proc = run_cli("run", "dril", "--sessions", sessions)
    assert proc.returncode == 2 and "invalid choice: 'dril'" in proc.stderr
    assert not sessions.exists()


def test_sessions_json_lists_jobs_with_status(run_cli, sessions):
    first = run_cli("run", "drill", "--detach", "--sessions", sessions, *FAST)
    sid = Path(first.stdout.strip()).parent.parent.name
    ok = run_cli("run", "drill", "--sessions", sessions, "--session", sid, *FAST)
    assert ok.returncode == 0
    bad = run_cli("run", "drill", "--sessions", sessions, "--session", sid, *FAST, "--set", "drill.no_finished=true")
    assert bad.returncode == 1
    other = run_cli("run", "drill", "--sessions", sessions, *FAST, "--set", "drill.crash_signal=SIGSEGV")
    assert other.returncode == 1
    # Let the detached first job end too, through the command line itself.
    assert run_cli("watch", "%s/drill-001" % sid, "--sessions", sessions).returncode == 0

    proc = run_cli("sessions", "--json", "--sessions", sessions)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows) and len(rows) == 2
    by_id = {r["id"]: r for r in rows}
    assert [(j["jid"], j["status"]) for j in by_id[sid]["jobs"]] == [
        ("drill-001", "ok"),
        ("drill-002", "ok"),
        ("drill-003", "failed"),
    ]
    assert by_id[sid]["jobs"][2]["reason"].startswith("exited 0 without a finished event")
    other_row = [r for r in rows if r["id"] != sid][0]
    assert [(j["jid"], j["status"]) for j in other_row["jobs"]] == [("drill-001", "crashed")]
    assert other_row["jobs"][0]["reason"].startswith("SIGSEGV after")
    assert all(r["bytes"] > 0 and Path(r["dir"]).is_dir() for r in rows)

    plain = run_cli("sessions", "--sessions", sessions)
    assert "drill-003" in plain.stdout and "failed: exited 0 without a finished event" in plain.stdout


def test_sessions_on_an_empty_root(run_cli, sessions):
    proc = run_cli("sessions", "--json", "--sessions", sessions)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []


def test_watch_replays_a_finished_job(run_cli, sessions):
    assert run_cli("run", "drill", "--sessions", sessions, *FAST).returncode == 0
    job_dir = only_job(sessions)
    ref = "%s/%s" % (job_dir.parent.parent.name, job_dir.name)

    proc = run_cli("watch", ref, "--sessions", sessions, timeout=20)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("started drill pid ")
    assert "finished ok" in lines and lines[-1] == "drill-001: ok (%s)" % job_dir
    assert "watching %s" % job_dir in proc.stderr

    as_json = run_cli("watch", ref, "--json", "--sessions", sessions, timeout=20)
    assert as_json.returncode == 0
    assert as_json.stdout == (job_dir / "events.jsonl").read_text(encoding="utf-8")

    # With no reference, watch picks the latest session's job.
    assert run_cli("watch", "--json", "--sessions", sessions, timeout=20).stdout == as_json.stdout


def test_watch_of_a_crashed_job_exits_1(run_cli, sessions):
    run_cli("run", "drill", "--sessions", sessions, *FAST, "--set", "drill.crash_signal=SIGKILL")
    job_dir = only_job(sessions)
    proc = run_cli("watch", "%s/%s" % (job_dir.parent.parent.name, job_dir.name), "--sessions", sessions)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1].startswith("drill-001: crashed: SIGKILL after ")


def test_watch_unknown_job_exits_2(run_cli, sessions):
    assert run_cli("run", "drill", "--sessions", sessions, *FAST).returncode == 0
    sid = only_job(sessions).parent.parent.name
    proc = run_cli("watch", "%s/drill-009" % sid, "--sessions", sessions)
    assert proc.returncode == 2 and "no job 'drill-009' in session %s" % sid in proc.stderr
