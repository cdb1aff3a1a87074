"""The record's pictures are standalone, well-formed SVG that show the numbers they were given."""

import math
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from workbench.render.svg import MAX_POINTS, confusion_svg, line_chart, loss_curve_svg, nice_ticks, step_time_svg

NS = "{http://www.w3.org/2000/svg}"


def _steps(n, compile_ms=900.0):
    return {
        "rank": [None] * n,
        "epoch": [1 + i // (n // 2) for i in range(n)],
        "step": list(range(1, n + 1)),
        "loss": [2.0 / (1 + i) for i in range(n)],
        "step_ms": [compile_ms] + [3.0 + (i % 3) * 0.1 for i in range(n - 1)],
        "batch_size": [64] * n,
        "phase": [None] * n,
    }


def test_line_chart_is_valid_svg_with_every_point_up_to_the_limit():
    xs = list(range(100))
    root = ET.fromstring(line_chart([("a", xs, [x * x for x in xs])], "t", "x", "y"))
    assert root.tag == NS + "svg"
    (line,) = root.iter(NS + "polyline")
    assert len(line.get("points").split()) == 100


def test_long_series_are_thinned_and_non_finite_points_skipped():
    xs = list(range(10 * MAX_POINTS))
    ys = [float("nan") if x % 7 == 0 else float(x) for x in xs]
    root = ET.fromstring(line_chart([("a", xs, ys)], "t", "x", "y"))
    (line,) = root.iter(NS + "polyline")
    assert len(line.get("points").split()) <= MAX_POINTS + 1


def test_chart_without_data_says_so():
    svg = line_chart([("a", [], [])], "empty", "x", "y")
    ET.fromstring(svg)
    assert "no data recorded" in svg


def test_loss_curve_marks_each_epoch_end_with_its_train_loss():
    steps = _steps(20)
    epochs = [{"epoch": 1, "train_loss": 0.5}, {"epoch": 2, "train_loss": 0.25}]
    root = ET.fromstring(loss_curve_svg("train-001", steps, epochs))
    titles = [c.find(NS + "title").text for c in root.iter(NS + "circle")]
    assert titles == ["epoch train loss 0.5", "epoch train loss 0.25"]


def test_step_time_puts_the_compile_step_off_the_scale_and_names_it():
    svg = step_time_svg(
        "train-001",
        _steps(40, compile_ms=2500.0),
        3,
        {"steady": {"median_ms": 3.1, "p95_ms": 3.2, "n": 36}, "sync": "loss.asnumpy() every step"},
    )
    ET.fromstring(svg)
    assert "step 1 (compile): 2500 ms (off the scale)" in svg
    assert "steady median 3.1 ms, P95 3.2 ms over 36 steps; sync: loss.asnumpy() every step" in svg
    assert "compile + warm-up" in svg


def test_confusion_matrix_has_a_cell_per_count_and_escaped_labels():
    matrix = [[5, 1, 0], [0, 7, 2], [1, 0, 9]]
    svg = confusion_svg(matrix, ["T-shirt/top", "A & B", "<C>"], "cm")
    root = ET.fromstring(svg)
    cells = [r for r in root.iter(NS + "rect") if r.get("stroke") == "#ddd"]
    assert len(cells) == 9
    texts = [t.text for t in root.iter(NS + "text")]
    assert "A & B" in texts and "<C>" in texts
    assert [t for t in texts if t in ("5", "7", "9")] == ["5", "7", "9"]


def test_nice_ticks_cover_the_range_with_round_steps():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    ticks = nice_ticks(3.07, 3.71)
    assert ticks[0] >= 3.07 and ticks[-1] <= 3.71 and len(ticks) >= 3
    assert all(math.isfinite(t) for t in nice_ticks(-5, 1e6))


@given(st.text())
def test_escape_writes_what_xml_sax_saxutils_escape_writes(text):
    from xml.sax.saxutils import escape as sax_escape

    from workbench.render.svg import escape

    assert escape(text) == sax_escape(text)
