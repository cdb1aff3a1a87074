"""Issue 18.10: Ctrl+C on `run` (once, twice, on train), `serve` off loopback, prune past a symlink."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import PROJECT_ROOT, cli_argv, cli_env
from tests.support.drills import sets
from tests.support.prune_sessions import aged_session
from workbench.session.prune import prune
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json

SYNTH = [
    "data.source=synthetic",
    "data.synthetic_train=2000",
    "data.synthetic_test=300",
    "train.val_limit=200",
    "train.warmup_steps=2",
]


def start_cli(tmp_path: Path, *args) -> tuple:
    """Start the CLI with stdout/stderr to files; return (process, stdout path, stderr path)."""
    out, err = tmp_path / "cli.out", tmp_path / "cli.err"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        proc = subprocess.Popen(
            cli_argv(*args), cwd=str(PROJECT_ROOT), env=cli_env(), stdin=subprocess.DEVNULL, stdout=fo, stderr=fe
        )
    return proc, out, err


def the_job(sessions: Path) -> Path:
    """The only job folder once it has pids.json."""
    found = list(sessions.glob("*/jobs/*/pids.json"))
    return found[0].parent if found else None


def test_second_ctrl_c_is_one_clean_line_and_the_job_still_stops(sessions, tmp_path, wait_for):
    proc, out, err = start_cli(
        tmp_path,
        "run",
        "drill",
        "--sessions",
        sessions,
        *sets("drill.steps=1", "drill.hang=true", "drill.ignore_term=true", "limits.grace_s=3"),
    )
    try:
        job_dir = wait_for(lambda: the_job(sessions), 15, what="the job to start")
        wait_for(lambda: (job_dir / "child.pid").exists(), 15, what="the drill to hang")
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: "cancelling" in err.read_text(), 10, what="cancelling ...")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 1
    finally:
        proc.kill()
        proc.wait()
    text = err.read_text()
    assert "Traceback" not in text, text
    after = text.split("cancelling", 1)[1].strip().splitlines()[1:]
    assert len(after) == 1 and after[0].startswith("stopped waiting: the supervisor is stopping drill-001"), text
    wait_for(lambda: (job_dir / "exit.json").exists(), 10, what="the supervisor to stop the job")
    assert job_status(job_dir).state == "cancelled"


@pytest.mark.requires_mindspore
def test_ctrl_c_on_train_prints_status_folder_and_a_resume_command_that_works(sessions, tmp_path, wait_for, run_cli):
    proc, out, err = start_cli(
        tmp_path, "run", "train", "--sessions", sessions, *sets(*SYNTH, "train.epochs=2", "train.mode=pynative")
    )
    try:
        job_dir = wait_for(lambda: the_job(sessions), 30, what="the job to start")
        events = job_dir / "events.jsonl"
        wait_for(lambda: events.exists() and '"type":"steps"' in events.read_text(), 120, what="a step")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=90) == 1
    finally:
        proc.kill()
        proc.wait()
    lines = out.read_text().splitlines()
    assert "%s: cancelled: stopped on request" % job_dir.name in out.read_text() and str(job_dir) in out.read_text()
    resume = [ln for ln in lines if ln.startswith("state saved; resume with: ")]
    assert len(resume) == 1, lines
    command = shlex.split(resume[0].split(": ", 1)[1])
    assert command[:3] == ["ms-workbench", "run", "train"] and "train.resume_from=%s" % job_dir in command
    done = run_cli(*command[1:], timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    resumed = max(sessions.glob("*/jobs/train-*"), key=lambda p: p.name)
    assert resumed != job_dir and job_status(resumed).state == "ok"
    assert read_json(resumed / "config.json")["train"]["resume_from"] == str(job_dir)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("host, warned", [("0.0.0.0", True), ("127.0.0.1", False)])
def test_serve_off_loopback_warns_there_is_no_authentication(tmp_path, wait_for, host, warned):
    port = _free_port()
    proc, out, err = start_cli(tmp_path, "serve", "--host", host, "--port", port)
    try:
        wait_for(lambda: _listening(port), 30, what="the server to listen")
    finally:
        proc.terminate()
        proc.wait(10)
    text = err.read_text()
    assert ("no authentication" in text) is warned, text


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_prune_skips_a_symlinked_session_and_prints_the_summary(tmp_path):
    store = SessionStore(tmp_path / "root")
    old_a, old_b = aged_session(store, 10), aged_session(store, 11)
    elsewhere = SessionStore(tmp_path / "elsewhere")
    target = aged_session(elsewhere, 12)
    link = "20200101-000000-beef"
    os.symlink(str(elsewhere.root / target), str(store.root / link))
    out = io.StringIO()
    assert prune(store, 7, assume_yes=True, stdout=out) == 1
    text = out.getvalue()
    assert "skipped %s: a symbolic link to %s" % (link, elsewhere.root / target) in text, text
    assert "deleted 2 sessions" in text and "skipped 1" in text
    assert store.sessions() == [link] and (elsewhere.root / target / "session.json").is_file()
    assert old_a not in store.sessions() and old_b not in store.sessions()


def test_a_closed_stdout_ends_the_follower_quietly_and_the_job_goes_on(tmp_path):
    """`run … --json | head -1`: no traceback; the job is not the follower's child and ends on its own."""
    import subprocess as sp

    from tests.support.cli import cli_argv, cli_env
    from workbench.run.runner import JobRunner

    sessions = tmp_path / "sessions"
    follower = sp.Popen(
        cli_argv(
            "run", "drill", "--sessions", sessions, "--json", "--set", "drill.steps=400", "--set", "drill.rate=100"
        ),
        stdout=sp.PIPE,
        stderr=sp.PIPE,
        env=cli_env(),
    )
    first = follower.stdout.readline()
    assert b'"type":"started"' in first
    follower.stdout.close()  # what `head -1` does after its line
    err = follower.stderr.read().decode()
    assert follower.wait(timeout=60) == 1
    assert "Traceback" not in err and "stdout was closed" in err
    (job,) = sessions.glob("*/jobs/drill-001")
    assert JobRunner.wait(job, timeout_s=60)
    assert json.loads((job / "exit.json").read_text())["returncode"] == 0


