"""The confusion matrix as a coloured grid with class names (rows = true class)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

SHORT_NAMES = ["T-shirt", "Trouser", "Pullovr", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"]


def _shade(value: int, row_total: int, diagonal: bool, plain: bool) -> str:
    if value == 0:
        return "dim"
    if plain:
        return "bold" if not diagonal and value * 20 >= row_total else ""
    share = value / float(row_total or 1)
    if diagonal:
        return "bold green" if share >= 0.9 else ("green" if share >= 0.75 else "yellow")
    if share >= 0.1:
        return "bold white on red"
    return "red" if share >= 0.03 else "dim red"


def confusion_table(matrix: Sequence[Sequence[int]], names: Sequence[str] = SHORT_NAMES, plain: bool = False,
                    weakest: Optional[int] = None) -> Table:
    """A rich Table of the matrix; off-diagonal cells redder the larger their share of the row."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("true\\pred", no_wrap=True)
    for j in range(len(matrix)):
        table.add_column(str(j), justify="right", no_wrap=True)
    for i, row in enumerate(matrix):
        total = sum(row)
        label = Text("%d %s" % (i, names[i] if i < len(names) else i),
                     style="bold reverse" if weakest == i else "")
        cells: List[Text] = [Text(str(v), style=_shade(int(v), total, i == j, plain)) for j, v in enumerate(row)]
        table.add_row(label, *cells)
    return table


class ConfusionGrid(Static):
    """Shows the latest confusion matrix, or a placeholder until the first epoch ends."""

    DEFAULT_CSS = "ConfusionGrid { height: auto; }"

    def show(self, matrix: Optional[Sequence[Sequence[int]]], plain: bool = False, weakest: Optional[int] = None) -> None:
        """Redraw from a matrix (None: nothing yet)."""
        if not matrix:
            self.update(Text("confusion matrix after the first epoch", style="dim"))
        else:
            self.update(confusion_table(matrix, plain=plain, weakest=weakest))
