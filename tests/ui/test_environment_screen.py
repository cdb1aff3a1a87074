"""The Environment screen fed by recorded env jobs: snapshots, the detail pane, devices, the r and p keys."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from textual.widgets import DataTable, Static

from screens.app import WorkbenchApp
from tests.support.pilot import settled, until
from tests.support.recorded import FIXTURES, OK_EXIT, make_recorded_session, wait_ingested
from workbench.config.layers import defaults
from workbench.run.runner import JobRunner
from workbench.session.store import SessionStore
from workbench.system.atomic import read_json

SID = "20240101-000000-e1e1"
FAILED_EXIT = dict(OK_EXIT, returncode=1)
RECORDED = {
    "cpu-pass": ("env_cpu_pass.jsonl", OK_EXIT),
    "ascend-blocked": ("env_ascend_blocked.jsonl", FAILED_EXIT),
    "910a-warning": ("env_910a_warning.jsonl", OK_EXIT),
    "npu-smi-failing": ("env_npu_smi_failing.jsonl", OK_EXIT),
}


def _app(tmp_path, monkeypatch, name: str, cfg=None) -> WorkbenchApp:
    """The app on a session replaying one recorded env job (fixed session id for stable snapshots)."""
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    events, exit_record = RECORDED[name]
    sid = make_recorded_session(tmp_path, [("env-001", "env", FIXTURES / events, exit_record)])
    return WorkbenchApp(SessionStore(tmp_path), sid, cfg or defaults())


async def _show(pilot, select=None) -> None:
    await pilot.press("1")
    await wait_ingested(pilot, pilot.app)
    view = pilot.app.views["environment"]
    await until(
        pilot,
        lambda: view.status and view.status != "running" and pilot.app.screen.drawn_version == view.version,
        timeout_s=30,
    )
    if select:
        pilot.app.screen.select_check(select)
    await settled(pilot)


def _text(app, selector: str) -> str:
    """What a Static shows, as plain text (its renderable printed on a wide console)."""
    console = Console(width=300, file=io.StringIO(), color_system=None)
    console.print(app.screen.query_one(selector, Static).content)
    return console.file.getvalue()


def _detail_text(app) -> str:
    return _text(app, "#env-detail")


@pytest.mark.parametrize(
    "name,size,select",
    [
        pytest.param("cpu-pass", (120, 36), None, id="cpu-all-pass-120x36"),
        pytest.param("cpu-pass", (80, 24), None, id="cpu-all-pass-80x24"),
        pytest.param("910a-warning", (120, 36), None, id="ascend-910a-warning-120x36"),
        pytest.param("npu-smi-failing", (120, 36), None, id="npu-smi-failing-120x36"),
        pytest.param("ascend-blocked", (120, 36), "probe-add-fp32", id="ascend-blocked-probe-120x36"),
        pytest.param("ascend-blocked", (80, 24), "probe-add-fp32", id="ascend-blocked-probe-80x24"),
    ],
)
def test_snapshot(snap_compare, tmp_path, monkeypatch, name, size, select):
    async def run_before(pilot):
        await _show(pilot, select)

    assert snap_compare(_app(tmp_path, monkeypatch, name), terminal_size=size, run_before=run_before)


async def test_cpu_run_lists_every_check_in_group_order_with_probe_values(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "cpu-pass")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show(pilot)
        view = app.views["environment"]
        ids = [c["id"] for c in view.ordered_checks()]
        assert ids[:4] == ["probe-add-fp32", "probe-matmul-fp16", "probe-matmul-fp32", "interpreter"]
        assert view.counts()["observed-fail"] == 0 and view.counts()["blocked"] == 0
        table = app.screen.query_one("#env-checks", DataTable)
        assert table.row_count == len(ids)
        fp16 = table.get_row("probe-matmul-fp16")
        assert str(fp16[0]) == "PASS" and "max abs diff" in str(fp16[2])
        runline = _text(app, "#env-runline")
        assert "target CPU:0" in runline and "requested auto" in runline and "no /dev/davinci" in runline
        assert not [t for t in app.screen.query("#env-devices") if t.display]  # no devices: no table shown (nor built)


async def test_failed_probe_is_shown_with_mindspores_message_hint_and_raw_output(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "ascend-blocked")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show(pilot)
        view = app.views["environment"]
        assert app.screen.selected == view.first_failing() == "probe-add-fp32"  # the pane opens on it
        text = _detail_text(app)
        assert "BLOCKED" in text and "Unsupported device target Ascend" in text
        assert "next: " in text and "set_env.sh" in text
        assert "evidence" in text and "raw output" in text
        assert "DeviceProbeFailed" in _text(app, "#env-runline")
        await pilot.press("ctrl+end")  # the keyboard moves the selection, and the pane follows
        await settled(pilot)
        assert app.screen.selected == "env-vars" and "Environment variables" in _detail_text(app)


async def test_devices_panel_shows_the_warning_device(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "910a-warning")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show(pilot)
        assert app.screen.selected == "npu-health"
        devices = app.screen.query_one("#env-devices", DataTable)
        assert devices.display and devices.row_count == 1
        row = [str(cell) for cell in devices.get_row_at(0)]
        assert row == ["1", "0", "910A", "Warning", "35", "69.6", "0", "2681 / 15137", "1 / 32768"]
        assert "health Warning" in _detail_text(app)
        assert "none on the devices" in _text(app, "#env-processes")


async def test_npu_smi_failure_is_explained_in_the_devices_panel_and_the_detail(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "npu-smi-failing")
    async with app.run_test(size=(120, 36)) as pilot:
        await _show(pilot)
        assert app.screen.selected == "npu-smi"
        assert "dcmi-8020" in _text(app, "#env-devices-title")
        text = _detail_text(app)
        assert "ret is -8020" in text and "--device /dev/davinci" in text


async def test_p_runs_only_the_probes_and_r_runs_everything_again(tmp_path, monkeypatch):
    cfg = defaults()
    # Stand-in probes (hang 1 s, crash, give up): the keys' wiring is the point, not MindSpore's speed.
    cfg["env"]["probe_module"] = "tests.fixtures.probe_standin"
    cfg["limits"]["probe_timeout_s"] = 1.0
    app = _app(tmp_path, monkeypatch, "cpu-pass", cfg)
    async with app.run_test(size=(120, 36)) as pilot:
        await _show(pilot)
        view = app.views["environment"]
        await pilot.press("p")
        await until(pilot, lambda: view.jid == "env-002" and view.state not in ("", "running"), 60)
        job = app.tracker.jobs["env-002"]
        assert read_json(job.dir / "config.json")["env"]["only_probes"] is True
        assert view.scope == "probes" and view.state == "failed"
        assert view.check_jid["interpreter"] == "env-001"  # the full run's checks stay
        assert {view.check_jid[c] for c in view.checks if c.startswith("probe-")} == {"env-002"}
        assert view.checks["probe-matmul-fp16"]["status"] == "observed-fail"
        assert "SIGSEGV" in view.checks["probe-matmul-fp16"]["detail"]
        app.cfg["env"]["probes"] = False
        await pilot.press("r")
        await until(pilot, lambda: view.jid == "env-003" and view.state not in ("", "running"), 60)
        assert view.scope == "all" and view.check_jid["interpreter"] == "env-003"
        assert view.checks["probe-add-fp32"]["status"] == "not-run"
    for jid in ("env-002", "env-003"):
        assert JobRunner.wait(app.tracker.jobs[jid].dir, 30)


async def test_chip_table_shows_each_die_and_the_mcu_of_a_two_die_card(tmp_path, monkeypatch):
    import json

    from tests.support.ascend_fakes import two_die_card_status
    from workbench.ascend import chipstatus

    card = two_die_card_status(tmp_path)
    lines = []
    for line in (FIXTURES / RECORDED["910a-warning"][0]).read_text().splitlines():
        ev = json.loads(line)
        if ev["type"] == "result":
            ev["summary"]["cards"] = [card]
        lines.append(ev)
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    sid = make_recorded_session(tmp_path / "sessions", [("env-001", "env", lines, OK_EXIT)])
    app = WorkbenchApp(SessionStore(tmp_path / "sessions"), sid, defaults())
    async with app.run_test(size=(120, 48)) as pilot:
        await _show(pilot)
        table = app.screen.query_one("#env-chips", DataTable)
        assert table.display and table.row_count == 3
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(3)]
        assert [r[0] for r in rows] == ["NPU 0 chip 0", "NPU 0 chip 1", "NPU 0 MCU"]
        assert rows == [[r[key] for key, _ in chipstatus.CHIP_COLUMNS] for r in chipstatus.chip_status_rows([card])]
        assert "Chips" in _text(app, "#env-chips-title")


def _env_events_with_failures(failed: int) -> list:
    """The recorded CPU run, its first `failed` checks turned observed-fail (the job still ends ok)."""
    events = [json.loads(line) for line in (FIXTURES / "env_cpu_pass.jsonl").read_text().splitlines() if line]
    checks = [ev for ev in events if ev["type"] == "check"]
    for ev in checks[:failed]:
        ev["status"] = "observed-fail"
    return events


@pytest.mark.parametrize("failed", [0, 1, 2])
async def test_an_ok_env_job_with_failed_checks_says_how_many_failed(tmp_path, monkeypatch, failed):
    monkeypatch.setattr("workbench.session.store.new_sid", lambda now=None: SID)
    sid = make_recorded_session(tmp_path, [("env-001", "env", _env_events_with_failures(failed), OK_EXIT)])
    app = WorkbenchApp(SessionStore(tmp_path), sid, defaults())
    async with app.run_test(size=(80, 24)) as pilot:
        await _show(pilot)
        runline = " ".join(_text(app, "#env-runline").split())
        assert runline.startswith("env-001 ok")
        if failed:
            assert "the job ran to its end; %d check%s failed" % (failed, "s" * (failed > 1)) in runline, runline
        else:
            assert "failed" not in runline, runline
