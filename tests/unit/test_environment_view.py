"""The Environment screen's model folds env jobs: a full run replaces all, a probes-only run the probes."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.support.recorded import FIXTURES
from tests.support.views import changed, feed
from workbench.fold.record import SessionModel
from workbench.session.store import JobStatus
from workbench.views.environment import EnvironmentView


def job(jid: str, created: float, state: str = "ok", reason: str = ""):
    return SimpleNamespace(jid=jid, kind="env", spec={"created": created}, status=JobStatus(state, reason, 1.0))


def recorded(name: str):
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def probes_only_events():
    return [
        {"type": "started", "scope": "probes", "device": {"requested": "auto", "resolved": "CPU", "id": 0}},
        {
            "type": "check",
            "id": "probe-add-fp32",
            "title": "Probe add fp32",
            "status": "observed-fail",
            "detail": "crashed",
            "group": "probes",
        },
        {"type": "result", "summary": {"probes": [{"op": "add-fp32", "verdict": "observed-fail"}], "devices": []}},
        {"type": "finished", "status": "failed", "error": {"type": "DeviceProbeFailed", "message": "x"}},
    ]


def test_full_run_then_probes_only_keeps_the_rest():
    view = EnvironmentView(SessionModel())
    full = job("env-001", 1.0)
    feed(view, full, recorded("env_910a_warning.jsonl"))
    changed(view, full)
    assert view.state == "ok" and [d["health"] for d in view.devices] == ["Warning"]
    assert view.first_failing() == "npu-health"
    assert [c["id"] for c in view.ordered_checks()][:3] == ["probe-add-fp32", "probe-matmul-fp16", "probe-matmul-fp32"]
    probes = job("env-002", 2.0, "failed")
    feed(view, probes, probes_only_events())
    changed(view, probes)
    assert view.scope == "probes" and view.jid == "env-002" and view.full_jid == "env-001"
    assert "probe-matmul-fp16" not in view.checks and view.check_jid["probe-add-fp32"] == "env-002"
    assert view.check_jid["npu-health"] == "env-001" and [d["name"] for d in view.devices] == ["910A"]
    assert view.summary["probes"][0]["verdict"] == "observed-fail" and view.error["type"] == "DeviceProbeFailed"
    feed(view, full, [{"type": "check", "id": "late", "status": "observed-pass"}])  # an older job's late line
    assert "late" not in view.checks


def test_a_new_full_run_starts_from_nothing_and_a_refused_job_is_noticed():
    view = EnvironmentView(SessionModel())
    feed(view, job("env-001", 1.0), recorded("env_910a_warning.jsonl"))
    feed(view, job("env-002", 2.0, "running"), recorded("env_cpu_pass.jsonl")[:1])
    assert view.checks == {} and view.summary == {} and view.state == "running"
    changed(view, job("env-003", 3.0, "failed", "refused: device CPU:0 is held by job env-002"))
    assert "env-003" in view.notice and "held by" in view.notice
    assert view.counts() == {"observed-pass": 0, "observed-fail": 0, "blocked": 0, "not-run": 0}


def test_chip_rows_come_from_the_cards_of_a_two_die_card(tmp_path):
    from tests.support.ascend_fakes import two_die_card_status
    from workbench.ascend import chipstatus

    card = two_die_card_status(tmp_path)
    events = recorded("env_910a_warning.jsonl")
    for ev in events:
        if ev["type"] == "result":
            ev["summary"]["cards"] = [card]
    view = EnvironmentView(SessionModel())
    full = job("env-001", 1.0)
    feed(view, full, events)
    changed(view, full)
    rows = view.chip_rows
    assert [r["device"] for r in rows] == ["NPU 0 chip 0", "NPU 0 chip 1", "NPU 0 MCU"]
    assert all(set(r) == {key for key, _ in chipstatus.CHIP_COLUMNS} for r in rows)
    assert all(r["temp"].endswith("°C") and r["aicore"].endswith("%") and " / " in r["memory"] for r in rows[:2])
    assert rows[2]["aicore"] == chipstatus.DASH and view.chip_errors == []
