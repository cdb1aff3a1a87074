"""DataView: folding recorded data-job events, following the newest job, loading the preview once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from tests.support.views import changed, feed
from workbench.events.protocol import EventReader, read_all
from workbench.fold.record import SessionModel
from workbench.fold.tracker import TrackedJob
from workbench.session.store import JobStatus
from workbench.views.data import DataView, read_preview

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"


def job(tmp_path: Path, jid: str, created: float, preview: str = "") -> TrackedJob:
    """A job folder as the tracker knows it, with the recorded preview in its artifacts."""
    folder = tmp_path / jid
    (folder / "artifacts").mkdir(parents=True)
    if preview:
        shutil.copyfile(str(FIXTURES / preview), str(folder / "artifacts" / "preview.npz"))
    spec = {"jid": jid, "kind": "data", "created": created}
    return TrackedJob(folder, spec, EventReader(str(folder / "events.jsonl")), JobStatus("ok", "", 1.0))


def test_folds_the_recorded_run(tmp_path):
    view = DataView(SessionModel())
    data = job(tmp_path, "data-001", 1.0, "data_ok_preview.npz")
    feed(view, data, read_all(str(FIXTURES / "data_ok.jsonl")))
    assert view.counts == {"train": [5400] * 10, "val": [600] * 10, "test": [1000] * 10}
    assert view.seed == 37 and view.val_fraction == 0.1 and not view.synthetic and view.error is None
    assert [f["name"] for f in view.files][0] == "train-images-idx3-ubyte.gz"
    assert view.check_tally() == {"observed-pass": 12}
    assert view.preview is not None and len(view.samples(3)) == 4
    assert all(img.shape == (28, 28) and img.dtype == np.uint8 for _, img in view.samples(3))
    assert view.samples(10) == []


def test_counts_show_before_the_result_arrives(tmp_path):
    events = read_all(str(FIXTURES / "data_ok.jsonl"))
    cut = next(i for i, e in enumerate(events) if e.get("id") == "data.counts") + 1
    view = DataView(SessionModel())
    feed(view, job(tmp_path, "data-001", 1.0), events[:cut])
    assert view.counts["val"] == [600] * 10 and not view.result
    assert len(view.files) == 4  # from the per-file checks so far


def test_follows_the_newest_job_and_ignores_older_ones(tmp_path):
    view = DataView(SessionModel())
    old = job(tmp_path, "data-001", 1.0, "data_ok_preview.npz")
    new = job(tmp_path, "data-002", 2.0)
    ok_events = read_all(str(FIXTURES / "data_ok.jsonl"))
    feed(view, old, ok_events[:3])
    feed(view, new, read_all(str(FIXTURES / "data_missing.jsonl")))
    feed(view, old, ok_events[3:])  # the older job's late events do not take the screen back
    assert view.jid == "data-002" and view.error and "train-labels-idx1-ubyte" in view.error["message"]
    assert view.counts == {} and view.preview is None
    changed(view, old)
    assert view.jid == "data-002"


def test_synthetic_flag_and_a_bad_preview_file(tmp_path):
    view = DataView(SessionModel())
    data = job(tmp_path, "data-001", 1.0)
    (data.dir / "artifacts" / "preview.npz").write_bytes(b"not a zip")
    feed(view, data, read_all(str(FIXTURES / "data_synthetic.jsonl")))
    assert view.synthetic and view.preview is None
    assert "preview.npz" in view.preview_error and "cannot be read" in view.preview_error


def test_read_preview_matches_the_recorded_indices():
    preview = read_preview(FIXTURES / "data_ok_preview.npz")
    summary = [e for e in read_all(str(FIXTURES / "data_ok.jsonl")) if e["type"] == "result"][0]["summary"]
    for cls in range(10):
        assert [i for i, _ in preview.of_class(cls)] == summary["preview_indices"][str(cls)]
    assert json.loads(json.dumps(summary["first_train_labels"])) == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
