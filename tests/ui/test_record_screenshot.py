"""The record's pictures: render_svgs.screenshot is Textual's SVG but for its id, which comes from the picture."""

from __future__ import annotations

import asyncio
import re

from textual.app import App, ComposeResult
from textual.widgets import Static

from screens.render_svgs import screenshot

ID = re.compile(r"terminal-\d+")


class Two(App):
    CSS = "Static { color: red; background: $panel; } .b { text-style: bold; }"

    def compose(self) -> ComposeResult:
        yield Static("loss 0.4187  [b]step 1 284[/b]", id="a")
        yield Static("macro-F1 0.8379", classes="b")


def test_the_svg_is_textuals_but_for_an_id_made_from_the_picture():
    async def run():
        app = Two()
        async with app.run_test(size=(60, 8)) as pilot:
            await pilot.pause()
            first = screenshot(app, title="t")
            textual_svg = app.export_screenshot(title="t")
            again = screenshot(app, title="t")
            app.query_one("#a", Static).update("loss nan")
            await pilot.pause()
            changed = screenshot(app, title="t")
        return first, textual_svg, again, changed

    first, textual_svg, again, changed = asyncio.run(run())
    assert ID.sub("terminal", first) == ID.sub("terminal", textual_svg)
    ids = set(ID.findall(first))
    assert len(ids) == 1  # the placeholder asked of rich is gone everywhere
    assert first == again  # the same picture, the same bytes
    assert set(ID.findall(changed)) != ids  # another picture, another id (two inlined in one page keep their styles)
