"""The Textual app: six screens as modes, one poller that feeds every screen's model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Label

from workbench.config import ConfigError, merge
from workbench.priority import Launcher
from workbench.runner import JobRunner, RunnerError, decide_device, device_record
from workbench.session import SessionStore
from workbench.tracker import JobTracker

POLL_S = 0.05  # poll interval while events arrive
POLL_IDLE_S = 0.4  # the interval doubles up to this while nothing arrives


def build_views() -> Dict[str, Any]:
    """One model per screen, kept by the app so that leaving a screen loses nothing."""
    from workbench.views.registry import VIEWS

    return {name: factory() for name, factory in VIEWS.items()}


# Each screen is imported when its mode is first shown, so start-up pays for the first screen only
# (the Data screen brings numpy). The imports are static, so the import graph still shows every edge.
def environment_screen() -> Screen:
    """The Environment screen (mode 1)."""
    from screens.environment import EnvironmentScreen

    return EnvironmentScreen()


def data_screen() -> Screen:
    """The Data screen (mode 2)."""
    from screens.data import DataScreen

    return DataScreen()


def training_screen() -> Screen:
    """The Training screen (mode 3)."""
    from screens.training import TrainingScreen

    return TrainingScreen()


def alignment_screen() -> Screen:
    """The Alignment screen (mode 4)."""
    from screens.alignment import AlignmentScreen

    return AlignmentScreen()


def export_screen() -> Screen:
    """The Export screen (mode 5)."""
    from screens.export import ExportScreen

    return ExportScreen()


def session_screen() -> Screen:
    """The Session screen (mode 6)."""
    from screens.session import SessionScreen

    return SessionScreen()


class QuitScreen(ModalScreen):
    """Asked when quitting with jobs running: leave them running, stop them, or stay."""

    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    QuitScreen > Vertical { width: 64; height: auto; border: thick $warning; padding: 1 2; background: $surface; }
    QuitScreen Horizontal { height: auto; margin-top: 1; }
    QuitScreen Button { margin-right: 1; }
    """

    def __init__(self, running: List[str]):
        super().__init__()
        self.running = running

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Jobs still running: %s" % ", ".join(self.running))
            yield Label("Leave them running (reopen the session to follow them again), or stop them?")
            with Horizontal():
                yield Button("Leave running", id="leave", variant="primary")
                yield Button("Stop jobs", id="stop", variant="error")
                yield Button("Stay", id="stay")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)


