"""The Training screen on data-parallel runs: per-rank step times (slowest highlighted), the
throughput of all ranks, and a crashed rank named in the error panel. Fed by events recorded from
real 2-rank msrun runs on CPU (tests/fixtures/events/record_parallel_events.py)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from rich.console import Console

from screens.app import WorkbenchApp
from screens.training import rank_rows
from tests.support.pilot import settled
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, wait_ingested
from tests.support.views import feed
from workbench.config.layers import defaults
from workbench.fold.record import SessionModel
from workbench.session.store import SessionStore
from workbench.views.training import TrainingView

OK_EVENTS = FIXTURES / "train_parallel.jsonl"
CRASH_EVENTS = FIXTURES / "train_parallel_crash.jsonl"
CRASH_EXIT = dict(OK_EXIT, returncode=1, duration_s=19.0)


def parallel_cfg() -> dict:
    cfg = defaults()
    cfg["train"]["parallel"]["workers"] = 2
    return cfg


def recorded(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def text_of(widget) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(widget.content)
    return out.getvalue()


def expected_rank_numbers():
    """Per rank, the median of its steady steps and its run perf images/s, straight from the file."""
    medians, images = {}, {}
    for ev in recorded(OK_EVENTS):
        if ev["type"] == "step" and ev["phase"] == "steady":
            medians.setdefault(ev["rank"], []).append(ev["step_ms"])
        if ev["type"] == "perf" and ev.get("scope") == "run":
            images[ev["rank"]] = ev["steady"]["images_per_s"]
    medians = {r: sorted(v)[len(v) // 2] for r, v in medians.items()}
    return medians, images


async def open_training(tmp_path, events, exit_record, size=(120, 36)):
    sid = make_recorded_session(tmp_path / "sessions", [("train-001", "train", events, exit_record)], parallel_cfg())
    app = WorkbenchApp(SessionStore(tmp_path / "sessions"), sid, parallel_cfg())
    return app, size


async def test_per_rank_step_times_and_global_throughput(tmp_path):
    app, size = await open_training(tmp_path, OK_EVENTS, OK_EXIT)
    medians, images = expected_rank_numbers()
    assert sorted(medians) == [0, 1] and sorted(images) == [0, 1]
    async with app.run_test(size=size) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await settled(pilot)
        view = app.views["training"]
        assert view.rank_step_ms == medians
        assert view.slowest_rank == max(medians, key=medians.get)
        assert abs(view.global_images_per_s() - (images[0] + images[1])) < 1e-6
        panel = text_of(app.screen.query_one("#perf"))
        assert "r0 %.1f ms  r1 %.1f ms" % (medians[0], medians[1]) in panel
        assert re.search(r"all ranks +%.0f images/s \(sum of 2\)" % (images[0] + images[1]), panel), panel
        assert [e["rank"] for e in view.epochs] == [0]  # validation is rank 0's alone


def test_slowest_rank_is_highlighted_and_plain_mode_uses_reverse():
    view = TrainingView(SessionModel())

    class Job:
        kind, jid, dir = "train", "train-001", Path("/nonexistent")

    for ev in recorded(OK_EVENTS):
        feed(view, Job, [ev])
    slowest = view.slowest_rank
    for plain, style in ((False, "bold red"), (True, "reverse")):
        (label, ranks), _ = rank_rows(view, plain)
        assert label == "per rank"
        styled = [ranks.plain[s.start : s.end] for s in ranks.spans if str(s.style) == style]
        assert styled == ["r%d %.1f ms" % (slowest, view.rank_step_ms[slowest])]


def test_one_rank_is_not_highlighted():
    view = TrainingView(SessionModel())

    class Job:
        kind, jid, dir = "train", "train-001", Path("/nonexistent")

    for ev in recorded(OK_EVENTS):
        if ev.get("rank") in (None, 0):
            feed(view, Job, [ev])
    (label, ranks), _ = rank_rows(view)
    assert view.slowest_rank is None and not ranks.spans


async def test_a_crashed_rank_is_named_in_the_error_panel(tmp_path):
    app, size = await open_training(tmp_path, CRASH_EVENTS, CRASH_EXIT, size=(80, 24))
    async with app.run_test(size=size) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        await settled(pilot)
        view = app.views["training"]
        assert view.state == "failed"
        assert view.error["type"] == "RankCrashed" and view.error["signal"] == "SIGSEGV"
        panel = text_of(app.screen.query_one("#error"))
        assert "RankCrashed: rank 1 (pid 4243) died with SIGSEGV" in panel
        assert "hint: msrun stopped the other ranks; see msrun_logs/worker_1.log" in panel
        assert sorted(view.rank_step_ms) == [0, 1]
