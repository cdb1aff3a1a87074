"""The Session screen's logs keep their last line in view when the layout above them grows, unless scrolled up."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from screens.widgets.following_log import FollowingLog
from tests.support.pilot import until

LINES = ["line %d" % i for i in range(40)]


class Stack(App):
    """A panel above a log; the panel grows as the Session screen's acceptance table does after the first draw."""

    CSS = "#above { height: 2; } FollowingLog { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield Static("above", id="above")
        yield FollowingLog(id="log")


def _shows_last_line(log: FollowingLog) -> bool:
    return log.scroll_y + log.scrollable_content_region.height >= log.line_count


async def test_a_log_showing_its_end_still_shows_it_after_the_layout_above_grew():
    app = Stack()
    async with app.run_test(size=(40, 20)) as pilot:
        log = app.query_one(FollowingLog)
        log.write_lines(LINES)
        await until(pilot, lambda: _shows_last_line(log), what="the log at its end")
        app.query_one("#above").styles.height = 8  # the log loses six lines of height
        await until(pilot, lambda: log.size.height <= 12, what="the log shorter")
        await pilot.pause()
        assert log.max_scroll_y > 0 and _shows_last_line(log), (log.scroll_y, log.max_scroll_y, log.size)


async def test_a_log_scrolled_up_by_the_user_stays_where_it_was():
    app = Stack()
    async with app.run_test(size=(40, 20)) as pilot:
        log = app.query_one(FollowingLog)
        log.write_lines(LINES)
        await until(pilot, lambda: _shows_last_line(log), what="the log at its end")
        log.scroll_to(y=3, animate=False, immediate=True)
        await pilot.pause()
        app.query_one("#above").styles.height = 8
        await until(pilot, lambda: log.size.height <= 12, what="the log shorter")
        await pilot.pause()
        assert log.scroll_y == 3
