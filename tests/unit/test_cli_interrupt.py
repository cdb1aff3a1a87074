"""Ctrl+C on a foreground run: a second one at any moment, or a dead pipe, never ends in a traceback."""

from __future__ import annotations

import io
import os
import signal

import pytest

from workbench.cli import main as cli
from workbench.run.runner import JobRunner
from workbench.system.atomic import write_json


@pytest.fixture
def cancelled_job(tmp_path, monkeypatch):
    job = tmp_path / "drill-001"
    job.mkdir()
    write_json(job / "job.json", {"jid": "drill-001", "created": 1.0})
    write_json(job / "exit.json", {"returncode": -15, "cancelled": True, "duration_s": 0.3})
    (job / "events.jsonl").write_text("")
    cancels = []
    monkeypatch.setattr(JobRunner, "cancel", staticmethod(lambda job_dir: cancels.append(job_dir)))
    previous = signal.getsignal(signal.SIGINT)
    yield job, cancels
    signal.signal(signal.SIGINT, previous)


def test_a_second_ctrl_c_while_the_status_is_printed_is_ignored(cancelled_job, monkeypatch, capsys):
    job, cancels = cancelled_job

    def ctrl_c_now(job_dir, sid):
        os.kill(os.getpid(), signal.SIGINT)  # the person presses Ctrl+C again just as the status appears
        return None

    monkeypatch.setattr(cli, "resume_command", ctrl_c_now)
    assert cli._interrupted(job, "SID") == 1
    out = capsys.readouterr()
    assert cancels == [job] and "drill-001: cancelled: stopped on request after 0.3 s" in out.out
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # stays ignored through interpreter exit


class Broken(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self):
        return os.open(os.devnull, os.O_WRONLY)


def test_the_job_is_cancelled_even_when_every_output_is_a_dead_pipe(cancelled_job, monkeypatch):
    job, cancels = cancelled_job
    monkeypatch.setattr(cli.sys, "stdout", Broken())
    monkeypatch.setattr(cli.sys, "stderr", Broken())
    assert cli._interrupted(job, "SID") == 1
    assert cancels == [job]


def test_a_command_interrupted_outside_a_run_exits_130_with_one_line(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_sessions", interrupted)
    previous = signal.getsignal(signal.SIGINT)
    try:
        assert cli.main(["sessions"]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err.strip() == "interrupted; nothing more was done"
