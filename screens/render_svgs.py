"""SVG screenshots of the six screens, rendered headlessly from a session's event files.

Run as `python -m screens.render_svgs ROOT SID OUT_DIR [--folded]` by `screens.screenshots` (a child process,
so that a failure here costs the record its pictures, never the record itself). Prints one JSON line.
With --folded the session is not read again: the export's fold (workbench.fold.handoff) comes on stdin,
after this process has built the app and its screens, so that work overlaps the export's own reading; OUT_DIR
`-` means the folder comes first on stdin, on a line of its own.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import time
import uuid
import zlib
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from workbench.fold.handoff import FoldedSession

SIZE = (120, 50)  # tall enough for the Training screen's per-class table (10 classes)
SCREENS = (
    ("1", "environment"),
    ("2", "data"),
    ("3", "training"),
    ("4", "alignment"),
    ("5", "export"),
    ("6", "session"),
)
INGEST_TIMEOUT_S = 20.0
SETTLE_S = 0.35  # longer than one redraw tick at the default 4 Hz
DRAWN_POLL_S = 0.005  # then looked at often: drawn and settled, it is saved at once


def _event_bytes(root: Path, sid: str) -> Dict[str, int]:
    sizes = {}
    jobs = root / sid / "jobs"
    for job in sorted(jobs.iterdir()) if jobs.is_dir() else []:
        if (job / "job.json").exists():
            path = job / "events.jsonl"
            sizes[job.name] = path.stat().st_size if path.exists() else 0
    return sizes


def _caught_up(app: Any, sizes: Dict[str, int]) -> bool:
    """The tracker knows every job and has read each events file up to the size seen at the start."""
    jobs = app.tracker.jobs
    if set(jobs) != set(sizes):
        return False
    return all(job.reader.offset >= sizes[jid] for jid, job in jobs.items())


async def shoot(
    root: Path, sid: str, out_dir: Path, written: List[str], size=SIZE, folded: Optional[FoldedSession] = None
) -> None:
    """Open the app on the session (or on its fold), let it catch up, save one SVG per screen into `written`."""
    from screens.app import WorkbenchApp
    from workbench.config.layers import defaults
    from workbench.session.store import SessionStore

    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = _event_bytes(root, sid)
    store = SessionStore(root)
    app = WorkbenchApp(store, sid, cfg=defaults(), argv=["ms-workbench", "export"], read_only=True, folded=folded)
    if folded is not None:  # the export's child: each screen restyled once it is shown, the CSS parsed once
        _cheaper_restyling(app)
    _no_switch_delay(app)
    async with app.run_test(size=size) as pilot:
        deadline = time.monotonic() + (0.0 if folded is not None else INGEST_TIMEOUT_S)
        last, stable = -1, 0
        while time.monotonic() < deadline:
            await pilot.pause(0.05)
            if _caught_up(app, sizes):
                stable = stable + 1 if app.events_ingested == last else 0
                last = app.events_ingested
                if stable >= 2:
                    break
        await _save(app, pilot, sid, out_dir, written)
        app.exit()


def _prebuilt_app() -> Any:
    from screens.app import WorkbenchApp

    class Prebuilt(WorkbenchApp):
        """Opens on the first screen drawn."""

        def landing_mode(self) -> str:
            return SCREENS[0][1]

    return Prebuilt


async def shoot_handed(
    root: Path,
    sid: str,
    receive: Callable[[], Tuple[Path, FoldedSession]],
    written: List[str],
    saved: Optional[Callable[[], None]] = None,
) -> None:
    """Build the app and its screens first, then take the fold `receive` returns (waiting on the export) and save
    one SVG per screen: only the drawing of the session's data is left for after the export's fold. `saved` is
    called once every picture is saved, before the app is taken down."""
    from workbench.config.layers import defaults
    from workbench.session.store import SessionStore

    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    store = SessionStore(root)
    app = _prebuilt_app()(
        store, sid, cfg=defaults(), argv=["ms-workbench", "export"], read_only=True, folded=FoldedSession()
    )
    _cheaper_restyling(app)
    _no_resume_restyle(app)
    _no_switch_delay(app)
    async with app.run_test(size=SIZE) as pilot:
        with app.batch_update():  # composed, mounted and styled while the export still folds; painted after it
            for _, mode in SCREENS:
                await app.switch_mode(mode)
                await pilot.pause()
        # Imported by the drawing after the fold (the Session screen's next steps parse `--set` values as YAML;
        # rich's SVG export escapes with html): imported while the export still folds instead.
        import html  # noqa: F401

        from workbench.config import safe_yaml  # noqa: F401

        out_dir, folded = await asyncio.get_running_loop().run_in_executor(None, receive)
        out_dir.mkdir(parents=True, exist_ok=True)
        await app.adopt(folded)
        await _save(app, pilot, sid, out_dir, written)
        if saved is not None and getattr(app, "_exception", None) is None and len(written) == len(SCREENS):
            saved()
        app.exit()


async def _save(app: Any, pilot: Any, sid: str, out_dir: Path, written: List[str]) -> None:
    for _, mode in SCREENS:
        await app.switch_mode(mode)
        await _drawn(pilot, app.screen)
        if getattr(app, "_exception", None) is not None:
            break  # a screen raised: the app is going down and later pictures would be blank
        name = "%s.svg" % mode
        svg = screenshot(app, title="ms-workbench · %s · %s" % (sid, mode))
        tmp = out_dir / ("." + name + ".tmp")
        tmp.write_text(svg, encoding="utf-8")
        os.replace(str(tmp), str(out_dir / name))
        written.append(name)


def screenshot(app: Any, title: str) -> str:
    """The SVG app.export_screenshot makes, but for its id (`terminal-N`, scoping its CSS classes): N is a hash of
    the SVG itself, where rich hashes the repr of every segment (a tenth of a second for six screens)."""
    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    placeholder = "terminal-%s" % uuid.uuid4().hex  # in no text a screen shows
    svg = console.export_svg(title=title, unique_id=placeholder)
    same = svg.replace(placeholder, "terminal")
    return svg.replace(placeholder, "terminal-%d" % zlib.adler32(same.encode("utf-8")))


async def _drawn(pilot: Any, screen: Any) -> None:
    """Wait until the screen has drawn its model's latest version and settled (or a redraw tick has passed)."""
    view = getattr(screen, "view", None)
    deadline = time.monotonic() + SETTLE_S * 4
    await pilot.pause(0)  # what the switch set off is handled; a layout it asked for is done
    while time.monotonic() < deadline:
        rendered = getattr(screen, "drawn_version", None)
        if rendered is None:  # a screen without the bookkeeping: give it one redraw tick
            await pilot.pause(SETTLE_S)
            return
        if view is not None and rendered == getattr(view, "version", rendered) and _settled(pilot.app, screen):
            return
        await pilot.pause(DRAWN_POLL_S)  # every message the screen had queued is handled, then a layout is done


