"""The Training screen's live device panel on recorded `device` events (tests/fixtures/events/record_device_events.py)."""

from __future__ import annotations

import json
from collections import deque

import pytest
from textual.app import App, ComposeResult

from screens.widgets.device_panel import DevicePanel, panel_text
from tests.support.pilot import settled
from tests.support.recorded import FIXTURES
from workbench.fold.record import JobRecord

SAMPLES = [json.loads(line) for line in (FIXTURES / "device_samples_310p3.jsonl").read_text().splitlines()]


class PanelApp(App):
    """The panel alone, fed with what a train job's record folded."""

    sid = None  # no session: tests.support.pilot.settled has nothing to wait for but the drawing

    def __init__(self, samples, target):
        super().__init__()
        self.samples, self.target = samples, target

    def compose(self) -> ComposeResult:
        yield DevicePanel()

    def on_mount(self) -> None:
        self.query_one(DevicePanel).show(self.samples, self.target)


def folded(events):
    """The record's device series after folding the events (what the view hands the panel)."""
    record = JobRecord("train-001")
    record.ingest(
        [
            {
                "v": 1,
                "seq": 0,
                "t": 1700000099.0,
                "type": "started",
                "kind": "train",
                "pid": 1,
                "python": "python3",
                "argv": [],
                "version": "0",
                "device": {"target": "Ascend", "id": 1},
            }
        ]
        + events
    )
    return record.device_samples


@pytest.mark.parametrize(
    "name,samples,target",
    [
        ("ascend-24-samples", SAMPLES, "Ascend"),
        ("ascend-first-sample", SAMPLES[:1], "Ascend"),
        ("ascend-waiting", [], "Ascend"),
        ("cpu-not-run", [], "CPU"),
    ],
)
def test_snapshot(snap_compare, name, samples, target):
    async def show(pilot):
        await settled(pilot)

    assert snap_compare(
        PanelApp(folded(samples) if samples else deque(), target), terminal_size=(72, 7), run_before=show
    )


def test_cpu_says_not_run_and_draws_nothing():
    text = panel_text([], "CPU").plain
    assert text == "Device (npu-smi)  not-run: target CPU"


def test_series_and_latest_values_come_from_the_recorded_samples():
    text = panel_text(folded(SAMPLES), "Ascend").plain.splitlines()
    assert text[0].startswith("Device (npu-smi)  NPU 0 chip 1") and "24 samples" in text[0]
    assert [line.split()[0] for line in text[1:]] == ["AI", "memory", "temp", "power", "card"]
    assert text[1].endswith(" 90 %") and text[2].endswith(" 3604 / 8192 MB") and text[3].endswith(" 70 °C")
    # 310P: the chip has no power reading of its own; the card's is its own row, never the chip's.
    assert text[4].split() == ["power", "—"] and text[5].startswith("card pwr") and text[5].endswith(" 45.2 W")


def test_no_card_row_where_samples_carry_no_card_power():
    chip_only = [dict(s, power_w=133.9, card_power_w=None) for s in folded(SAMPLES)]
    text = panel_text(chip_only, "Ascend").plain.splitlines()
    assert [line.split()[0] for line in text[1:]] == ["AI", "memory", "temp", "power"]
    assert text[4].endswith(" 133.9 W")
    assert "▁" in text[1] and "█" in text[1]  # the ramp and the dip are drawn
