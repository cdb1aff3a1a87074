"""The record's numerics figures: per-layer gradient norms and the loss scale, from recorded runs' events."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.events.protocol import read_all
from workbench.fold.record import JobRecord
from workbench.render import svg

EVENTS = Path(__file__).resolve().parent.parent / "fixtures" / "events"


def _fold(name: str) -> JobRecord:
    rec = JobRecord("train-001", "train", config={})
    rec.ingest(read_all(str(EVENTS / name)))
    return rec


def test_layers_figure_draws_every_parameter_and_names_the_flags():
    rec = _fold("train_monitor.jsonl")
    summary = rec.train_state.summary()
    samples = sum(
        len(e["global_step"]) for e in read_all(str(EVENTS / "train_monitor.jsonl")) if e["type"] == "monitor"
    )
    assert summary["samples"] == samples and summary["stride"] == 1 and len(summary["series"]) == samples
    text = svg.layers_svg("train-001", summary)
    titles = re.findall(r"<title>([^<]*)</title>", text)
    assert titles == ["%s |grad|" % n for n in ["1.weight", "1.bias", "3.weight", "3.bias"]]
    assert "%d monitor samples" % samples in text
    first = summary["flags"][0]
    assert "%s %s at step %s" % (first["flag"], first["param"], first["global_step"]) in text


def test_layers_series_thins_past_its_bound():
    from workbench.analysis import trainstate

    st = trainstate.TrainState()
    for step in range(1, trainstate.SERIES * 2 + 1):
        st.add({"global_step": step, "epoch": 1, "rows": {"w": {"grad_norm": 1.0, "update_ratio": 0.1}}})
    steps = [s["global_step"] for s in st.series]
    assert st.stride > 1 and len(steps) < trainstate.SERIES
    assert steps[0] == 1 and steps[-1] > 2 * trainstate.SERIES - st.stride  # the whole run, evenly thinned
    assert len({b - a for a, b in zip(steps, steps[1:])}) <= 2


def test_loss_scale_figure_marks_each_overflow_skip():
    rec = _fold("train_loss_scale.jsonl")
    skips = [e for e in rec.loss_scale if e["overflow"]]
    text = svg.loss_scale_svg("train-001", rec.loss_scale)
    assert len(re.findall(r"<circle ", text)) == len(skips) > 0
    assert "%d overflow skips" % len(skips) in text
