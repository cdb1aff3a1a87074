"""What every workbench screen shares: the status bar, the footer, the navigation keys and a bounded redraw."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from screens.widgets.candidate_line import CandidateLine
from screens.widgets.key_bar import KeyBar
from screens.widgets.status_bar import StatusBar

if TYPE_CHECKING:  # names for the protocol's types only: importing the base screen loads no more than it did
    from workbench.fold.tracker import JobTracker
    from workbench.session.candidate import Candidate
    from workbench.session.store import SessionStore

# Screen-level (not app-level) so they come first in the footer: at 80 columns the screen's own
# keys are cut off at the right, never the way to another screen or out.
NAV_BINDINGS: List[BindingType] = [
    Binding("1", "app.switch_mode('environment')", "Env"),
    Binding("2", "app.switch_mode('data')", "Data"),
    Binding("3", "app.switch_mode('training')", "Train"),
    Binding("4", "app.switch_mode('alignment')", "Align"),
    Binding("5", "app.switch_mode('export')", "Export"),
    Binding("6", "app.switch_mode('session')", "Session"),
    Binding("q", "app.request_quit", "Quit"),
    Binding("escape", "leave_field", "Leave field", show=False),
    Binding("question_mark", "app.show_help_panel", "Keys", show=False),
]
NARROW_COLUMNS = 110  # below this the footer is compact and the screens stack their panels


class Workbench(Protocol):
    """What the screens use of the app beyond Textual's API (the app imports the screens: they know it by this)."""

    store: SessionStore
    sid: Optional[str]
    tracker: JobTracker
    views: Dict[str, Any]
    cfg: Dict[str, Any]
    device: Dict[str, Any]  # the device a job started now would run on (decided once, for `auto`)
    low_bandwidth: bool

    @property
    def refresh_hz(self) -> float: ...

    def candidate(self) -> Optional[Candidate]: ...

    def recipe_label(self, kind: str) -> str: ...

    def start_job(self, kind: str, overrides: Optional[Dict[str, Any]] = None) -> Optional[Path]: ...

    def follow_job(self, jid: str) -> Optional[str]: ...

    def cancel_job(self, jid: str) -> None: ...

    def run_on_screen(self, mode: str, action: str) -> None: ...

    def press_on_screen(self, mode: str, key: str) -> None: ...

    def open_session(self, sid: str) -> None: ...

    def action_toggle_low_bandwidth(self) -> None: ...


def workbench_app(app: object) -> Workbench:
    """The running app as the Workbench it is (Textual types a node's app as App[object])."""
    return cast(Workbench, app)


class WorkbenchScreen(Screen[None]):
    """A mode screen that redraws from its view at a bounded rate, only when visible and changed."""

    BINDINGS = NAV_BINDINGS
    view_name = ""
    title_text = ""
    shows_candidate = False  # a line under the status bar names the frozen candidate
    redraws = 0  # counted for tests and benchmarks

    def __init__(self) -> None:
        super().__init__()
        # The breakpoint classes the first resize would add, set before the first styling: adding them on that
        # resize restyled the whole screen once more before its first frame.
        # Not restyled here: the screen is styled when it is registered, with these classes already on it.
        width, height = self.app.size
        for dimension, breakpoints in ((width, self.HORIZONTAL_BREAKPOINTS), (height, self.VERTICAL_BREAKPOINTS)):
            self.add_class(*self._get_breakpoint_classes(dimension, breakpoints or []), update=False)
        app = self.app
        if self.CSS_PATH and app.stylesheet._variables == app.get_css_variables():
            # Loading a CSS_PATH reparses every stylesheet and restyles the app; Textual then did both again for a
            # screen new to the app's CSS (a screen starts at -1, the app at 0), with the same variables.
            self._css_update_count = app._css_update_count

    def compose(self) -> ComposeResult:
        yield StatusBar(self.app, self.title_text)
        if self.shows_candidate:
            yield CandidateLine()
        yield from self.compose_body()
        yield KeyBar()

    def compose_body(self) -> ComposeResult:
        """The screen's own widgets (override)."""
        return iter(())

    @property
    def wb_app(self) -> Workbench:
        """The app with its workbench attributes (jobs, session, config) typed."""
        return workbench_app(self.app)

    @property
    def view(self) -> Any:
        """This screen's model, owned by the app so it outlives the screen."""
        return self.wb_app.views[self.view_name]

    @property
    def drawn_version(self) -> int:
        """The model version this screen last drew (-1 before its first draw); tests wait on it."""
        return getattr(self, "_rendered", -1)

    def invalidate(self) -> None:
        """Draw again at the next refresh although the model did not change (a resize, a toggle, a form note)."""
        self._rendered = -1

    async def refold(self) -> None:
        """The app's models were replaced (the record's pictures: the export's fold came after the screens were
        built): draw again, and offer again, as to no one who picked yet, what it offers from the jobs (override)."""
        self.invalidate()

    def on_mount(self) -> None:
        self.invalidate()
        self._timer = self.set_interval(1.0 / self.wb_app.refresh_hz, self.maybe_refresh)
        self.call_after_refresh(self.maybe_refresh)

    def on_screen_resume(self) -> None:
        self.maybe_refresh()

    def on_resize(self, event) -> None:
        """A redraw at the new size (panels show as many rows as fit)."""
        if self.app.size == getattr(self, "_drawn_size", None):
            return  # the first resize after the mount reports the size the screen was just drawn at
        self.invalidate()
        self.call_after_refresh(self.maybe_refresh)

    def action_leave_field(self) -> None:
        """Escape: leave the focused field, so the screen's one-letter keys work again."""
        self.set_focus(None)

    def set_refresh_hz(self, hz: float) -> None:
        """Change the redraw rate (low-bandwidth mode)."""
        self._timer.stop()
        self._timer = self.set_interval(1.0 / hz, self.maybe_refresh)

    def maybe_refresh(self) -> None:
        """Redraw when this screen is the visible one and its view changed."""
        if self.app.screen is not self or not self.is_mounted:
            return
        self.query_one(StatusBar).refresh_from(self.app)
        if self.shows_candidate:
            self.query_one(CandidateLine).refresh_from(self.app, self.shown_run())
        if self.view.version == self._rendered:
            return
        self._rendered = self.view.version
        self._drawn_size = self.app.size
        self.redraws += 1
        with self.app.batch_update():
            self.render_view(self.view)

    def shown_run(self) -> Optional[str]:
        """The training run this screen shows or uses (compared with the candidate), None when none."""
        return None

    def render_view(self, view: Any) -> None:
        """Update the widgets from the view (override)."""
