"""The shift job, run for real: a tiny training run, frozen, then the candidate on shifted and own images."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.analysis import shift as shiftmod
from workbench.data.dataset import CLASS_NAMES
from workbench.data.locate import locate
from workbench.events.protocol import read_all
from workbench.session.store import SessionStore

JOB_TIMEOUT_S = 600
SMALL = ["shift.per_class=10", "shift.severities=[1,5]", "shift.sets=[brightness,inverted,rotate,flip]"]


def run_job(root: Path, sid: str, kind: str, *sets: str) -> subprocess.CompletedProcess:
    """`ms-workbench run KIND` in a real subprocess, in session `sid`."""
    args = ["run", kind, "--sessions", root, "--session", sid]
    for item in sets:
        args += ["--set", item]
    return run_cli(*args, timeout=JOB_TIMEOUT_S)


def newest(root: Path, sid: str, kind: str) -> Path:
    """The newest job folder of a kind."""
    return sorted((root / sid / "jobs").glob(kind + "-*"))[-1]


def result_of(job_dir: Path) -> dict:
    """The job's result summary, after checking every event line against the protocol."""
    assert_events_valid(job_dir)
    return next(e["summary"] for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "result")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """A session with one real training run (official data, 1 epoch on 512 images), not yet frozen."""
    root = tmp_path_factory.mktemp("shift-sessions")
    sid = SessionStore(root).create(["pytest"])
    proc = run_job(root, sid, "train", "train.epochs=1", "train.train_limit=512", "train.val_limit=256")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"root": root, "sid": sid}


