"""The command palette's workbench commands: the screen's job, the test set, profiling, the record, screens, sessions."""

from __future__ import annotations

from functools import partial
from typing import Callable, List, Tuple

from textual.command import DiscoveryHit, Hit, Hits, Provider

from screens.base import workbench_app

SCREENS = (
    ("environment", "Environment"),
    ("data", "Data"),
    ("training", "Training"),
    ("alignment", "Alignment"),
    ("export", "Export"),
    ("session", "Session"),
)
# What "start" and "stop" mean on each screen: the screen's own actions (None: the screen has none).
SCREEN_JOB = {
    "environment": ("run_checks", None),
    "data": ("rerun", None),
    "training": ("start", "stop"),
    "alignment": ("run_align", None),
    "export": ("run_export", None),
    "session": (None, "cancel_job"),
}
# The palette's words for them, as each screen's keys say it.
SCREEN_WORDS = {
    "environment": ("Re-run the environment checks", None),
    "data": ("Re-run the data job", None),
    "training": ("Start a training run", "Stop the followed training run (asks first)"),
    "alignment": ("Run the alignment", None),
    "export": ("Run the export", None),
    "session": (None, "Stop the selected job (asks first)"),
}
# The framework layer's checks: jobs with no screen of their own, started with the candidate's recipe.
FRAMEWORK_JOBS = (
    ("overfit", "Run the overfit check", "framework layer: one batch trained until its loss nearly vanishes"),
    ("resume", "Run the resume check", "framework layer: stop after k epochs, resume, compare with one straight run"),
    ("precision", "Run the precision check", "framework layer: the same training in each precision, compared"),
)

RESUMABLE = ("cancelled", "failed", "timed-out", "stalled")  # runs that stopped before their end: r resumes them

Command = Tuple[str, Callable[[], object], str]


class WorkbenchCommands(Provider):
    """Workbench actions in the command palette (ctrl+p)."""

    def commands(self) -> List[Command]:
        """Every command that makes sense now: (title, callback, help)."""
        app = workbench_app(self.app)
        mode = self.app.current_mode
        start, stop = SCREEN_JOB.get(mode, (None, None))
        screen = self.app.screen_stack[0]  # the mode's screen, under the palette
        start_words, stop_words = SCREEN_WORDS.get(mode, (None, None))
        out: List[Command] = []
        if start and start_words:
            out.append((start_words, partial(screen.run_action, start), "what the screen's start key does"))
        followed = app.views["training"].state
        if stop and stop_words and (mode != "training" or followed == "running"):
            out.append((stop_words, partial(screen.run_action, stop), "what the screen's stop key does"))
        out.append(
            (
                "Evaluate on the test set",
                partial(app.run_on_screen, "training", "test"),
                "the followed training run's checkpoint on the test set (every evaluation is recorded)",
            )
        )
        out.append(
            (
                "New-distribution data",
                partial(app.run_on_screen, "training", "new_data"),
                "the frozen candidate on shifted test images: heat map, scope of use, failure cases (n on Training)",
            )
        )
        out.append(
            (
                "Profile run",
                partial(app.run_on_screen, "training", "profile"),
                "start a training that profiles 20 steady steps after warm-up",
            )
        )
        for kind, words, help_text in FRAMEWORK_JOBS:
            out.append((words, partial(app.start_job, kind), "%s; with %s" % (help_text, app.recipe_label(kind))))
        out.append(
            (
                "Compare two training runs",
                partial(app.run_on_screen, "training", "compare"),
                "the followed run against another one of this session or an imported record",
            )
        )
        if followed in RESUMABLE:
            out.append(
                (
                    "Resume the followed training run",
                    partial(app.run_on_screen, "training", "resume"),
                    "a cancelled or failed run, from the state it saved",
                )
            )
        out.append(
            (
                "Export the session record",
                partial(app.run_on_screen, "session", "export_session"),
                "report, metrics, manifest and archive in the session's export folder",
            )
        )
        for name, label in SCREENS:
            if name == mode:
                continue  # the palette offers nothing that does nothing
            out.append(
                (
                    "Switch to %s" % label,
                    partial(self.app.switch_mode, name),
                    "screen %d" % ([n for n, _ in SCREENS].index(name) + 1),
                )
            )
        out.append(("Toggle low bandwidth", app.action_toggle_low_bandwidth, "fewer colours, 1 Hz redraw"))
        for sid in reversed(app.store.sessions()[-20:]):
            if sid != app.sid:
                out.append(("Open session %s" % sid, partial(app.open_session, sid), "follow that session's jobs"))
        return out

    async def discover(self) -> Hits:
        for title, callback, help_text in self.commands():
            if not title.startswith("Open session"):
                yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


def workbench_commands() -> type:
    """The provider class (App.COMMANDS takes a callable, so the palette module loads only when opened)."""
    return WorkbenchCommands
