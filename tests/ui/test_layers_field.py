"""The run form's `layers every` field: the course flow watches its layers on CPU (ui.monitor_every), a GPU or NPU
run starts unmonitored, the field follows the device until someone types into it, and a start carries it."""

from __future__ import annotations

from screens.app import WorkbenchApp
from tests.support.pilot import until
from tests.support.recorded import make_recorded_session, wait_ingested
from workbench.config.layers import defaults
from workbench.session.store import SessionStore
from workbench.views.training import form_layers_every


def _app(tmp_path, target="CPU", every=0, ui_every=None) -> WorkbenchApp:
    cfg = defaults()
    cfg["device"]["target"] = target
    cfg["train"]["monitor"]["every"] = every
    if ui_every is not None:
        cfg["ui"]["monitor_every"] = ui_every
    sid = make_recorded_session(tmp_path, [], cfg=cfg)
    return WorkbenchApp(SessionStore(tmp_path), sid, cfg)


async def _training(pilot, app):
    await pilot.press("3")
    await wait_ingested(pilot, app)
    await until(pilot, lambda: app.screen.query("#f-layers"))


def _layers(app) -> str:
    return app.screen.query_one("#f-layers").value


def test_where_the_field_starts():
    cfg = defaults()
    assert cfg["train"]["monitor"]["every"] == 0  # a headless run (the board's) is not monitored unless asked
    assert form_layers_every(cfg, "CPU") == cfg["ui"]["monitor_every"] == 10
    assert form_layers_every(cfg, "Ascend") == form_layers_every(cfg, "GPU") == 0
    cfg["train"]["monitor"]["every"] = 3
    assert form_layers_every(cfg, "Ascend") == 3  # what the config asks is kept on any device
    cfg["train"]["monitor"]["every"], cfg["ui"]["monitor_every"] = 0, 0
    assert form_layers_every(cfg, "CPU") == 0


async def test_a_cpu_run_started_from_the_form_samples_every_tenth_step(tmp_path):
    app = _app(tmp_path)
    started = []
    app.start_job = lambda kind, overrides=None: started.append((kind, overrides))
    async with app.run_test(size=(80, 24)) as pilot:
        await _training(pilot, app)
        assert _layers(app) == "10"
        await pilot.press("s")
        await until(pilot, lambda: started, what="the start")
    assert started[0][0] == "train" and started[0][1]["train"]["monitor"]["every"] == 10


async def test_the_field_follows_the_device_until_someone_types_into_it(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await _training(pilot, app)
        device = app.screen.query_one("#f-device")
        device.value = "Ascend"
        await until(pilot, lambda: _layers(app) == "0", what="off for an NPU run")
        device.value = "CPU"
        await until(pilot, lambda: _layers(app) == "10", what="on again for CPU")
        device.value = "auto"
        want = "10" if app.device["target"] == "CPU" else "0"  # auto: what the app decided for this machine
        await until(pilot, lambda: _layers(app) == want)
        device.value = "CPU"
        await until(pilot, lambda: _layers(app) == "10")
        app.screen.query_one("#f-layers").value = "25"
        device.value = "Ascend"
        await pilot.pause()
        assert _layers(app) == "25"  # typed: kept
        assert app.screen.form_overrides()["train"]["monitor"]["every"] == 25


async def test_the_config_decides_over_the_course_default(tmp_path):
    app = _app(tmp_path, target="Ascend", every=5)
    async with app.run_test(size=(120, 36)) as pilot:
        await _training(pilot, app)
        assert _layers(app) == "5"
    app = _app(tmp_path / "off", ui_every=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await _training(pilot, app)
        assert _layers(app) == "0"
