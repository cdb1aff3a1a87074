"""The cheap live widgets: sparkline rows and fixed-width text grids."""

from rich.text import Text

from screens.widgets.spark import BARS, bar_rows, buckets
from screens.widgets.textgrid import text_grid


def test_buckets_keep_every_point_that_fits_and_summarise_the_rest():
    assert buckets([1, 2, 3], 10) == [1, 2, 3]
    assert buckets(list(range(8)), 4) == [1, 3, 5, 7]  # max of each pair
    assert buckets(list(range(8)), 4, summary=lambda v: sum(v) / len(v)) == [0.5, 2.5, 4.5, 6.5]


def test_bar_rows_scale_from_the_lowest_to_the_highest_value():
    top, bottom = bar_rows([0.0, 1.0, 2.0], height=2)
    assert bottom[0] == BARS[1] and top[0] == " "  # the minimum still shows one eighth
    assert bottom[2] == BARS[8] and top[2] == BARS[8]  # the maximum fills both rows
    assert bottom[1] == BARS[8] and top[1] != " " and top[1] != BARS[8]  # the middle reaches into the top row
    assert bar_rows([5.0, 5.0], height=1) == [BARS[8] * 2]  # a flat series is drawn full, not empty
    assert bar_rows([], height=2) == ["", ""]


def test_text_grid_pads_aligns_and_cuts_cells():
    grid = text_grid(["name", "n"], [["Sneaker", "12"], [Text("Pullover", style="red"), "7"]], [7, 3], [False, True])
    assert grid.plain.split("\n") == ["name      n", "Sneaker  12", "Pullov…   7"]
    assert any(str(span.style) == "red" for span in grid.spans)  # a cell's own style survives the cut