def _settled(app: Any, screen: Any) -> bool:
    """Every widget of the screen mounted (a drawing may mount some), no message left to handle (the app's too), no
    layout or after-refresh callback pending and no worker running (a Log measures its lines in a thread)."""
    if app.message_queue_size or len(app.workers):
        return False
    if getattr(screen, "_layout_required", False) or getattr(screen, "_callbacks", None):
        return False
    return all(node.is_mounted and not node.message_queue_size for node in screen.walk_children(with_self=True))


def _no_resume_restyle(app: Any) -> None:
    """Textual restyles a screen whole each time it is shown, for what may have changed while another one was: the
    theme, the app's classes and pseudo-classes. In this process none of those change, and Textual restyles a node
    whose classes, focus or place among its siblings change as they change: the pass repeats what is there (385 style
    applications after the fold came). The pictures are byte for byte those of an app that does it, reading the
    session (test_fold_handoff)."""
    from textual.screen import Screen

    if app.SUSPENDED_SCREEN_CLASS:  # a class the resume itself removes: that restyle is needed
        return
    resuming: List[Any] = []
    update_styles = app.update_styles

    def update_unless_resuming(node, animate=True):
        if resuming and node is resuming[-1]:
            return None
        return update_styles(node, animate)

    resume = Screen._on_screen_resume  # patched on the class below: this process only draws, then exits

    def on_screen_resume(self, event):
        resuming.append(self)
        try:
            return resume(self, event)
        finally:
            resuming.pop()

    app.update_styles = update_unless_resuming
    Screen._on_screen_resume = on_screen_resume  # type: ignore[method-assign]


