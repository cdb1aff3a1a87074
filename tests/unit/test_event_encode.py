"""workbench.events.files.encode: lists that are JSON-safe as they are go out unwalked, the others value by value."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.events.files import _clean, encode


def _expected(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@settings(max_examples=60)
@given(st.lists(st.one_of(st.integers(), st.floats(), st.text(max_size=3), st.booleans(), st.none()), max_size=12))
def test_a_list_encodes_as_its_values_with_non_finite_floats_as_strings(values):
    back = json.loads(encode({"type": "steps", "loss": values}))["loss"]
    assert back == [_expected(v) for v in values]
    assert [type(v) for v in back] == [type(_expected(v)) for v in values]


def test_the_steps_lists_are_left_as_they_are_and_the_others_are_cleaned():
    losses, phases, sizes = [0.5, 1.25], ["steady", "warmup"], [64, 32]
    assert _clean(losses) is losses and _clean(phases) is phases and _clean(sizes) is sizes
    assert _clean([0.5, float("nan")]) == [0.5, "nan"]
    assert _clean([0.5, np.float32(0.25)]) == [0.5, 0.25]  # a numpy scalar among floats is converted
    assert _clean([1, 2.5]) == [1, 2.5] and _clean([10**400, 1.0]) == [10**400, 1.0]  # mixed: walked, no overflow
