"""Reattach: the screens rebuild from the event files, follow them, survive SIGKILL; sessions list and serve."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from screens.app import WorkbenchApp
from tests.support.cli import PROJECT_ROOT, cli_env
from tests.support.pilot import until
from workbench.cli.main import build_parser
from workbench.config.layers import defaults
from workbench.events.protocol import validate_file
from workbench.run.runner import JobRunner
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import write_json
from workbench.system.childproc import pid_running


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _detached_drill(run_cli, sessions, steps, rate):
    proc = run_cli(
        "run",
        "drill",
        "--detach",
        "--sessions",
        sessions,
        "--set",
        "drill.steps=%d" % steps,
        "--set",
        "drill.rate=%s" % rate,
    )
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(proc.stdout.strip())
    return job_dir, job_dir.parent.parent.name


async def test_reopened_app_has_the_whole_history_follows_on_and_two_apps_agree(run_cli, sessions):
    job_dir, sid = _detached_drill(run_cli, sessions, 400, 40)
    events = job_dir / "events.jsonl"
    store = SessionStore(sessions)
    try:
        first = WorkbenchApp(store, sid, defaults())
        async with first.run_test(size=(120, 36)) as pilot:
            await until(
                pilot, lambda: first.events_ingested >= 20, timeout_s=20, what="the first app to ingest 20 events"
            )
        assert job_status(job_dir).state == "running"  # closing the app left the job alone

        second, third = WorkbenchApp(store, sid, defaults()), WorkbenchApp(store, sid, defaults())
        async with second.run_test(size=(120, 36)) as pilot2, third.run_test(size=(120, 36)) as pilot3:
            rows = [app.views["session"].rows for app in (second, third)]
            on_disk = _lines(events)
            for pilot, row in ((pilot2, rows[0]), (pilot3, rows[1])):
                await until(
                    pilot,
                    lambda row=row: job_dir.name in row and row[job_dir.name].events >= on_disk,
                    timeout_s=20,
                    what="the reopened app to replay the %d events written so far" % on_disk,
                )
            seen = rows[0][job_dir.name].events
            await until(
                pilot2, lambda: rows[0][job_dir.name].events >= seen + 20, timeout_s=20, what="new events to arrive"
            )
            assert job_status(job_dir).state == "running"
            await until(
                pilot2,
                lambda: all(r[job_dir.name].state == "ok" for r in rows),
                timeout_s=30,
                what="the job to end ok in both apps",
            )
            total = _lines(events)
            await until(
                pilot3,
                lambda: all(r[job_dir.name].events == total for r in rows),
                timeout_s=20,
                what="both apps to hold every event",
            )
        assert total == 1 + 400 + 2
        assert validate_file(str(events)) == []  # seq contiguous from 0, every line valid
    finally:
        JobRunner.cancel(job_dir)
        JobRunner.wait(job_dir, timeout_s=30)


TMUX_CONF = "set -g default-size 120x36\nset -g status off\n"


def _tmux(sock: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # A private server (-L) with a fixed window size, whatever terminal the tests run from.
    conf = Path("/tmp/%s.conf" % sock)
    if not conf.exists():
        conf.write_text(TMUX_CONF)
    return subprocess.run(
        ["tmux", "-L", sock, "-f", str(conf)] + list(args), capture_output=True, text=True, timeout=30, check=check
    )


def _children(pid: int):
    try:
        return [int(c) for c in Path("/proc/%d/task/%d/children" % (pid, pid)).read_text().split()]
    except OSError:
        return []


def _gone(pid: int) -> bool:
    return not pid_running(pid)


def test_sigkill_of_the_attached_tui_does_not_touch_the_job(run_cli, sessions, wait_for):
    # 30 s of drill: the TUI must be up and killed while the job still runs, even on a loaded machine.
    job_dir, sid = _detached_drill(run_cli, sessions, 1200, 40)
    sock = "wb-test-%d" % os.getpid()
    env = cli_env({"TEXTUAL_ANIMATIONS": "none"})
    # COLUMNS/LINES exported by the pane's shell would override the terminal's real size (shutil reads
    # them first). The shell stays after the TUI dies, so that its exit status can be read.
    command = (
        "cd %s && env -u COLUMNS -u LINES PYTHONPATH=%s %s -m workbench --sessions %s attach %s; echo TUI-EXITED $?; sleep 60"
        % (
            shlex.quote(str(PROJECT_ROOT)),
            shlex.quote(env["PYTHONPATH"]),
            shlex.quote(sys.executable),
            shlex.quote(str(sessions)),
            sid,
        )
    )
    capture = lambda: _tmux(sock, "capture-pane", "-p", "-t", "tui", check=False).stdout  # noqa: E731

    last = {"screen": ""}

    def drawn(needle: str):
        screen = last["screen"] = capture()
        assert "TUI-EXITED" not in screen, "the TUI ended on its own:\n" + screen
        return needle in screen

    try:
        _tmux(sock, "new-session", "-d", "-x", "120", "-y", "36", "-s", "tui", command)
        shell = int(_tmux(sock, "list-panes", "-t", "tui", "-F", "#{pane_pid}").stdout.split()[0])
        try:
            wait_for(lambda: drawn("6 Session"), 60, what="the TUI to draw its footer")
        except AssertionError as exc:
            raise AssertionError("%s; the pane shows:\n%s" % (exc, last["screen"]))
        _tmux(sock, "send-keys", "-t", "tui", "6")
        wait_for(lambda: drawn(job_dir.name), 30, what="the Session screen to list %s" % job_dir.name)
        (tui,) = _children(shell)
        assert "workbench" in Path("/proc/%d/cmdline" % tui).read_bytes().decode(errors="replace")
        assert job_status(job_dir).state == "running", "the job ended before the TUI could be killed"
        written_before = _lines(job_dir / "events.jsonl")
        os.kill(tui, signal.SIGKILL)
        wait_for(lambda: _gone(tui), 10, what="the TUI to die")
        wait_for(lambda: "TUI-EXITED 137" in capture(), 10, what="the shell to report SIGKILL")
        assert job_status(job_dir).state == "running"
        wait_for(lambda: _lines(job_dir / "events.jsonl") > written_before, 10, what="the job to keep writing")
    finally:
        _tmux(sock, "kill-server", check=False)
        Path("/tmp/%s.conf" % sock).unlink()
    assert JobRunner.wait(job_dir, timeout_s=90)
    assert job_status(job_dir).state == "ok"
    assert validate_file(str(job_dir / "events.jsonl")) == []
    assert _lines(job_dir / "events.jsonl") == 1 + 1200 + 2


def _finished_session(store: SessionStore) -> str:
    sid = store.create()
    job = store.new_job_dir(sid, "drill")
    write_json(job / "job.json", {"jid": job.name, "kind": "drill", "created": time.time()})
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0})
    return sid


def test_latest_with_running_picks_the_newest_session_that_has_a_running_job(sessions, wait_for):
    seconds = iter(range(1_700_000_000, 1_700_000_100, 10))  # session ids have one-second resolution
    store = SessionStore(sessions, clock=lambda: float(next(seconds)))
    _finished_session(store)
    busy = store.create()
    cfg = defaults()
    cfg["drill"].update(steps=3000, rate=100)
    job = JobRunner(store).start(busy, "drill", cfg)
    try:
        newest = _finished_session(store)
        assert store.sessions()[-1] == newest
        wait_for(lambda: (job / "pids.json").exists(), 15, what="the job to start")
        assert store.latest_with_running() == busy
    finally:
        JobRunner.cancel(job)
        JobRunner.wait(job, timeout_s=30)
    assert store.latest_with_running() is None


def test_sessions_lists_the_size_on_disk(run_cli, sessions):
    ok = run_cli("run", "drill", "--sessions", sessions, "--set", "drill.steps=5", "--set", "drill.rate=500")
    assert ok.returncode == 0, ok.stderr
    listing = run_cli("sessions", "--sessions", sessions, "--json")
    (row,) = json.loads(listing.stdout)
    walked = sum(p.lstat().st_size for p in (sessions / row["id"]).rglob("*") if p.is_file())
    assert row["bytes"] == walked > 0
    plain = run_cli("sessions", "--sessions", sessions)
    first = plain.stdout.splitlines()[0]
    assert first.startswith(row["id"]) and ("%.1f KB" % (walked / 1024.0) in first or "%d B" % walked in first)


def test_serve_binds_to_loopback_by_default(run_cli, sessions, wait_for):
    from textual_serve.server import Server  # noqa: F401  (the browser view's dependency is installed)

    assert build_parser().parse_args(["serve"]).host == "127.0.0.1"
    assert build_parser().parse_args(["serve", "--host", "0.0.0.0"]).host == "0.0.0.0"
    helped = run_cli("serve", "--help")
    assert helped.returncode == 0 and "--host" in helped.stdout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "workbench", "--sessions", str(sessions), "serve", "--port", str(port)],
        cwd=str(PROJECT_ROOT),
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        page = wait_for(lambda: _get("http://127.0.0.1:%d/" % port), 30, what="the server to answer")
        assert "ms-workbench" in page
        listeners = _listening(port)
        assert listeners and all(addr == "127.0.0.1" for addr in listeners), listeners
    finally:
        server.terminate()
        server.wait(timeout=10)


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.read().decode("utf-8", "replace")
    except OSError:
        return None


def _listening(port: int):
    """Local IPv4/IPv6 addresses listening on `port`, from /proc/net/tcp{,6}."""
    found = []
    for name, width in (("tcp", 8), ("tcp6", 32)):
        try:
            lines = Path("/proc/net/%s" % name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                if width == 8:
                    found.append(socket.inet_ntoa(bytes.fromhex(addr)[::-1]))
                else:
                    raw = b"".join(bytes.fromhex(addr[i : i + 8])[::-1] for i in range(0, 32, 8))
                    found.append(socket.inet_ntop(socket.AF_INET6, raw))
    return found
