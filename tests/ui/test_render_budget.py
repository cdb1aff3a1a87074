"""The UI must not slow the job: hidden screens do not redraw, keys are handled during bursts."""

import json

from textual.binding import Binding

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import make_recorded_session, mark_running
from workbench.config.layers import defaults
from workbench.events.protocol import encode
from workbench.session.store import SessionStore


class ProbeApp(WorkbenchApp):
    """The app with one binding that records when its handler ran."""

    BINDINGS = WorkbenchApp.BINDINGS + [Binding("f12", "probe", "probe", show=False)]
    handled = 0

    def action_probe(self) -> None:
        self.handled += 1


def _append_steps(path, start, n):
    with open(path, "a") as fh:
        for i in range(start, start + n):
            fh.write(
                encode(
                    {
                        "v": 1,
                        "seq": i,
                        "t": 0.0,
                        "type": "step",
                        "epoch": 1,
                        "step": i + 1,
                        "loss": 1.0 / (i + 1),
                        "step_ms": 2.0,
                        "batch_size": 64,
                    }
                )
            )


def _running_train(tmp_path):
    """A session whose train-001 is running and has written only its `started` line: (sid, events file)."""
    started = {
        "v": 1,
        "seq": 0,
        "t": 0.0,
        "type": "started",
        "kind": "train",
        "pid": 1,
        "python": "p",
        "argv": [],
        "version": "0.1.0",
        "device": {"requested": "CPU", "resolved": "CPU", "id": 0},
    }
    sid = make_recorded_session(tmp_path, [("train-001", "train", [started], None)])
    events = tmp_path / sid / "jobs" / "train-001" / "events.jsonl"
    mark_running(events.parent)
    return sid, events


async def test_hidden_screen_does_not_redraw_while_events_arrive(tmp_path):
    sid, events = _running_train(tmp_path)
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        training = app.screen
        await until(pilot, lambda: training.redraws >= 1)
        await pilot.press("6")  # Training is now hidden
        await settled(pilot)
        before_redraws, before_version = training.redraws, app.views["training"].version
        for k in range(5):
            _append_steps(events, 1 + 100 * k, 100)
            await until(pilot, lambda k=k: app.views["training"].steps_seen == 100 * (k + 1))
        await until(pilot, lambda: app.views["training"].steps_seen == 500)
        assert app.views["training"].version > before_version  # the model kept up ...
        assert training.redraws == before_redraws  # ... but the hidden screen drew nothing
        await pilot.press("3")
        await until(pilot, lambda: training.redraws == before_redraws + 1)  # one redraw on return


async def test_keys_are_handled_during_a_10000_event_burst(tmp_path):
    sid = make_recorded_session(tmp_path, [("drill-001", "drill", [], None)])
    events = tmp_path / sid / "jobs" / "drill-001" / "events.jsonl"
    mark_running(events.parent)
    app = ProbeApp(SessionStore(tmp_path), sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        _append_steps(events, 0, 10_000)
        pressed = 0
        while app.events_ingested < 10_000 or pressed < 5:
            await pilot.press("f12")
            pressed += 1  # each press lets the app run until it is idle again
            assert pressed < 2000
        await until(pilot, lambda: app.handled == pressed)
        assert app.events_ingested == 10_000
        assert json.loads(open(events).readlines()[-1])["seq"] == 9_999


async def test_following_steps_never_lays_out_the_training_screen_again(tmp_path):
    sid, events = _running_train(tmp_path)
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3")
        training = app.screen
        await until(pilot, lambda: training.redraws >= 1)
        await settled(pilot)
        layouts = []
        refresh_layout = training._refresh_layout

        def counted(size=None, scroll=False):
            if not scroll:
                layouts.append(training.redraws)
            return refresh_layout(size, scroll)

        training._refresh_layout = counted  # a full layout (reflow) of every widget on the screen
        before = training.redraws
        for k in range(4):
            _append_steps(events, 1 + 50 * k, 50)
            await until(pilot, lambda k=k: training.redraws > before + k)
        assert training.redraws >= before + 4
        assert layouts == []  # each redraw repainted what changed, nothing was laid out again
