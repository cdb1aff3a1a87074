"""The TUI in a real terminal (tmux), driven the way a person does it over SSH.

Type into the epochs field, press Escape, start a training with the screen's key and see it run; quit
leaving it running; `attach` at 80×24 lands on the Training screen with the run's settings in the form;
the palette offers the overfit, resume and precision checks and compare, and one Escape closes it;
there the best epoch, the confusion matrix and the per-class table are each one key away, the footer
shows 1–6, q and the screen's keys whole; a second start is refused in place (no job), x asks before
stopping, t evaluates the stopped run on the test set after asking and a second t says what it costs, r resumes
the stopped run, and Enter on the Session screen's first next step starts a training. One small real training
(synthetic data, a few samples per epoch) serves every step.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import PROJECT_ROOT, cli_env
from workbench.run.runner import JobRunner
from workbench.session.store import job_status
from workbench.system.atomic import read_json

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux here (apt-get install -y tmux)")

TINY = [
    "data.source=synthetic",
    "data.synthetic_train=200",
    "data.synthetic_test=20",
    "train.train_limit=128",
    "train.val_limit=64",
    "train.warmup_steps=2",
]  # the device is left to `auto` (CPU here), so the form can be seen keeping what was asked
NAV_KEYS = ("1 Env", "2 Data", "3 Train", "4 Align", "5 Export", "6 Session", "q Quit")
OWN_KEYS = {  # each screen's own keys, as its key bar names them
    "1": ("r Re-run checks", "p Probes only"),
    "2": ("r Re-run", "s New seed"),
    "3": ("s Start", "x Stop", "t Test", "f Freeze", "r Resume", "p Profile", "v Pane", "c Compare"),
    "4": ("r Run", "p Preset paths", "f First failure"),
    "5": ("r Run export", "c Copy hashes"),
    "6": ("x Stop job", "e Export", "l Logs"),
}


class Terminal:
    """One tmux pane on a private server: send keys, read what it shows."""

    def __init__(self, sock: str, conf: Path) -> None:
        self.sock, self.conf = sock, conf
        self.last = ""

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a tmux command on this private server."""
        return subprocess.run(
            ["tmux", "-L", self.sock, "-f", str(self.conf)] + list(args),
            capture_output=True,
            text=True,
            timeout=30,
            check=check,
        )

    def open(self, name: str, size: str, argv: str) -> None:
        """A new window running the TUI (COLUMNS/LINES unset: the pane's size is the terminal's)."""
        width, height = size.split("x")
        env = cli_env({"TEXTUAL_ANIMATIONS": "none"})
        command = "cd %s && env -u COLUMNS -u LINES PYTHONPATH=%s %s -m workbench %s; echo TUI-EXITED $?; sleep 60" % (
            shlex.quote(str(PROJECT_ROOT)),
            shlex.quote(env["PYTHONPATH"]),
            shlex.quote(sys.executable),
            argv,
        )
        self.tmux("new-session", "-d", "-x", width, "-y", height, "-s", name, command)
        self.name = name

    def keys(self, *keys: str) -> None:
        """Press keys (tmux names: Tab, Escape, C-u, …)."""
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        """Type text, character by character as a person does."""
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def text(self, *args: str) -> str:
        """What the pane shows now."""
        self.last = self.tmux("capture-pane", "-p", "-t", self.name, check=False).stdout
        return self.last

    def shows(self, pattern: str) -> bool:
        """True when the pane shows text matching a regular expression."""
        screen = self.text()
        assert "TUI-EXITED" not in screen or pattern.startswith("TUI-EXITED"), "the TUI ended:\n" + screen
        return re.search(pattern, screen) is not None


@pytest.fixture
def terminal(tmp_path):
    sock = "wb-person-%d" % os.getpid()
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g default-size 120x36\nset -g status off\nset -g escape-time 0\n")
    term = Terminal(sock, conf)
    yield term
    term.tmux("kill-server", check=False)