def _no_switch_delay(app: Any) -> None:
    """Textual holds every layout and repaint for 50 ms after a mode switch (delay_update, to hide the change from
    a person's eyes): here nobody watches, and twelve switches would leave the process idle for 0.6 s."""
    app.delay_update = lambda delay=0.0: None


def _cheaper_restyling(app: Any) -> None:
    """Textual restyles the whole app for each new screen (refresh_css: every CSS source parsed again in a fresh
    stylesheet, then every node of every screen restyled): here the parses are shared (one theme, so the same
    rules) and such a refresh restyles the app alone. Every screen is restyled whole when it is shown (a mode
    switch resumes it with refresh_styles), before it is drawn and saved. The pictures are byte for byte those
    drawn without it (test_fold_handoff)."""
    from textual.css.stylesheet import Stylesheet

    parse_rules = Stylesheet._parse_rules
    shared: Dict[tuple, Any] = {}

    def shared_parse(self, css, read_from, is_default_rules=False, tie_breaker=0, scope=""):
        key = (css, read_from, is_default_rules, tie_breaker, scope, tuple(sorted(self._variables.items())))
        if key not in shared:
            shared[key] = parse_rules(self, css, read_from, is_default_rules, tie_breaker, scope)
        return shared[key]

    Stylesheet._parse_rules = shared_parse  # type: ignore[method-assign]
    sheet = app.stylesheet
    update = sheet.update

    def update_app_alone(root, animate=False):
        if root is not app:
            return update(root, animate=animate)
        return sheet.update_nodes([app], animate=animate)

    sheet.update = update_app_alone


def main(argv: List[str]) -> int:
    """Entry point: ROOT SID OUT_DIR [--folded]; prints {"files": [...], "error": null, "mindspore_imported": bool}."""
    args = [a for a in argv if a != "--folded"]
    root, sid, out = Path(args[0]), args[1], args[2]
    written: List[str] = []
    result: Dict[str, Any] = {"files": written, "error": None}
    try:
        if "--folded" in argv:

            def receive() -> Tuple[Path, FoldedSession]:
                stdin = sys.stdin.buffer
                folder = stdin.readline().decode("utf-8").rstrip("\n") if out == "-" else out
                if not folder:
                    raise ValueError("no output folder came on stdin (the export stopped before its pictures)")
                return Path(folder), FoldedSession.load(stdin)

            def saved() -> None:
                # Every picture is on disk and said: the export waits for this process's end, not for the
                # headless app's teardown (nothing of it outlives the process).
                os._exit(_said(result))

            asyncio.run(shoot_handed(root, sid, receive, written, saved=saved))
        else:
            asyncio.run(shoot(root, sid, Path(out), written))
    except Exception as exc:  # the caller reports it in the record instead of crashing
        result["error"] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else "")
    return _said(result)


def _said(result: Dict[str, Any]) -> int:
    """Print the one JSON line the caller reads; the exit status."""
    result["mindspore_imported"] = any(m.split(".")[0] == "mindspore" for m in sys.modules)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
