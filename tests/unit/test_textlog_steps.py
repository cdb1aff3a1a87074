"""The text log prints every 50th step of a batched line, decided without expanding lines that hold none."""

from workbench.events.steps import expand_steps
from workbench.events.text import format_event


def _steps(first, n):
    ev = {
        "v": 1,
        "seq": 3,
        "t": 1.0,
        "type": "steps",
        "epoch": 2,
        "loss": [0.5 + i for i in range(n)],
        "step_ms": [2.0] * n,
        "batch_size": 64,
        "phase": "steady",
    }
    if first is not None:
        ev["first_step"] = first
    return ev


def _one_by_one(ev, every):
    lines = [format_event(dict(step, v=1, seq=3, t=1.0), verbose_steps=every) for step in expand_steps(ev)]
    return "\n".join(line for line in lines if line) or None


def test_a_batched_line_prints_the_same_steps_as_its_steps_one_by_one():
    for first in (None, -3, 0, 1, 13, 49, 50, 51, 99, 100, 149):
        for n in (0, 1, 2, 36, 50, 51, 120):
            for every in (1, 7, 50):
                ev = _steps(first, n)
                assert format_event(ev, verbose_steps=every) == _one_by_one(ev, every), (first, n, every)


def test_lists_of_different_lengths_and_a_rank_print_as_one_by_one():
    for first in (None, -51, -3, 0, 48, 50):
        for n_loss, n_ms in ((0, 3), (3, 0), (2, 60), (60, 2), (51, 51)):
            for every in (1, 3, 50):
                ev = _steps(first, 0)
                ev.update(loss=[0.25 * i for i in range(n_loss)], step_ms=[1.5] * n_ms, rank=1)
                assert format_event(ev, verbose_steps=every) == _one_by_one(ev, every), (first, n_loss, n_ms, every)


def test_without_verbose_steps_no_step_is_printed():
    assert format_event(_steps(0, 36)) is None
    assert format_event(_steps(100, 36), verbose_steps=50) is not None  # step 100
    assert format_event(_steps(101, 36), verbose_steps=50) is None  # 101…136 hold no multiple of 50
