"""The confusion matrix as a coloured grid with class names (rows = true class)."""

from __future__ import annotations

from typing import Optional, Sequence

from rich.text import Text

from screens.widgets.panel import Panel
from screens.widgets.textgrid import text_grid

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


def confusion_table(
    matrix: Sequence[Sequence[int]],
    names: Sequence[str] = SHORT_NAMES,
    plain: bool = False,
    weakest: Optional[int] = None,
) -> Text:
    """The matrix as fixed columns; off-diagonal cells redder the larger their share of the row."""
    n = len(matrix)
    width = max([len(str(v)) for row in matrix for v in row] + [len(str(n - 1))])
    rows = []
    for i, row in enumerate(matrix):
        total = sum(row)
        label = Text("%d %s" % (i, names[i] if i < len(names) else i), style="bold reverse" if weakest == i else "")
        rows.append([label] + [Text(str(v), style=_shade(int(v), total, i == j, plain)) for j, v in enumerate(row)])
    return text_grid(["true\\pred"] + [str(j) for j in range(n)], rows, [10] + [width] * n, [False] + [True] * n)


class ConfusionGrid(Panel):
    """Shows the latest confusion matrix, or a placeholder until the first epoch ends."""

    DEFAULT_CSS = "ConfusionGrid { height: auto; }"

    def show(
        self,
        matrix: Optional[Sequence[Sequence[int]]],
        plain: bool = False,
        weakest: Optional[int] = None,
        layout: bool = True,
    ) -> None:
        """Redraw from a matrix (None: nothing yet); layout=False when the grid's height is fixed."""
        if not matrix:
            self.update(Text("confusion matrix after the first epoch", style="dim"), layout=layout)
        else:
            self.update(confusion_table(matrix, plain=plain, weakest=weakest), layout=layout)
