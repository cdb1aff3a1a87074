"""Cutting at a word boundary: what is kept ends on a whole word or a separator, the cut is marked, nothing fits
that would not."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from screens.widgets.words import Clipped, clip_text, clip_words


def test_a_text_that_fits_is_kept_whole():
    assert clip_words("max abs diff 2.38e-07", 21) == "max abs diff 2.38e-07"


def test_a_cut_falls_after_a_separator_or_a_whole_word():
    assert clip_words("max abs diff 2.38e-07 (atol 1e-05, rtol 1.3e-06)", 32) == "max abs diff 2.38e-07 (atol …"
    assert clip_words("2.10.0 from /work/main/.venv/lib/python3.11", 30) == "2.10.0 from /work/main/.venv/…"
    assert clip_words("overfit-batch no job has emitted it", 20) == "overfit-batch no …"


def test_an_opening_bracket_is_not_left_open_at_the_cut():
    assert clip_words("no threshold set (acceptance.min_steady_images_per_s)", 30) == "no threshold set …"


def test_one_word_longer_than_the_line_is_cut_where_it_must_be():
    assert clip_words("abcdefghij", 5) == "abcd…"


def test_styles_of_what_is_kept_are_kept():
    text = Text("PASS classes 10 classes T-shirt/top, Trouser")
    text.stylize("bold", 0, 4)
    cut = clip_text(text, 30)
    assert cut.plain == "PASS classes 10 classes …"
    assert [(s.start, s.end, s.style) for s in cut.spans] == [(0, 4, "bold")]


def test_a_table_cell_is_cut_to_its_column():
    table = Table.grid()
    table.add_column(width=16)
    table.add_row(Clipped("no throughput or step-time threshold"))
    console = Console(width=40, color_system=None)
    with console.capture() as out:
        console.print(table)
    assert out.get().rstrip() == "no throughput …"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab1 ,/.-(", max_size=60), st.integers(min_value=3, max_value=40))
def test_a_cut_never_splits_a_word_and_always_fits(plain, cells):
    out = clip_words(plain, cells)
    assert cell_len(out) <= cells
    if out == plain:
        return
    assert out.endswith("…")
    head = out[:-1]
    if (
        out == plain[: cells - 1] + "…" and head[-1:].isalnum()
    ):  # cut inside a word: only when no word ends early enough to cut after it
        assert not re.search(r"[^ ,/(][ ,/(]", plain[: cells - 2]), out
        return
    assert not head[-1:].isalnum(), out  # a whole word is followed by a space before the mark
    assert plain.startswith(head.rstrip())