@pytest.mark.parametrize("while_", ["cancelling", "printing the status"])
def test_a_second_ctrl_c_at_any_moment_ends_without_a_traceback(sessions, tmp_path, wait_for, while_):
    """The job ends at once on SIGTERM; the second Ctrl+C lands while it is cancelled, or as the status prints."""
    proc, out, err = start_cli(
        tmp_path, "run", "drill", "--sessions", sessions, *sets("drill.steps=100000", "drill.rate=200")
    )
    try:
        job_dir = wait_for(lambda: the_job(sessions) if proc.poll() is None else None, 15, what="the job")
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: "cancelling" in err.read_text(), 10, what="cancelling ...")
        if while_ == "printing the status":
            wait_for(lambda: (job_dir / "exit.json").exists(), 10, what="the job to end")
        for _ in range(3):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    text = err.read_text() + out.read_text()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert code == 1, text
    assert ("stopped waiting" in text and "drill-001" in text) or "cancelled: stopped on request" in text, text
    wait_for(lambda: (job_dir / "exit.json").exists(), 15, what="the supervisor to stop the job")
    assert job_status(job_dir).state == "cancelled"


@pytest.mark.parametrize("pipe", ["2>&1 | cat", "| cat", "2>&1 | tee /dev/null"])
def test_ctrl_c_on_a_piped_run_stops_the_job_it_started(tmp_path, wait_for, pipe):
    """The terminal's SIGINT reaches the reader of the pipe too: the job is cancelled all the same."""
    sessions = tmp_path / "sessions"
    argv = " ".join(
        shlex.quote(a)
        for a in cli_argv("run", "drill", "--sessions", sessions, *sets("drill.steps=100000", "drill.rate=200"))
    )
    log = tmp_path / "shell.log"
    with open(str(log), "wb") as fh:
        shell = subprocess.Popen(
            ["sh", "-c", "%s %s" % (argv, pipe)],
            cwd=str(PROJECT_ROOT),
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=fh,
            start_new_session=True,  # one process group, as a terminal's foreground job
        )
    try:
        job_dir = wait_for(lambda: the_job(sessions), 15, what="the job to start")
        events = job_dir / "events.jsonl"
        wait_for(lambda: events.exists() and events.stat().st_size > 2000, 15, what="some steps")
        os.killpg(shell.pid, signal.SIGINT)
        wait_for(lambda: (job_dir / "exit.json").exists(), 30, what="the job to be cancelled")
        shell.wait(timeout=30)
    finally:
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert job_status(job_dir).state == "cancelled", job_status(job_dir).label()
    text = log.read_text()
    assert "Traceback" not in text and "stdout was closed" not in text, text
