"""The record keeps a training job's device samples over the whole run (thinned) as metrics/device.csv and a figure."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

from tests.support.recorded import FIXTURES
from workbench.record import metrics_csv
from workbench.render import svg

SAMPLES = [
    {k: v for k, v in json.loads(line).items() if k not in ("v", "type")}
    for line in (FIXTURES / "device_samples_310p3.jsonl").read_text().splitlines()
]


def test_device_csv_has_one_row_per_sample_in_order():
    text = metrics_csv.device_csv([{"jid": "train-001", "device_samples": SAMPLES}, {"jid": "data-001"}])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == metrics_csv.DEVICE_HEADER and len(rows) == 24
    assert [float(r["ai_core_pct"]) for r in rows[:6]] == [0.0, 0.0, 12.0, 35.0, 61.0, 78.0]
    assert {(r["job"], r["npu"], r["chip"], r["mem_total_mb"]) for r in rows} == {("train-001", "0", "1", "8192.0")}
    assert rows[0]["health"] == ""  # not sampled (-t common and usages only): empty, not "None"
    # 310P: the card's power in the card's column, the chip's own column empty.
    assert {(r["power_w"], r["card_power_w"]) for r in rows} == {("", "45.2")}


def test_device_figure_is_a_valid_svg_with_three_series():
    doc = svg.device_svg("train-001", SAMPLES)
    ET.fromstring(doc)
    assert "train-001: device (npu-smi)" in doc and "AI Core %" in doc and "temperature °C" in doc
    assert "NPU 0 chip 1, 24 npu-smi samples" in doc


def test_a_long_run_keeps_a_bounded_thinned_history_from_first_to_last_sample(tmp_path):
    from workbench.events.protocol import encode
    from workbench.fold.record import DEVICE_HISTORY, DEVICE_SAMPLES, JobRecord
    from workbench.record.collect import collect
    from workbench.session.store import SessionStore
    from workbench.system.atomic import write_json

    base = json.loads((FIXTURES / "device_samples_310p3.jsonl").read_text().splitlines()[0])
    events = [dict(base, seq=n, t=1000.0 + n, ai_core_pct=float(n % 100)) for n in range(10000)]
    record = JobRecord("train-001", "train")
    record.ingest(events)
    history = record.device_history.items()
    assert len(history) <= DEVICE_HISTORY + 1
    assert history[0][0] == 0 and history[0][1]["t"] == 1000.0  # the first sample …
    assert history[-1][0] == 9999 and history[-1][1]["t"] == 10999.0  # … and the last
    every = record.device_history.stride
    assert every > 1 and all(n % every == 0 for n, _ in history[:-1])  # evenly thinned: every k-th sample
    assert len(history) >= 10000 // every  # nothing else dropped
    assert [d["seq"] for d in record.device_samples] == list(range(10000 - DEVICE_SAMPLES, 10000))  # the live window

    store = SessionStore(tmp_path)
    sid = store.create()
    job = store.root / sid / "jobs" / "train-001"
    job.mkdir(parents=True)
    write_json(
        job / "job.json",
        {
            "jid": job.name,
            "kind": "train",
            "created": 1.0,
            "command": ["x"],
            "device": {"resolved": "Ascend", "id": 0},
            "env": {},
        },
    )
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0})
    (job / "events.jsonl").write_text("".join(encode(ev) for ev in events))
    run = next(j for j in collect(store, sid)["jobs"] if j["jid"] == "train-001")
    assert run["device_seen"] == 10000 and run["device_every"] == every
    assert [d["sample"] for d in run["device_samples"]] == [n for n, _ in history]
    rows = list(csv.DictReader(io.StringIO(metrics_csv.device_csv([run]))))
    assert rows[0]["t"] == "1000.0" and rows[-1]["t"] == "10999.0" and rows[0]["kept_every"] == str(every)


def test_the_device_csv_and_figure_say_the_samples_are_thinned():
    samples = [dict(SAMPLES[0], t=float(n), sample=n) for n in range(0, 64, 8)]
    text = metrics_csv.device_csv([{"jid": "train-001", "device_samples": samples, "device_every": 8}])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["sample"] for r in rows] == [str(n) for n in range(0, 64, 8)]
    assert {r["kept_every"] for r in rows} == {"8"}
    doc = svg.device_svg("train-001", samples, every=8, seen=64)
    ET.fromstring(doc)
    assert "8 of 64 npu-smi samples: every 8-th, thinned over the whole run" in doc


def test_the_text_log_names_card_power_as_the_cards():
    from workbench.events.text import format_event

    line = format_event(dict(SAMPLES[0], type="device"))
    assert line == "npu 0 chip 1: AI Core 0%, memory 983/8192 MB, 52 °C, card 45.2 W, None", line
    chip = format_event(dict(SAMPLES[0], type="device", power_w=133.9, card_power_w=None))
    assert ", 52 °C, 133.9 W, " in chip
