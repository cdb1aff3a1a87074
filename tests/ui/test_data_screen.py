"""The Data screen fed by recorded data-job events (and the preview those runs wrote)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from screens.app import WorkbenchApp
from screens.widgets.pixels import ASCII_RAMP, UPPER_HALF, HalfBlockImage, ascii_lines, half_block_lines
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, text_of, wait_ingested
from workbench.config.layers import defaults
from workbench.events.protocol import validate_file
from workbench.session.store import SessionStore
from workbench.views.data import read_preview

FIXED_SID = "20250101-000000-data"  # the status bar shows the session id: keep snapshots stable
FAILED_EXIT = dict(OK_EXIT, returncode=1)


def config():
    cfg = defaults()
    cfg["device"]["target"] = "CPU"  # the status bar shows the device: do not depend on this machine
    return cfg


def recorded_app(root: Path, name: str, exit_record=OK_EXIT) -> WorkbenchApp:
    """An app on a session holding one data job that replays tests/fixtures/events/<name>.jsonl."""
    sid = make_recorded_session(root, [("data-001", "data", FIXTURES / (name + ".jsonl"), exit_record)], config())
    (root / sid).rename(root / FIXED_SID)
    info = json.loads((root / FIXED_SID / "session.json").read_text())
    (root / FIXED_SID / "session.json").write_text(
        json.dumps(dict(info, id=FIXED_SID, created=0.0, host="host", user="user"))
    )
    preview = FIXTURES / (name + "_preview.npz")
    if preview.exists():
        shutil.copyfile(str(preview), str(root / FIXED_SID / "jobs" / "data-001" / "artifacts" / "preview.npz"))
    return WorkbenchApp(SessionStore(root), FIXED_SID, config())


async def open_data_screen(pilot) -> None:
    """Switch to the Data screen and wait until it has drawn everything the events hold."""
    app = pilot.app
    await pilot.press("2")
    await wait_ingested(pilot, app)
    view = app.views["data"]
    await until(pilot, lambda: view.status and app.screen.drawn_version == view.version)
    await settled(pilot)


async def test_loaded_screen_shows_counts_contract_seed_and_real_pixels(tmp_path):
    app = recorded_app(tmp_path, "data_ok")
    async with app.run_test(size=(120, 36)) as pilot:
        await open_data_screen(pilot)
        view = app.views["data"]
        assert view.counts == {"train": [5400] * 10, "val": [600] * 10, "test": [1000] * 10}
        assert view.seed == 37 and not view.synthetic and view.state == "ok"
        counts = text_of(app, "#counts")
        assert "5400" in counts and "54000" in counts and "10000" in counts and "Ankle boot" in counts
        contract = text_of(app, "#contract")
        assert "c59f468a2f" in contract and "4 of 4 files verified" in contract and "pixel/255" in contract
        assert "seed 37" in contract and "0.2861" in contract
        # The four class-0 images are the recorded preview's pixels, drawn as half blocks.
        preview = read_preview(FIXTURES / "data_ok_preview.npz")
        images = [s.image for s in app.screen.slots if s.display]
        assert len(images) == 4
        first = preview.of_class(0)[0][1]
        assert images[0]._strips[0].text == UPPER_HALF * 28
        assert [seg.text for seg in images[0]._strips[5]] == [seg.text for seg in half_block_lines(first)[5]]
        assert "#%d" % preview.of_class(0)[0][0] in str(app.screen.slots[0].caption.content)


async def test_left_right_browse_the_classes(tmp_path):
    app = recorded_app(tmp_path, "data_ok")
    async with app.run_test(size=(120, 36)) as pilot:
        await open_data_screen(pilot)
        preview = read_preview(FIXTURES / "data_ok_preview.npz")
        await pilot.press("right", "right")
        assert app.screen.selected_class == 2
        assert "#%d" % preview.of_class(2)[0][0] in str(app.screen.slots[0].caption.content)
        assert "Pullover from the train split" in text_of(app, "#gallery-note")
        await pilot.press("left", "left", "left")
        assert app.screen.selected_class == 9
        assert "#%d" % preview.of_class(9)[0][0] in str(app.screen.slots[0].caption.content)


async def test_missing_file_shows_the_error_the_file_and_the_hint(tmp_path):
    app = recorded_app(tmp_path, "data_missing", FAILED_EXIT)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_data_screen(pilot)
        banner = text_of(app, "#banner")
        assert "train-labels-idx1-ubyte" in banner and "ms-workbench data fetch" in banner
        assert app.screen.query_one("#banner").has_class("error")
        assert "failed before writing its preview" in text_of(app, "#gallery-note")
        assert not any(s.display for s in app.screen.slots)


async def test_synthetic_is_flagged_and_low_bandwidth_draws_ascii(tmp_path):
    app = recorded_app(tmp_path, "data_synthetic")
    async with app.run_test(size=(120, 36)) as pilot:
        app.low_bandwidth = True  # set before the screen first draws
        await open_data_screen(pilot)
        assert app.views["data"].synthetic
        assert "SYNTHETIC DATA" in text_of(app, "#banner") and app.screen.query_one("#banner").has_class("synthetic")
        assert "SYNTHETIC" in text_of(app, "#headline") and "SYNTHETIC" in text_of(app, "#counts")
        strips = app.screen.slots[0].image._strips
        assert len(strips) == 14 and all(set(s.text) <= set(ASCII_RAMP) for s in strips)
        assert all(seg.style is None for s in strips for seg in s)  # no colours at all
        app.low_bandwidth = False  # switched back: the next redraw uses colour half blocks again
        await until(pilot, lambda: app.screen.slots[0].image._strips[0].text == UPPER_HALF * 28)


async def test_r_reruns_and_s_starts_a_real_job_with_a_new_seed(tmp_path):
    app = recorded_app(tmp_path, "data_ok")
    app.cfg["data"]["source"] = "synthetic"  # real jobs, on the small synthetic set to stay fast
    jobs = tmp_path / FIXED_SID / "jobs"
    async with app.run_test(size=(120, 36)) as pilot:
        await open_data_screen(pilot)
        view = app.views["data"]
        await pilot.press("r")
        await until(pilot, lambda: view.jid == "data-002" and view.state == "ok" and view.preview is not None, 60)
        assert json.loads((jobs / "data-002" / "config.json").read_text())["data"]["split_seed"] == 37
        await pilot.press("s")
        field = app.screen.query_one("#seed-input")
        assert app.screen.query_one("#seed-row").display and app.focused is field and field.value == "38"
        field.value = ""
        await pilot.press("4", "2", "enter")
        assert not app.screen.query_one("#seed-row").display
        await until(pilot, lambda: view.jid == "data-003" and view.state == "ok", 60)
        assert view.seed == 42 and view.synthetic
        assert json.loads((jobs / "data-003" / "config.json").read_text())["data"]["split_seed"] == 42
        await until(pilot, lambda: app.screen.drawn_version == view.version)
        assert "seed 42" in text_of(app, "#headline") and "SYNTHETIC DATA" in text_of(app, "#banner")
    for jid in ("data-002", "data-003"):
        assert validate_file(str(jobs / jid / "events.jsonl")) == []


async def test_bad_seed_is_refused_without_starting_a_job(tmp_path):
    app = recorded_app(tmp_path, "data_ok")
    async with app.run_test(size=(120, 36)) as pilot:
        await open_data_screen(pilot)
        await pilot.press("s")
        app.screen.query_one("#seed-input").value = "-3"
        await pilot.press("enter")
        await settled(pilot)
        assert app.screen.query_one("#seed-row").display  # still open for a correction
        assert sorted(p.name for p in (tmp_path / FIXED_SID / "jobs").iterdir()) == ["data-001"]
        await pilot.press("escape")
        assert not app.screen.query_one("#seed-row").display


def test_half_blocks_carry_both_pixel_rows():
    pixels = np.zeros((4, 3), dtype=np.uint8)
    pixels[0] = [255, 0, 0]
    pixels[1] = [0, 128, 0]
    lines = half_block_lines(pixels)
    assert len(lines) == 2
    first = lines[0][0]
    assert first.text == UPPER_HALF
    assert first.style.color.triplet == (255, 255, 255) and first.style.bgcolor.triplet == (0, 0, 0)
    second = lines[0][1]
    assert second.style.color.triplet == (0, 0, 0) and second.style.bgcolor.triplet == (128, 128, 128)
    assert lines[1][0].text == UPPER_HALF * 3  # an all-black row is one run
    assert ascii_lines(pixels) == ["+. ", "   "] and ascii_lines(np.full((2, 2), 255, np.uint8)) == ["@@"]
    with pytest.raises(ValueError):
        half_block_lines(np.zeros((2, 2), dtype=np.float32))


def test_widget_pads_to_its_width():
    image = HalfBlockImage(np.zeros((28, 28), dtype=np.uint8))
    assert len(image._strips) == 14 and all(s.cell_length == 28 for s in image._strips)


async def run_before(pilot) -> None:
    """Open the Data screen and let it draw every recorded event."""
    await open_data_screen(pilot)


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_snapshot_loaded(snap_compare, tmp_path, size):
    app = recorded_app(tmp_path, "data_ok")
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_snapshot_file_missing(snap_compare, tmp_path):
    app = recorded_app(tmp_path, "data_missing", FAILED_EXIT)
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)