class WorkbenchApp(App):
    """ms-workbench: Environment, Data, Training, Alignment, Export and Session screens."""

    TITLE = "ms-workbench"
    MODES = {
        "environment": environment_screen,
        "data": data_screen,
        "training": training_screen,
        "alignment": alignment_screen,
        "export": export_screen,
        "session": session_screen,
    }
    DEFAULT_MODE = "environment"
    BINDINGS = [
        Binding("1", "switch_mode('environment')", "Env"),
        Binding("2", "switch_mode('data')", "Data"),
        Binding("3", "switch_mode('training')", "Train"),
        Binding("4", "switch_mode('alignment')", "Align"),
        Binding("5", "switch_mode('export')", "Export"),
        Binding("6", "switch_mode('session')", "Session"),
        Binding("ctrl+b", "toggle_low_bandwidth", "Low bw"),
        Binding("q", "request_quit", "Quit"),
    ]

    def __init__(self, store: SessionStore, sid: Optional[str], cfg: Dict[str, Any],
                 argv: Optional[List[str]] = None, poll_s: float = POLL_S, launcher: Optional[Launcher] = None):
        super().__init__()
        self.store = store
        self.sid = sid
        self.cfg = cfg
        self.argv = list(argv or sys.argv)
        self.poll_s = poll_s
        self._poll_delay = poll_s
        self.device = device_record(decide_device(cfg["device"]))  # what the runner would decide for a job now
        self.low_bandwidth = bool(cfg["ui"]["low_bandwidth"])
        self.views = build_views()
        self.tracker: JobTracker = JobTracker(store, sid)
        self.events_ingested = 0
        self.runner = JobRunner(store)
        self.launcher = launcher  # starts jobs from a thread at the original priority when the UI is niced

    @property
    def refresh_hz(self) -> float:
        """Redraw rate of charts and tables (1 Hz in low-bandwidth mode)."""
        return 1.0 if self.low_bandwidth else float(self.cfg["ui"]["refresh_hz"])

    def on_mount(self) -> None:
        if self.low_bandwidth:
            self.theme = "ansi-dark"
        self._poll_tick()

    def _poll_tick(self) -> None:
        """Poll, then schedule the next poll: soon while events arrive, backing off while idle."""
        if self.poll_jobs():
            self._poll_delay = self.poll_s
        else:
            self._poll_delay = min(max(self.poll_s, POLL_IDLE_S), 2 * self._poll_delay)
        self.set_timer(self._poll_delay, self._poll_tick)

    def poll_jobs(self) -> bool:
        """Read what every job wrote since the last poll and fold it into the models (one batch); True if any."""
        batch = self.tracker.poll()
        if not batch:
            return False
        for job, events in batch.events:
            self.events_ingested += len(events)
            for view in self.views.values():
                if view.wants(job.kind):
                    view.ingest(job, events)
        for job in batch.changed:
            for view in self.views.values():
                if view.wants(job.kind):
                    view.job_changed(job)
        return True

    def ensure_session(self) -> str:
        """The session id, creating the session on first use."""
        if self.sid is None:
            self.sid = self.store.create(self.argv)
            self.tracker.sid = self.sid
        return self.sid

    def start_job(self, kind: str, overrides: Optional[Dict[str, Any]] = None) -> Optional[Path]:
        """Start a job with the app's config plus `overrides`; notify and return None on error."""
        import copy

        cfg = copy.deepcopy(self.cfg)
        try:
            merge(cfg, overrides or {}, "the %s screen" % kind)
            args = (self.ensure_session(), kind, cfg)
            command = ["ms-workbench (tui)", "run", kind] + _as_sets(overrides or {})
            if self.launcher is not None:
                job_dir = self.launcher.call(self.runner.start, *args, command=command)
            else:
                job_dir = self.runner.start(*args, command=command)
        except (ConfigError, RunnerError) as exc:
            self.notify(str(exc), title="cannot start %s" % kind, severity="error", timeout=10)
            return None
        self.notify("started %s" % job_dir.name)
        self.poll_jobs()
        return job_dir

    def cancel_job(self, jid: str) -> None:
        """Ask a job's supervisor to stop it."""
        job = self.tracker.jobs.get(jid)
        if job is not None and self.runner.cancel(job.dir):
            self.notify("stopping %s" % jid)

    def action_toggle_low_bandwidth(self) -> None:
        """Fewer colours and a 1 Hz redraw, for slow links."""
        self.low_bandwidth = not self.low_bandwidth
        self.theme = "ansi-dark" if self.low_bandwidth else "textual-dark"
        if hasattr(self.screen, "set_refresh_hz"):
            self.screen.set_refresh_hz(self.refresh_hz)
        self.notify("low-bandwidth mode %s" % ("on" if self.low_bandwidth else "off"))

    def action_request_quit(self) -> None:
        """Quit; ask first when jobs are running."""
        running = [j.jid for j in self.tracker.running()]
        if not running:
            self.exit()
            return

        def decided(choice: Optional[str]) -> None:
            if choice == "stop":
                for jid in running:
                    self.cancel_job(jid)
                self.exit()
            elif choice == "leave":
                self.exit(message="left running: %s (session %s)" % (", ".join(running), self.sid))

        self.push_screen(QuitScreen(running), decided)


def _as_sets(overrides: Dict[str, Any], prefix: str = "") -> List[str]:
    out = []
    for key, value in overrides.items():
        if isinstance(value, dict):
            out += _as_sets(value, prefix + key + ".")
        else:
            out.append("--set %s%s=%s" % (prefix, key, value))
    return out
