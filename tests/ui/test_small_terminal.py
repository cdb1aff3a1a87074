"""80×24 first: on each screen of a big recorded session, nothing that matters is cut, at 80×24 and at 120×36.

The key bar keeps 1–6, q and the screen's own keys whole; the header keeps the running count and the session id;
no line is cut mid-word (a cut ends on a space or a punctuation mark before its "…"); the Training form's device
field and Start button lie inside the terminal.
"""

from __future__ import annotations

import json
import re

import pytest
from textual.widgets import Log, TextArea

from screens.app import WorkbenchApp
from screens.widgets.key_bar import NAV, screen_keys
from tests.support import big_session
from tests.support.pilot import settled, until
from tests.support.screen_states import KEYS, SCREENS
from workbench.config.layers import defaults
from workbench.session.store import SessionStore


def _lines(app) -> list:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


def mid_word_cuts(lines: list) -> list:
    """Lines with a word cut before its '…' (a shortened hex hash of 6+ digits is allowed)."""
    out = []
    for line in lines:
        for match in re.finditer(r"(\S*)…", line):
            before = match.group(1)
            if not before or not before[-1].isalnum():
                continue
            word = re.split(r"[^0-9A-Za-z]", before)[-1]
            if re.fullmatch(r"[0-9a-f]{6,}", word):
                continue
            out.append(line)
            break
    return out


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    return root, big_session.build(root).name


def _problems(app, screen: str, size) -> list:
    """What is cut on the screen shown now."""
    width, height = size
    lines = _lines(app)
    found = []
    header, bar = lines[0], "\n".join(lines[-2:])
    if "1 running" not in header or app.sid not in header:
        found.append("%s: the header lost the running count or the session id: %r" % (screen, header))
    own = screen_keys(type(app.screen).BINDINGS, app.screen.active_bindings)
    for key, label in NAV + own:
        if not re.search(r"(^|\s)%s %s(\s|$)" % (re.escape(key), re.escape(label)), bar):
            found.append("%s: the key bar lost %r: %r" % (screen, "%s %s" % (key, label), bar))
    found += ["%s: cut mid-word: %r" % (screen, line) for line in mid_word_cuts(lines)]
    for widget in app.screen.query("*"):
        if isinstance(widget, (Log, TextArea)):
            continue  # a log and a text area are read by scrolling them
        if widget.display and widget.region.width and widget.allow_horizontal_scroll and widget.max_scroll_x > 0:
            found.append("%s: %r hides %d columns past its right edge" % (screen, widget, widget.max_scroll_x))
    return found


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_nothing_that_matters_is_cut_on_any_screen(session, size):
    root, sid = session
    app = WorkbenchApp(SessionStore(root), sid, defaults())
    problems = []
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        for screen in SCREENS:
            await pilot.press(KEYS[screen])
            await until(pilot, lambda: app.current_mode == screen, what="the %s screen" % screen)  # noqa: B023
            await settled(pilot)
            await until(pilot, lambda: "1 running" in _lines(app)[0], what="the header's running count")
            problems += _problems(app, screen, size)
            if screen == "training":
                for selector in ("#f-device", "#start", "#stop"):
                    region = app.screen.query_one(selector).region
                    if not (region.width and region.right <= size[0] and region.bottom <= size[1]):
                        problems.append("training: %s lies outside the terminal: %s" % (selector, region))
            if screen == "session":
                problems += _session_rows(app, size)
                events = app.screen.query_one("#events")
                if size == (80, 24):  # the logs give their place to the jobs, and `l` brings them back
                    assert not events.region
                    await pilot.press("l")
                    await until(pilot, lambda: events.region.height >= 3, what="l to show the logs")  # noqa: B023
                    await pilot.press("l")
                    await until(pilot, lambda: not events.region, what="l again to hide them")  # noqa: B023
                else:
                    assert events.region.height >= 3
    assert not problems, "\n".join(problems)


def _session_rows(app, size) -> list:
    """The jobs table shows as many rows as fit (7 or more at 24 rows), in the order the jobs were made."""
    table = app.screen.query_one("#jobs")
    shown = table.region.height - 1  # less the header
    order = [str(key.value) for key in table.rows]
    specs = [json.loads(p.read_text()) for p in (app.store.root / app.sid / "jobs").glob("*/job.json")]
    made = [spec["jid"] for spec in sorted(specs, key=lambda spec: spec["created"])]
    problems = []
    if shown < min(7, len(order)):
        problems.append("session: %d job rows shown at %s" % (shown, size))
    if order != made:
        problems.append("session: jobs table out of creation order: %s" % order)
    return problems


def test_the_cut_rule_tells_a_word_cut_in_two_from_a_cut_between_words():
    assert mid_word_cuts(["max abs diff (atol 1e-05, rto…"]) == ["max abs diff (atol 1e-05, rto…"]
    assert mid_word_cuts(["Python 3.11.7 at /work/main/.v…"])
    assert mid_word_cuts(["max abs diff (atol 1e-05, …", "indices b5f707c7… val", "at /work/…"]) == []
