"""The Textual app: six screens as modes, one poller that feeds every screen's model."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.command import CommandPalette
from textual.notifications import Notify
from textual.screen import Screen

from screens.base import Workbench
from screens.commands import workbench_commands
from screens.widgets.key_bar import KeyBar
from workbench.acceptance.about import RECIPE_JOBS_NEEDING_CONFIG
from workbench.config.layers import ConfigError, check_effective, load_file, merge
from workbench.fold.backlog import Backlog
from workbench.fold.handoff import FoldedSession
from workbench.fold.record import SessionModel
from workbench.fold.tracker import Batch, JobTracker
from workbench.run.runner import JobRunner, RunnerError, decide_device, device_record
from workbench.session.candidate import CANDIDATE_FILE, Candidate, current, recipe_of
from workbench.session.store import SessionStore
from workbench.system import timing
from workbench.system.priority import Launcher, lower_ui_threads

POLL_S = 0.1  # poll interval while events arrive (a training job writes its batched lines every 0.1 s)
POLL_IDLE_S = 0.4  # the interval doubles up to this while nothing arrives
CATCH_UP_S = 0.001  # between slices of a backlog: just a turn of the event loop (Textual's timers divide by 0 s)
HANDOFF_S = 0.005  # how often the first poll looks whether the child folding the backlog has sent its fold


def build_views(model: SessionModel) -> Dict[str, Any]:
    """One view per screen over the tracker's one fold, kept by the app so that leaving a screen loses nothing."""
    from workbench.views.registry import VIEWS

    return {name: factory(model) for name, factory in VIEWS.items()}


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