def test_a_person_trains_quits_and_attaches_at_80x24(terminal, sessions, wait_for):
    sets = " ".join("--set %s" % s for s in TINY)

    def see(pattern: str, timeout_s: float = 60, what: str = "") -> None:
        try:
            wait_for(lambda: terminal.shows(pattern), timeout_s, what=what or pattern)
        except AssertionError as exc:
            raise AssertionError("%s; the pane shows:\n%s" % (exc, terminal.last))

    terminal.open("first", "120x36", "--sessions %s %s" % (shlex.quote(str(sessions)), sets))
    see("6 Session", what="the footer")
    terminal.keys("3")
    see("batch size", what="the Training form's labels")
    # the screen, then model, mode, precision, device, layers every (the form's first row): the epochs field
    terminal.keys("Tab", "Tab", "Tab", "Tab", "Tab", "Tab")
    see(r"\^s Start", what="ctrl+s in the footer while a field is focused")
    terminal.type("9999")  # a focused field selects its text: typing replaces it; long enough to outlast the test
    see(r"(?m)(^| )9999 ", what="the typed epochs")
    terminal.keys("Escape")
    see(r"(?m)(^|[ │])s Start x Stop", what="the one-letter keys back in the key bar after Escape")
    terminal.keys("s")
    see(r"train-001 .*(RUNNING|running)", what="the run line of the started training")
    (job_dir,) = sorted(sessions.glob("*/jobs/train-001"))
    cfg = read_json(job_dir / "config.json")
    assert cfg["train"]["epochs"] == 9999  # the typed value, not the default 5
    assert cfg["train"]["monitor"]["every"] == 10  # the course flow on CPU watches its layers (ui.monitor_every)
    see(r"best: epoch \d+", 120, what="an ended epoch")
    sid = job_dir.parent.parent.name
    try:
        terminal.keys("q")
        see("Leave running", what="the quit question")
        terminal.keys("Enter")  # Leave running is focused
        see("TUI-EXITED 0", what="the TUI to leave")
        assert job_status(job_dir).state == "running"

        terminal.open("second", "80x24", "--sessions %s attach %s" % (shlex.quote(str(sessions)), sid))
        see(r"(?m)(^|│) ?Training │", what="attach to land on the Training screen")
        see(r"form = the settings of train-001", what="the form filled from the run")
        assert re.search(r"epochs.*\n(.* )?9999 ", terminal.last), terminal.last
        assert re.search(r"device.*\n.*auto +▼", terminal.last), "the form lost `auto`:\n" + terminal.last
        assert re.search(r"device.*\n.*Start \^s", terminal.last, re.S), "no Start button at 80 columns"
        see(r"on CPU \(asked auto\)", what="the run line: what auto resolved to, beside what was asked")
        for screen in "124563":  # every screen's key bar at 80 columns: 1–6, q and its own keys whole
            terminal.keys(screen)
            own = OWN_KEYS[screen]
            see(re.escape(own[-1]), what="the key bar of screen %s" % screen)
            footer = "\n".join(terminal.last.rstrip("\n").splitlines()[-3:])  # a message may take a line
            for key in NAV_KEYS + own:
                assert re.search(r"(^|\s)%s(\s|$)" % re.escape(key), footer), "%r cut in %r" % (key, footer)
            if screen == "6":
                see(r"next: Enter runs the highlighted step", what="the Session screen's runnable next steps")
        # The palette at 80x24: it offers the checks and compare, and one Escape closes it. The keys follow at once,
        # as a person's do; the one-letter keys below (e, m, k, s, x, r) show the screen's keys still work after it.
        terminal.keys("C-p")
        terminal.type("check")
        for check in ("overfit", "resume", "precision"):
            see(r"Run the %s check" % check, what="the palette to offer the %s check" % check)
        terminal.keys("Escape")
        see(r"form = the settings of train-001", what="the palette to close")
        terminal.keys("C-p")
        terminal.type("compare")
        see(r"Compare two training runs", what="the palette to offer compare")
        terminal.keys("Escape")
        see(r"form = the settings of train-001", what="back on the Training screen")
        terminal.keys("e")
        see(r"epoch +train loss +val acc", what="the epochs table after e")
        terminal.keys("m")
        see(r"true\\pred", what="the confusion matrix after m")
        terminal.keys("k")
        see(r"class +P +R +F1", what="the per-class table after k")
        terminal.keys("l")
        see(r"layers: every 10 steps, \d+ samples", what="the layers of the run the form started monitored")
        # the screen paints before the run's events are read ("reading events N %"), then catches up
        see(r"best: epoch \d+", what="the run's epochs once its events are read")
        see(r"session \d{8}-\d{6}-\w{4} │", what="the status bar without 'reading events' once caught up")
        terminal.keys("s")  # the device is held by train-001: refused in place, no job made
        see(r"not started: device CPU:0 is held by job", what="the refusal on the Training screen")
        assert sorted(p.name for p in job_dir.parent.iterdir()) == ["train-001"]
        assert re.search(r"train-001 .*(RUNNING|running)", terminal.last), "train-001 no longer followed"
        terminal.keys("x")
        see(r"Stop train-001", what="the question before stopping")
        assert job_status(job_dir).state == "running"
        terminal.keys("y")
        wait_for(lambda: job_status(job_dir).state == "cancelled", 60, what="x then y to stop the run")
        see(r"train-001 .*(CANCELLED|cancelled)", what="the run line to say the run was stopped")
        see(r"state saved: r resumes train-001", what="the resume hint")
        # t evaluates on the test set: train-001 was stopped, so the first t asks; a real test job then runs.
        terminal.keys("t")
        see(r"did not end ok", what="the first t to say train-001 did not end ok")
        terminal.keys("y")
        tested = job_dir.parent / "test-001"
        wait_for(lambda: (tested / "exit.json").exists(), 180, what="the test job to end")
        assert job_status(tested).state == "ok", job_status(tested)
        terminal.keys("t")  # the second asking names what a second evaluation costs
        see(r"spent", what="the second t to say the test set is spent")
        # the dialog wraps it; a notice still showing (the refusal above) may cover its right side for a while
        try:
            wait_for(lambda: "observed-fail" in re.sub(r"[\s│]+", "", terminal.text()), 30, what="observed-fail")
        except AssertionError as exc:
            raise AssertionError("%s; the pane shows:\n%s" % (exc, terminal.last))
        terminal.keys("n")
        see(r"form = the settings of train-001", what="the question to close")
        assert not (job_dir.parent / "test-002").exists()  # no second evaluation
        terminal.keys("r")
        resumed = job_dir.parent / "train-002"
        wait_for(lambda: (resumed / "config.json").exists(), 60, what="r to start the resumed run")
        assert read_json(resumed / "config.json")["train"]["resume_from"] == "train-001"
        see(r"train-002 .*(RUNNING|running)", what="the resumed run followed")
        JobRunner.cancel(resumed)
        JobRunner.wait(resumed, timeout_s=30)
        # Session: the next-step list is the first focusable widget; Down highlights its first step, Enter runs it
        before = {p.name for p in job_dir.parent.iterdir()}
        terminal.keys("6")
        see(r"next: Enter runs the highlighted step", what="the Session screen's next steps")
        first = re.search(r"next: Enter runs.*\n│ (\(\w+\) [^│]*?) *│", terminal.last)
        assert first and first.group(1) == "(task) s on the Training screen", terminal.last  # no test run ok yet
        terminal.keys("Down", "Enter")
        wait_for(lambda: {p.name for p in job_dir.parent.iterdir()} - before, 60, what="Enter to run a next step")
        assert {p.name for p in job_dir.parent.iterdir()} - before == {"train-003"}  # s pressed on Training
        JobRunner.cancel(job_dir.parent / "train-003")
        JobRunner.wait(job_dir.parent / "train-003", timeout_s=60)
        terminal.keys("q")
        # The app may not have polled the resumed run's end yet: then it asks first, and Leave running quits.
        see(r"TUI-EXITED 0|Leave running", what="the TUI to quit or ask about the running job")
        if "TUI-EXITED" not in terminal.last:
            terminal.keys("Enter")
        see("TUI-EXITED 0", what="the TUI to quit")
    finally:
        JobRunner.cancel(job_dir)
        JobRunner.wait(job_dir, timeout_s=30)
        for later in ("train-002", "train-003"):
            if (job_dir.parent / later).exists():
                JobRunner.cancel(job_dir.parent / later)
                JobRunner.wait(job_dir.parent / later, timeout_s=30)
