"""The Training screen's layers panel after recorded runs: the monitor's per-layer table, the loss scale, the first non-finite value.

Fixtures (tests/fixtures/events/record_train_monitor_events.py): a monitored SGD run at a raised learning
rate, an amp-O2 run with a dynamic loss scale, and an fp16 run that overflows at step 1.
"""

from __future__ import annotations

import copy
import json

import pytest

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, mark_running, text_of, wait_ingested
from workbench.config.layers import defaults
from workbench.events.protocol import read_all
from workbench.session.store import SessionStore

SID = "20240101-000000-7b7b"
FAILED_EXIT = dict(OK_EXIT, returncode=1)


def _app(tmp_path, monkeypatch, fixture: str, exit_record=OK_EXIT, every: int = 0) -> WorkbenchApp:
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    cfg = copy.deepcopy(defaults())
    cfg["train"]["monitor"]["every"] = every
    sid = make_recorded_session(tmp_path, [("train-001", "train", FIXTURES / fixture, exit_record)], cfg=cfg)
    return WorkbenchApp(SessionStore(tmp_path), sid, defaults())


async def _show_layers(pilot) -> None:
    """Training mode, every event read, the layers pane chosen and scrolled into view."""
    await pilot.press("3")
    await wait_ingested(pilot, pilot.app)
    await pilot.press("l")
    await settled(pilot)
    pilot.app.screen.query_one("#layers").scroll_visible(animate=False, top=True)
    await settled(pilot)


def _monitor_app(tmp_path, monkeypatch):
    return _app(tmp_path, monkeypatch, "train_monitor.jsonl", every=2)


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
def test_snapshot(snap_compare, tmp_path, monkeypatch, size):
    assert snap_compare(_monitor_app(tmp_path, monkeypatch), terminal_size=size, run_before=_show_layers)


async def test_monitor_table_shows_each_parameter_and_its_flags(tmp_path, monkeypatch):
    app = _monitor_app(tmp_path, monkeypatch)
    monitor = [e for e in read_all(str(FIXTURES / "train_monitor.jsonl")) if e["type"] == "monitor"]
    samples = sum(len(e["global_step"]) for e in monitor)
    last = monitor[-1]
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_layers(pilot)
        text = text_of(app, "#layers")
        assert "layers: every 2 steps, %d samples to step %d;" % (samples, last["global_step"][-1]) in text
        for i, name in enumerate(last["names"]):
            row = next(line for line in text.splitlines() if line.startswith(name + " "))
            assert "%.3g" % last["grad_norm"][-1][i] in row  # the latest sample's gradient norm
        flags = app.views["training"].train_state.flags
        assert flags and "first flag: %s: %s" % (flags[0]["flag"], flags[0]["param"]) in text
        assert "loss scale" not in text and "first non-finite" not in text  # this run has neither


async def test_layers_pane_says_when_a_run_is_not_monitored(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "train_loss_scale.jsonl")
    events = read_all(str(FIXTURES / "train_loss_scale.jsonl"))
    scales = [e for e in events if e["type"] == "loss_scale"]
    skips = [e for e in scales if e["overflow"]]
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_layers(pilot)
        await until(pilot, lambda: len(app.views["training"].loss_scale) == len(scales))
        text = text_of(app, "#layers")
        assert "not monitored (train.monitor.every=0" in text
        assert (
            "loss scale: %.3g now, %d overflow skips (last at global step %d)"
            % (
                scales[-1]["next_scale"],
                len(skips),
                skips[-1]["global_step"],
            )
            in text
        )
        assert "%.3g → %.3g" % (scales[0]["scale"], scales[-1]["next_scale"]) in text


async def test_failed_run_shows_the_first_non_finite_value(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "train_overflow.jsonl", exit_record=FAILED_EXIT)
    origin = [e for e in read_all(str(FIXTURES / "train_overflow.jsonl")) if e.get("id") == "overflow-origin"][-1]
    assert origin["evidence"]["bad"]["cell"] == "layer.2.Gain"
    async with app.run_test(size=(200, 40)) as pilot:
        await _show_layers(pilot)
        text = text_of(app, "#layers").replace("\n", "")
        assert "first non-finite value:" in text and origin["detail"][:80] in text


async def test_layers_table_follows_monitor_events_as_they_arrive(tmp_path, monkeypatch):
    """A running job: the recorded run's lines appended in two halves, the table showing each half's last sample."""
    lines = (FIXTURES / "train_monitor.jsonl").read_text().splitlines(keepends=True)
    monitor_at = [i for i, line in enumerate(lines) if '"type":"monitor"' in line]
    cut = monitor_at[len(monitor_at) // 2] + 1  # through the middle monitor event
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    cfg = copy.deepcopy(defaults())
    cfg["train"]["monitor"]["every"] = 2
    first = [json.loads(line) for line in lines[:cut]]
    sid = make_recorded_session(tmp_path, [("train-001", "train", first, None)], cfg=cfg)
    events = tmp_path / sid / "jobs" / "train-001" / "events.jsonl"
    mark_running(events.parent)
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())
    seen = [json.loads(lines[i]) for i in monitor_at]
    half = sum(len(e["global_step"]) for e in seen[: len(seen) // 2 + 1])
    async with app.run_test(size=(120, 36)) as pilot:
        await _show_layers(pilot)
        view = app.views["training"]
        await until(pilot, lambda: view.train_state.count == half)
        await settled(pilot)
        assert "%d samples to step %d;" % (half, seen[len(seen) // 2]["global_step"][-1]) in text_of(app, "#layers")
        with open(str(events), "a", encoding="utf-8") as fh:
            fh.writelines(lines[cut:])
        total = sum(len(e["global_step"]) for e in seen)
        await until(pilot, lambda: view.train_state.count == total)
        await settled(pilot)
        assert "%d samples to step %d;" % (total, seen[-1]["global_step"][-1]) in text_of(app, "#layers")


async def test_loss_scaled_monitored_run_counts_the_skipped_samples(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "train_loss_scale_monitor.jsonl", every=2)
    events = read_all(str(FIXTURES / "train_loss_scale_monitor.jsonl"))
    monitor = [e for e in events if e["type"] == "monitor"]
    marked = [s for e in monitor for s, skip in zip(e["global_step"], e.get("skipped") or []) if skip]
    overflows = {e["global_step"] for e in events if e["type"] == "loss_scale" and e["overflow"]}
    assert marked and set(marked) <= overflows  # the recorded run marked only steps the scale skipped
    samples = sum(len(e["global_step"]) for e in monitor)
    async with app.run_test(size=(160, 40)) as pilot:
        await _show_layers(pilot)
        text = text_of(app, "#layers")
        assert (
            "%d samples to step %d (%d skipped by the loss scale, last at step %d: not judged);"
            % (samples, monitor[-1]["global_step"][-1], len(marked), marked[-1])
            in text
        )
        assert app.views["training"].train_state.flags == []
