"""The record keeps a training job's live device samples as metrics/device.csv and a figure."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

from tests.ui.recorded import FIXTURES
from workbench.report import metrics_csv, svg

SAMPLES = [{k: v for k, v in json.loads(line).items() if k not in ("v", "type")}
           for line in (FIXTURES / "device_samples_310p3.jsonl").read_text().splitlines()]


def test_device_csv_has_one_row_per_sample_in_order():
    text = metrics_csv.device_csv([{"jid": "train-001", "device_samples": SAMPLES}, {"jid": "data-001"}])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == metrics_csv.DEVICE_HEADER and len(rows) == 24
    assert [float(r["ai_core_pct"]) for r in rows[:6]] == [0.0, 0.0, 12.0, 35.0, 61.0, 78.0]
    assert {(r["job"], r["npu"], r["chip"], r["mem_total_mb"]) for r in rows} == {("train-001", "0", "1", "8192.0")}
    assert rows[0]["health"] == ""  # not sampled (-t common and usages only): empty, not "None"


def test_device_figure_is_a_valid_svg_with_three_series():
    doc = svg.device_svg("train-001", SAMPLES)
    ET.fromstring(doc)
    assert "train-001: device (npu-smi)" in doc and "AI Core %" in doc and "temperature °C" in doc
    assert "NPU 0 chip 1, 24 npu-smi samples" in doc
