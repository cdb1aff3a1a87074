"""Fixed-width columns as one rich Text: what a live panel redraws, at a fraction of a Table's cost."""

from __future__ import annotations

from typing import List, Optional, Sequence, Union

from rich.cells import cell_len
from rich.text import Text

Cell = Union[str, Text]


def _fit(cell: Cell, width: int, right: bool) -> Text:
    text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
    if cell_len(text.plain) > width:
        text.truncate(width, overflow="ellipsis")
    pad = " " * (width - cell_len(text.plain))
    return Text(pad).append_text(text) if right else text.append(pad)


def text_grid(
    header: Optional[Sequence[str]],
    rows: Sequence[Sequence[Cell]],
    widths: Sequence[int],
    right: Sequence[bool],
    row_styles: Optional[Sequence[str]] = None,
    gap: int = 1,
    header_style: str = "bold",
) -> Text:
    """Columns of the given widths (cells cut with an ellipsis), one line per row, no measuring pass."""
    lines: List[Text] = []
    spacer = " " * gap
    if header is not None:
        lines.append(
            Text(spacer.join(_fit(h, w, r).plain for h, w, r in zip(header, widths, right)), style=header_style)
        )
    for i, row in enumerate(rows):
        line = Text(style=(row_styles[i] if row_styles else "") or "")
        for j, (cell, width, r) in enumerate(zip(row, widths, right)):
            if j:
                line.append(spacer)
            line.append_text(_fit(cell, width, r))
        lines.append(line)
    return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)
