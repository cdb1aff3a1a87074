"""Cutting text at a word boundary: a cut line ends on a whole word or a separator, then "…"; never mid-word."""

from __future__ import annotations

from typing import Any, Optional, Union

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

MARK = "…"
BREAK_AFTER = frozenset(" \t,;:/([{=|")  # a cut may fall after one of these, or before a space


def cut_at(plain: str, cells: int) -> Optional[str]:
    """The head of `plain` to keep, mark included, in `cells` cells; None when the whole text fits."""
    if cell_len(plain) <= cells:
        return None
    if cells < 3:
        return MARK[:cells]
    for keep in range(min(cells - 1, len(plain) - 1), 0, -1):
        if not (plain[keep - 1] in BREAK_AFTER or plain[keep].isspace()):
            continue
        head = plain[:keep].rstrip(" \t([{")  # an opening bracket with nothing after it says nothing
        if not head:
            break
        # A whole word then the mark would read as a word cut in two: a space keeps them apart.
        tail = " " + MARK if head[-1].isalnum() else MARK
        if cell_len(head + tail) <= cells:
            return head + tail
    return plain[: cells - 1] + MARK  # one word longer than the line: nothing else can be done


def clip_words(text: str, cells: int) -> str:
    """`text` whole when it fits in `cells`, else cut after its last whole word with a "…"."""
    head = cut_at(text, cells)
    return text if head is None else head


def clip_text(text: Text, cells: int) -> Text:
    """A styled Text cut as clip_words cuts its plain text (the styles of what is kept are kept)."""
    head = cut_at(text.plain, cells)
    if head is None:
        return text
    kept = len(head) - len(MARK) - (1 if head.endswith(" " + MARK) else 0)
    out = text[:kept]
    out.append(head[kept:])
    return out


class Clipped:
    """A one-line renderable cut at a word boundary to the width it is given (a table cell, a line)."""

    def __init__(self, text: Union[str, Text], style: Any = "") -> None:
        self.text = text if isinstance(text, Text) else Text(str(text), style=style)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = cell_len(self.text.plain)
        return Measurement(min(width, 1), width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = clip_text(self.text, options.max_width)
        line.no_wrap, line.overflow = True, "crop"
        yield line
