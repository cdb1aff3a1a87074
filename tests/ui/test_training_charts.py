"""The Training charts on a recorded real run: compile and warm-up do not set the loss scale (they are marked
above it), the step chart holds steady steps only, and its caption and the perf pane give one window's figures."""

from __future__ import annotations

import json

from screens.app import WorkbenchApp
from screens.widgets.spark import CLIPPED, Spark
from tests.support.pilot import until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, text_of, wait_ingested
from workbench.config.layers import defaults
from workbench.session.store import SessionStore


def _app(tmp_path) -> WorkbenchApp:
    cfg = defaults()
    cfg["data"]["source"] = "synthetic"
    cfg["train"].update(epochs=2, warmup_steps=3)
    sid = make_recorded_session(tmp_path, [("train-001", "train", FIXTURES / "train_ok.jsonl", OK_EXIT)], cfg=cfg)
    return WorkbenchApp(SessionStore(tmp_path), sid, cfg)


async def test_charts_scale_from_steady_steps_and_agree_with_the_perf_pane(tmp_path):
    events = [json.loads(line) for line in open(FIXTURES / "train_ok.jsonl")]
    compile_ms = next(e["step_ms"] for e in events if e["type"] == "step" and e["phase"] == "compile")
    first_loss = next(e["loss"] for e in events if e["type"] == "step")
    app = _app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        await wait_ingested(pilot, app)
        view = app.views["training"]
        loss = app.screen.query_one("#loss", Spark)
        await until(pilot, lambda: loss.y_range is not None and CLIPPED in text_of(app, "#loss-label"))
        lo, hi = loss.y_range
        assert "y %.3f–%.3f" % (lo, hi) in text_of(app, "#loss-label")
        assert hi < first_loss  # the compile step's loss is above the scale, not its top
        assert CLIPPED in "".join(loss.render_line(0).text)  # and marked where it is drawn
        steps = app.screen.query_one("#steps", Spark)
        assert steps.data and max(steps.data) < compile_ms  # the compile step is not in the step chart
        stats = view.step_window()
        caption, pane = text_of(app, "#step-label"), text_of(app, "#perf")
        assert stats.window in caption and stats.window in pane
        assert "%.1f–%.1f med %.1f p95 %.1f" % (stats.min, stats.max, stats.median, stats.p95) in caption
        assert "median %.2f ms  p95 %.2f ms" % (stats.median, stats.p95) in pane
        assert "job, run" in pane  # the job's own figures, under their own name