class WorkbenchApp(App):
    """ms-workbench: Environment, Data, Training, Alignment, Export and Session screens."""

    TITLE = "ms-workbench"
    COMMANDS = App.COMMANDS | {workbench_commands}
    MODES = {
        "environment": environment_screen,
        "data": data_screen,
        "training": training_screen,
        "alignment": alignment_screen,
        "export": export_screen,
        "session": session_screen,
    }
    DEFAULT_MODE = "environment"
    # A message takes a line of the key bar (the screen gives it room) instead of a toast over the content.
    CSS = """
    ToastRack { display: none; }
    Select:focus > SelectCurrent { background: $accent 60%; color: $text; text-style: bold; }
    """
    BINDINGS = [  # the screens bind 1-6 and q (screens/base.py)
        Binding("ctrl+b", "toggle_low_bandwidth", "Low bw"),
        Binding("escape", "close_palette", show=False, priority=True),
    ]

    def __init__(
        self,
        store: SessionStore,
        sid: Optional[str],
        cfg: Dict[str, Any],
        argv: Optional[List[str]] = None,
        poll_s: float = POLL_S,
        launcher: Optional[Launcher] = None,
        read_only: bool = False,
        folded: Optional[FoldedSession] = None,
        backlog: Optional[Backlog] = None,
    ):
        self.read_only = read_only  # drawing the record's screenshots: write nothing into the session
        self.store = store
        self.sid = sid
        self.tracker: JobTracker = JobTracker(store, sid)
        self.views = build_views(self.tracker.model)
        self.events_ingested = 0
        self.backlog = backlog  # a child folding the events meanwhile: the first poll follows on from its fold
        if backlog is not None:
            self.tracker.read_elsewhere = backlog.read_bytes  # the status bar's "reading events N %"
        self.backlog_problem: Optional[str] = None  # why its fold was not taken (the files were read here instead)
        if folded is not None:  # the record's pictures: the export's fold, no events file read again
            self._apply(self.tracker.adopt(folded))
        else:
            self._apply(self.tracker.discover())  # jobs and statuses from their files: no event read before the paint
        # Textual builds DEFAULT_MODE's screen first: set to where this session opens, that is the only screen
        # built before the first paint (App.__init__ reads it; the class keeps the default of a new session).
        # Textual declares it a ClassVar, but reads it through the instance: this instance's landing screen.
        self.DEFAULT_MODE = self.landing_mode()  # type: ignore[misc]
        super().__init__()
        self.cfg = cfg
        self.argv = list(argv or sys.argv)
        self.poll_s = poll_s
        self._poll_delay = poll_s
        self.device = device_record(decide_device(cfg["device"]))  # what the runner would decide for a job now
        self.low_bandwidth = bool(cfg["ui"]["low_bandwidth"])
        self.painted = False  # the first screen has been drawn (the backlog is read only after it)
        self._marked_caught_up = False
        self.runner = JobRunner(store)
        self.launcher = launcher  # starts jobs from a thread at the original priority when the UI is niced
        self.last_refusal: Optional[str] = None  # why the last start from a screen was refused
        self.last_started: Optional[Tuple[str, str]] = None  # (jid, the recipe it ran with) of the last start

    async def adopt(self, folded: FoldedSession) -> None:
        """Take the export's fold after the screens were built on none (the record's pictures): fresh models from
        the fold, every screen to draw again, and the pickers of runs offered again."""
        self.tracker = JobTracker(self.store, self.sid)
        self.views = build_views(self.tracker.model)
        self.events_ingested = 0
        self._apply(self.tracker.adopt(folded))
        for stack in self._screen_stacks.values():
            for screen in stack:
                refold = getattr(screen, "refold", None)
                if refold is not None:
                    await refold()

    @property
    def refresh_hz(self) -> float:
        """Redraw rate of charts and tables (1 Hz in low-bandwidth mode)."""
        return 1.0 if self.low_bandwidth else float(self.cfg["ui"]["refresh_hz"])

    def on_mount(self) -> None:
        if self.low_bandwidth:
            self.theme = "ansi-dark"
        # Textual draws the first screen inside its start-up batch and never writes that frame: the first frame
        # written held only the widgets changed since (the status bar, a few texts), the rest of the screen came
        # with a later one. The whole screen marked for repaint, the first frame written is the whole screen.
        screen = self.screen
        screen.refresh()
        screen._dirty_widgets.add(screen)
        self.call_after_refresh(self._first_painted)

    def _first_painted(self) -> None:
        """The first screen is on the terminal: note it, then start reading the events."""
        self.painted = True
        gc.enable()  # the command line turns collection off until the first frame
        if self.launcher is not None:  # from now on the UI yields to the jobs (its start did not wait behind them)
            lower_ui_threads(self.launcher, int(self.cfg["ui"]["nice"]))
        timing.mark("first_paint", mode=self.current_mode, read_bytes=self.tracker.backlog()[0])
        if self.current_mode != WorkbenchApp.DEFAULT_MODE:
            self._remember_screen(self.current_mode)  # as switching there would have
        self._poll_tick()

    def landing_mode(self) -> str:
        """Where a reopened session opens: the newest running job's screen, else the last screen used."""
        running = self.tracker.running()
        if running:
            kind = running[-1].kind
            for name, view in self.views.items():
                if name != "session" and view.wants(kind):
                    return name
        if self.sid is not None:
            try:
                last = (self.store.info(self.sid).get("ui") or {}).get("last_screen")
            except (OSError, ValueError):
                last = None
            if last in self.MODES:
                return last
        return WorkbenchApp.DEFAULT_MODE

    def switch_mode(self, mode: str):
        """Switch screens and remember the screen in the session, so reopening it lands here."""
        done = super().switch_mode(mode)
        self._remember_screen(mode)
        return done

    def _remember_screen(self, mode: str) -> None:
        if self.sid is not None and not self.read_only:
            try:
                self.store.remember_ui(self.sid, last_screen=mode)
            except (OSError, ValueError) as exc:  # a read-only record must not stop the UI
                self.log.warning("cannot record the last screen: %s" % exc)

    def _poll_tick(self) -> None:
        """Poll, then schedule the next: at once while a backlog is read, soon while events arrive, later while idle."""
        if self.backlog is not None:
            if not self.backlog.ready():
                self._later(HANDOFF_S, self._poll_tick)
                return
            self._take_backlog()
        if self.poll_jobs():
            self._poll_delay = self.poll_s
        else:
            self._poll_delay = min(max(self.poll_s, POLL_IDLE_S), 2 * self._poll_delay)
        if self.tracker.caught_up and not self._marked_caught_up:
            self._marked_caught_up = True
            if os.environ.get(timing.ENV):  # benchmarks only: the mark waits for the frame that shows the data
                self._caught_up_drawn()
        # A slice that hit its cap: the next one at once, but through the event loop, so keys and paints come between.
        self._later(CATCH_UP_S if self.tracker.behind() else self._poll_delay, self._poll_tick)

    def _take_backlog(self) -> None:
        """Follow on from the child's fold; when it sent none, say why and read the files here from the start."""
        backlog, self.backlog = self.backlog, None
        assert backlog is not None
        self.tracker.read_elsewhere = None
        folded = backlog.take()
        if folded is None:
            self.backlog_problem = "%s; the events files are read here instead" % backlog.problem
            self.log.warning(self.backlog_problem)
            return
        batch, left = self.tracker.take(folded)
        if left:
            self.backlog_problem = "read here from the start: %s" % "; ".join(left)
            self.log.warning(self.backlog_problem)
        self._apply(batch)
        # every event the fold read counts as ingested, as if the batches had brought them
        self.events_ingested = sum(job.events for job in self.tracker.jobs.values())
        timing.mark("handoff", events=self.events_ingested, read_bytes=self.tracker.backlog()[0])

    def _later(self, delay_s: float, callback: Callable[[], Any]) -> None:
        """Run `callback` on the app's queue after `delay_s`, as set_timer would, but never dropped.

        Textual's one-shot timer skips its only tick when its task starts later than its delay (a process
        paused a millisecond on a loaded machine): the poll chain, re-armed tick by tick, would stop for good.
        """
        asyncio.get_running_loop().call_later(delay_s, self._call_if_running, callback)

    def _call_if_running(self, callback: Callable[[], Any]) -> None:
        if self.is_running:
            self.call_next(callback)

    def _caught_up_drawn(self) -> None:
        """Mark `caught_up` once the visible screen has drawn its model's latest version and that frame is out."""
        screen = self.screen
        view = getattr(screen, "view", None)
        if view is not None and getattr(screen, "drawn_version", -1) != view.version:
            self._later(0.02, self._caught_up_drawn)  # its next redraw tick has not come yet
            return
        read, _ = self.tracker.backlog()
        self.call_after_refresh(
            timing.mark, "caught_up", events=self.events_ingested, read_bytes=read, mode=self.current_mode
        )

    def poll_jobs(self) -> bool:
        """Read what every job wrote since the last poll (a slice of a backlog) into the models; True if any."""
        return self._apply(self.tracker.poll())

    def _apply(self, batch: Batch) -> bool:
        """Hand one batch to the models: events to the views that follow their kind, then status changes."""
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

    def candidate(self) -> Optional[Candidate]:
        """The session's frozen candidate (None when nothing is frozen), read again only when its file changed."""
        if self.sid is None:
            return None
        path = self.store.root / self.sid / CANDIDATE_FILE
        try:
            stat = path.stat()
            key: Optional[tuple] = (self.sid, stat.st_mtime_ns, stat.st_size)
        except OSError:
            key = None
        if key != getattr(self, "_candidate_key", ()):
            self._candidate_key = key
            self._candidate = current(path.parent) if key is not None else None
        return self._candidate

    def freeze_hint(self) -> str:
        """How to freeze a candidate: the Training screen's key when it has one, else the command."""
        from screens.training import TrainingScreen

        for binding in TrainingScreen.BINDINGS:
            if isinstance(binding, Binding) and binding.action == "freeze":
                return "%s on Training freezes the followed run" % binding.key.split(",")[0]
        return "ms-workbench freeze --session %s names one" % (self.sid or "SID")

    def recipe(self, kind: str) -> Tuple[Optional[Dict[str, Any]], str]:
        """For a check about the candidate's recipe (overfit, resume, precision): the candidate run's config.yaml,
        the layer the CLI's printed command passes with --config, and a line naming it; other jobs: (None, "")."""
        if kind not in RECIPE_JOBS_NEEDING_CONFIG:
            return None, ""
        cand = self.candidate()
        if cand is None:
            return None, "the app's settings (no candidate frozen)"
        path = self.store.root / (self.sid or "") / "jobs" / cand.run / "config.yaml"
        layer = load_file(path)  # ConfigError names the file when it cannot be read
        if not isinstance(layer, dict):
            raise ConfigError("%s: expected a mapping of config keys, got %s" % (path, type(layer).__name__))
        return layer, "candidate #%d's recipe (%s)" % (cand.n, cand.run)

    def recipe_label(self, kind: str) -> str:
        """Which recipe `kind` would start with, for the palette and the next-step list (never raises)."""
        try:
            return self.recipe(kind)[1]
        except ConfigError as exc:
            return "no recipe: %s" % exc

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
        recipe = ""
        try:
            layer, recipe = self.recipe(kind)
            if layer is not None:  # under the step's own settings, as --config is under --set
                merge(cfg, layer, recipe)
            merge(cfg, overrides or {}, "the %s screen" % kind)
            check_effective(cfg)
            held = self.runner.device_held(kind, cfg)
            if held is not None:  # refused here, before a job folder exists: the followed job stays followed
                self.refuse(kind, held)
                return None
            args = (self.ensure_session(), kind, cfg)
            command = ["ms-workbench (tui)", "run", kind] + _as_sets(overrides or {})
            if self.launcher is not None:
                job_dir = self.launcher.call(self.runner.start, *args, command=command)
            else:
                job_dir = self.runner.start(*args, command=command)
        except (ConfigError, RunnerError) as exc:
            self.notify(str(exc), title="cannot start %s" % kind, severity="error", timeout=10)
            return None
        for view in self.views.values():
            if view.wants(kind) and hasattr(view, "follow"):
                view.follow(None)  # a job the user just started is the one to follow
        if layer is not None:
            recipe += ": " + ", ".join("%s %s" % (k.split(".")[-1], v) for k, v in recipe_of(layer).items())
        self.notify("started %s%s" % (job_dir.name, " with " + recipe if recipe else ""))
        self.last_started = (job_dir.name, recipe)  # the Session screen names the recipe a check ran with
        self.poll_jobs()
        return job_dir

    def refuse(self, kind: str, why: str) -> None:
        """Say why a job was not started: on the screen's own line when it has one, and as a toast."""
        running = [j.jid for j in self.tracker.running()]
        text = "not started: %s%s" % (why, " — %s goes on" % ", ".join(running) if running else "")
        self.last_refusal = text
        shown = getattr(self.screen, "show_refusal", None)
        if shown is not None:
            shown(text)
        self.notify(text, title="cannot start %s" % kind, severity="error", timeout=10)

    def follow_job(self, jid: str) -> Optional[str]:
        """Open the screen that shows a job, following that job there; the screen's mode, None when none shows it."""
        job = self.tracker.jobs.get(jid)
        if job is None:
            return None
        for name, view in self.views.items():
            if name != "session" and view.wants(job.kind) and hasattr(view, "follow"):
                if job.kind in (getattr(view, "follows", ()) or view.kinds):
                    view.follow(jid)
                    self.switch_mode(name)
                    return name
        return None

    def cancel_job(self, jid: str) -> None:
        """Ask a job's supervisor to stop it."""
        job = self.tracker.jobs.get(jid)
        if job is not None and self.runner.cancel(job.dir):
            self.notify("stopping %s" % jid)

    def run_on_screen(self, mode: str, action: str) -> None:
        """Switch to a screen, then run one of its actions (command palette)."""

        async def run() -> None:
            await self.switch_mode(mode)
            await self.screen_stack[0].run_action(action)

        self.call_later(run)

    def press_on_screen(self, mode: str, key: str) -> None:
        """Switch to a screen, then run the action its key is bound to (a next step of the acceptance)."""

        async def run() -> None:
            from screens.next_steps import action_of

            await self.switch_mode(mode)
            screen = self.screen_stack[0]
            action = action_of(type(screen), key)
            if action is None:
                self.notify("the %s screen has no key %s" % (mode, key), severity="warning")
                return
            await screen.run_action(action)

        self.call_later(run)

    def open_session(self, sid: str) -> None:
        """Follow another session: fresh models and screens, landing where its work is."""
        self.sid = sid
        self.tracker = JobTracker(self.store, sid)
        self.views = build_views(self.tracker.model)
        self.events_ingested = 0

        async def reopen() -> None:
            self._apply(self.tracker.discover())
            landing = self.landing_mode()
            spare = "session" if self.current_mode != "session" else "environment"
            for mode in [spare] + [m for m in self.MODES if m != spare]:
                await self.remove_mode(mode)
                self.add_mode(mode, self.MODES[mode])
                if mode == spare:
                    await self.switch_mode(spare)  # the old current screen is no longer active: replace it next
            await self.switch_mode(landing)
            self.notify("session %s" % sid)

        self.call_later(reopen)

    def on_notify(self, event: Notify) -> None:
        """A notification is said on the key bar's message line for its time; no toast covers the screen."""
        self.call_later(self._redraw_key_bar)
        self._later(event.notification.timeout + 0.1, self._redraw_key_bar)

    def _redraw_key_bar(self) -> None:
        if not self.is_running or not self._screen_stacks.get(self._current_mode):
            return  # the app is closing: no screen to draw on
        for bar in self.screen.query(KeyBar):
            bar.redraw()

    def action_show_help_panel(self) -> None:
        """Every key of the screen shown, in a panel that scrolls (Textual's own panel cannot be scrolled)."""
        from screens.keys_help import KeysScreen  # imported when first asked for, not before the first paint

        if isinstance(self.screen, KeysScreen):
            return
        self.push_screen(KeysScreen(getattr(self.screen, "title_text", "This"), type(self.screen).BINDINGS))

    async def action_close_palette(self) -> None:
        """Escape on the palette closes it before the next key is read, so keys typed right after reach the screen."""
        # The palette's own escape runs once its input has taken the key from its queue; keys that arrived meanwhile
        # went to that closing palette and were lost (ctrl+p found it still open). Elsewhere escape goes on as before.
        if not CommandPalette.is_open(self):
            raise SkipAction()
        palette = self.screen
        # A search the palette's input queued before this escape would start after its list is gone (NoMatches in a
        # worker ends the app): the closing palette starts no more searches.
        palette._gather_commands = _no_search  # type: ignore[attr-defined]
        await palette.run_action("escape")

    def action_toggle_low_bandwidth(self) -> None:
        """Fewer colours and a 1 Hz redraw, for slow links."""
        self.low_bandwidth = not self.low_bandwidth
        self.theme = "ansi-dark" if self.low_bandwidth else "textual-dark"
        if hasattr(self.screen, "set_refresh_hz"):
            self.screen.set_refresh_hz(self.refresh_hz)
        self.notify("low-bandwidth mode %s" % ("on" if self.low_bandwidth else "off"))

    def action_request_quit(self) -> None:
        """Quit; ask first when jobs are running."""
        from screens.dialogs import QuitScreen  # imported when first asked for, not before the first paint

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


def _no_search(*_: object) -> None:
    """Stands for a closing palette's search (it has no list left to fill)."""


def _is_a_workbench(app: WorkbenchApp) -> Workbench:
    """The type checker holds the app to the protocol its screens know it by."""
    return app