@pytest.fixture(scope="module")
def frozen(session):
    """The same session after a refused shift run and a freeze."""
    refused = run_job(session["root"], session["sid"], "shift", *SMALL)
    session["refused"] = (refused, newest(session["root"], session["sid"], "shift"))
    done = run_cli("freeze", "--sessions", session["root"], session["sid"], timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return session


def test_without_a_frozen_candidate_the_job_stops_and_names_the_freeze_command(frozen):
    proc, job_dir = frozen["refused"]
    assert proc.returncode != 0
    fin = [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "finished"][0]
    assert "no frozen candidate" in fin["error"]["message"]
    assert fin["error"]["hint"].startswith("ms-workbench freeze") and frozen["sid"] in fin["error"]["hint"]
    assert not (job_dir / "artifacts" / "failures.npz").exists()


def test_the_candidate_on_built_in_shifts(frozen):
    limits = "acceptance.max_shift_drop={inverted: 0.0, rotate: 1.0}"
    proc = run_job(frozen["root"], frozen["sid"], "shift", *SMALL, limits)
    job_dir = newest(frozen["root"], frozen["sid"], "shift")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = result_of(job_dir)
    judged = [
        e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "check" and e["id"] == "new-distribution"
    ]
    assert len(judged) == 1 and judged[0]["status"] == "observed-fail"
    assert "inverted: worst drop" in judged[0]["detail"] and "over limit 0.000" in judged[0]["detail"]
    assert "rotate: worst drop" in judged[0]["detail"] and "within limit 1.000" in judged[0]["detail"]
    cand = json.loads((frozen["root"] / frozen["sid"] / "candidate.jsonl").read_text().splitlines()[-1])
    assert result["subject"]["sha256"] == cand["sha256"]
    checks = [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "check"]
    assert all(c.get("subject") == "checkpoint:" + cand["sha256"] for c in checks if c["id"] == "checkpoint")
    assert result["images"]["n"] == 100 and result["images"]["of"] == 10000
    rows = {(r["set"], r["severity"]): r for r in result["sets"]}
    assert set(rows) == {(s, v) for s in ("brightness", "inverted", "rotate", "flip") for v in (1, 5)}
    for row in rows.values():
        assert row["n"] == 100 and 0 <= row["accuracy"] <= 1 and len(row["recall_drop"]) == 10
        assert row["drop"] == pytest.approx(result["clean"]["macro_f1"] - row["macro_f1"])
    assert rows[("inverted", 5)]["macro_f1"] < result["clean"]["macro_f1"]  # a fully inverted set always hurts
    for block in result["failures"]:
        assert block["severity"] == 5 and len(block["cases"]) <= 8
        confidences = [c["confidence"] for c in block["cases"]]
        assert confidences == sorted(confidences, reverse=True)
        assert all(c["true"] != c["pred"] for c in block["cases"])
    with np.load(str(job_dir / "artifacts" / "failures.npz")) as npz:
        assert {k: npz[k].shape[0] for k in npz.files} == {b["set"]: len(b["cases"]) for b in result["failures"]}
    assert Image.open(job_dir / "artifacts" / "failures.png").format == "PNG"
    scope = shiftmod.scope(result)
    assert any(line.startswith("inverted:") for line in scope["breaks"])


def _own_folder(folder: Path) -> None:
    """Six PNGs of test images (two inverted as photos are), one corrupt file and one without a label row."""
    data = locate(None)[0]
    with gzip.open(str(data / "t10k-images-idx3-ubyte.gz")) as fh:
        images = np.frombuffer(fh.read()[16:], np.uint8).reshape(-1, 28, 28)
    with gzip.open(str(data / "t10k-labels-idx1-ubyte.gz")) as fh:
        labels = np.frombuffer(fh.read()[8:], np.uint8)
    folder.mkdir()
    rows = ["file,label"]
    for i in range(6):
        pixels = 255 - images[i] if i < 2 else images[i]
        Image.fromarray(pixels).resize((56, 56)).save(folder / ("img%d.png" % i))
        rows.append("img%d.png,%s" % (i, CLASS_NAMES[labels[i]] if i % 2 else labels[i]))
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    rows.append("broken.png,3")
    Image.fromarray(images[7]).save(folder / "nolabel.png")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")


def test_own_images_a_bad_file_stops_everything_by_default_and_is_listed_when_skipped(frozen, tmp_path):
    folder = tmp_path / "photos"
    _own_folder(folder)
    proc = run_job(frozen["root"], frozen["sid"], "shift", *SMALL, "shift.from=%s" % folder)
    job_dir = newest(frozen["root"], frozen["sid"], "shift")
    assert proc.returncode != 0
    fin = [e for e in read_all(str(job_dir / "events.jsonl")) if e["type"] == "finished"][0]
    assert "broken.png" in fin["error"]["message"] and "cannot be decoded" in fin["error"]["message"]
    assert not any((job_dir / "artifacts").iterdir()) if (job_dir / "artifacts").exists() else True

    proc = run_job(frozen["root"], frozen["sid"], "shift", *SMALL, "shift.from=%s" % folder, "shift.on_bad=skip")
    job_dir = newest(frozen["root"], frozen["sid"], "shift")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    events = read_all(str(job_dir / "events.jsonl"))
    assert not [e for e in events if e["type"] == "check" and e["id"] == "new-distribution"]  # no limit: no verdict
    own = result_of(job_dir)["own"]
    assert own["n"] == 6 and sorted(own["inverted"]) == ["img0.png", "img1.png"]
    assert {s["file"] for s in own["skipped"]} == {"broken.png", "nolabel.png"}
    assert any("no row in labels.csv" in s["why"] for s in own["skipped"])


def test_the_record_states_the_scope_and_shows_the_evaluation(frozen):
    proc = run_job(frozen["root"], frozen["sid"], "shift", *SMALL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jid = newest(frozen["root"], frozen["sid"], "shift").name
    done = run_cli("export", "--sessions", frozen["root"], frozen["sid"], "--no-screenshots", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = frozen["root"] / frozen["sid"] / "export"
    text = (out / "report.md").read_text()
    first_screen = text.split("## 1. Session")[0]
    assert "## Scope of use (new-distribution data)" in first_screen
    assert "%s evaluated the candidate train-001" % jid in first_screen
    result = result_of(frozen["root"] / frozen["sid"] / "jobs" / jid)
    for line in shiftmod.scope(result)["breaks"]:
        assert "**Does not hold** — " + line in first_screen
    assert (out / "figures" / ("%s-failures.png" % jid)).read_bytes() == (
        frozen["root"] / frozen["sid"] / "jobs" / jid / "artifacts" / "failures.png"
    ).read_bytes()
    assert (out / "figures" / ("%s-heat-map.svg" % jid)).is_file()
    assert "No shift job ended ok" not in text
