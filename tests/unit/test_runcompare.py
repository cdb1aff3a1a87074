"""The comparison rules on recorded real runs: config diff, deltas, verdict, cross-device evidence."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.sessions import set_interpreter
from workbench.compare.inputs import compare_dirs, fold_run, run_test_evaluations
from workbench.compare.runs import (
    Tolerances,
    class_deltas,
    compare_runs,
    config_diff,
    confusion_diff,
    cross_device_evidence,
    first_test,
    loss_series,
    verdict,
)
from workbench.compare.text import render_text
from workbench.events.protocol import Evidence

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "compare"
SID = "20261201-141656-3875"  # two real trainings that differ only in train.lr, each tested once
RUN_A, RUN_B = FIXTURE / SID / "jobs" / "train-001", FIXTURE / SID / "jobs" / "train-002"
DEFAULTS = Tolerances(0.02, 0.05, 0.10)
LOOSE = Tolerances(0.05, 0.30, 0.50)


def events(job: Path, kind: str):
    return [e for e in map(json.loads, (job / "events.jsonl").read_text().splitlines()) if e["type"] == kind]


@pytest.fixture(scope="module")
def pair():
    return fold_run(RUN_A), fold_run(RUN_B)


@pytest.fixture(scope="module")
def tests_ab():
    return run_test_evaluations(RUN_A), run_test_evaluations(RUN_B)


def test_the_config_diff_lists_exactly_the_learning_rate(pair):
    a, b = pair
    assert config_diff(a.config, b.config) == [{"key": "train.lr", "a": 0.001, "b": 0.01, "training": True}]


def test_config_diff_names_absent_keys_and_how_it_ran_keys():
    diff = config_diff(
        {"train": {"lr": 0.1}, "python": "/a/python"}, {"train": {"lr": 0.1, "seed": 2}, "python": "/b/python"}
    )
    assert diff == [
        {"key": "python", "a": "/a/python", "b": "/b/python", "training": False},
        {"key": "train.seed", "a": "(absent)", "b": 2, "training": True},
    ]


def test_epoch_deltas_are_b_minus_a_of_the_recorded_epochs(pair, tests_ab):
    result = compare_runs(*pair, DEFAULTS, *tests_ab)
    ea, eb = events(RUN_A, "epoch"), events(RUN_B, "epoch")
    assert [r["epoch"] for r in result["epochs"]] == [1, 2]
    for row, a, b in zip(result["epochs"], ea, eb):
        assert row["train_loss"]["delta"] == pytest.approx(b["train_loss"] - a["train_loss"])
        assert row["val_macro_f1"]["delta"] == pytest.approx(b["val"]["macro_f1"] - a["val"]["macro_f1"])
        assert row["val_accuracy"]["a"] == a["val"]["accuracy"] and row["val_accuracy"]["b"] == b["val"]["accuracy"]
    matrix = result["confusion_diff"]["matrix"]
    best_a, best_b = ea[-1]["val"]["confusion"], eb[-1]["val"]["confusion"]  # epoch 2 is best in both runs
    assert matrix[5][5] == best_b[5][5] - best_a[5][5] and sum(map(sum, matrix)) == 0  # same 500 images
    assert len(result["loss_curves"]["a"]["x"]) == len(result["loss_curves"]["a"]["y"]) > 10
    assert result["throughput"]["ratio"] == pytest.approx(
        result["throughput"]["b"]["images_per_s"] / result["throughput"]["a"]["images_per_s"]
    )


def test_default_tolerances_fail_naming_every_number_that_decided(pair, tests_ab):
    result = compare_runs(*pair, DEFAULTS, *tests_ab)
    v = result["verdict"]
    assert v["status"] == Evidence.FAIL
    # both runs saw the test set: the verdict reads the best epochs' validation macro-F1 (epoch 2 in both)
    ea, eb = events(RUN_A, "epoch"), events(RUN_B, "epoch")
    macro = abs(eb[-1]["val"]["macro_f1"] - ea[-1]["val"]["macro_f1"])
    assert v["numbers"][0]["value"] == pytest.approx(macro) and macro > 0.02
    assert "validation macro-F1 |B - A| = %.4g > 0.02 (compare.max_macro_f1_delta)" % macro in v["summary"]
    assert "uses the test set for selection" in result["test_selection"]
    assert "warning: both runs were evaluated on the test set" in render_text(result)
    assert v["decided_by"] == [n["number"] for n in v["numbers"] if not n["passed"]]


def test_only_the_tight_limit_decides(pair, tests_ab):
    v = compare_runs(*pair, LOOSE._replace(max_macro_f1_delta=0.001), *tests_ab)["verdict"]
    assert v["status"] == Evidence.FAIL and v["decided_by"] == ["validation macro-F1 |B - A|"]
    assert "compare.max_class_f1_delta" not in v["summary"]


def test_loose_tolerances_pass_and_name_all_numbers(pair, tests_ab):
    v = compare_runs(*pair, LOOSE, *tests_ab)["verdict"]
    assert v["status"] == Evidence.PASS and len(v["decided_by"]) == 3
    assert v["summary"].startswith("observed-pass: validation macro-F1 |B - A| = ")


def test_one_run_evaluated_on_the_test_set_gives_no_selection_warning(pair, tests_ab):
    result = compare_runs(*pair, LOOSE, tests_ab[0], ())
    assert "test_selection" not in result and "warning:" not in render_text(result)
    assert result["verdict"]["status"] == Evidence.NOT_RUN and "has no test evaluation" in result["verdict"]["summary"]


def test_no_test_evaluation_on_one_side_is_not_run(pair, tests_ab):
    v = compare_runs(*pair, LOOSE, tests_ab[0], [])["verdict"]
    assert v["status"] == Evidence.NOT_RUN and v["numbers"] == []
    assert "B (train-002) has no test evaluation (ms-workbench run test --set test.from=train-002)" in v["summary"]


def test_a_run_that_did_not_end_ok_is_not_run(pair, tests_ab):
    a, b = pair
    crashed = copy.copy(b)
    crashed.status = type(b.status)("crashed", "SIGSEGV after 41 s", 41.0)
    v = verdict(a, crashed, first_test(tests_ab[0]), first_test(tests_ab[1]), LOOSE)
    assert v["status"] == Evidence.NOT_RUN
    assert "B (train-002) did not end ok: crashed: SIGSEGV after 41 s" in v["summary"]


def test_the_first_test_evaluation_counts():
    first = {"jid": "test-001", "macro_f1": 0.7, "test_evaluations": 1}
    again = {"jid": "test-003", "macro_f1": 0.9, "test_evaluations": 2}
    assert first_test([again, first]) is first and first_test([]) is None


def test_same_config_on_another_device_is_cross_device_evidence(pair, tests_ab, tmp_path):
    board = tmp_path / SID / "jobs" / "train-002"
    shutil.copytree(str(RUN_A), str(board))  # A's run as if it had run on an Ascend board
    cfg = json.loads((board / "config.json").read_text())
    cfg["device"]["target"] = "Ascend"
    (board / "config.json").write_text(json.dumps(cfg))
    lines = []
    for line in (board / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev["type"] == "started":
            ev["device"] = {"requested": "Ascend", "resolved": "Ascend", "id": 0, "why": "set in config"}
        lines.append(json.dumps(ev))
    (board / "events.jsonl").write_text("\n".join(lines) + "\n")
    result = compare_runs(pair[0], fold_run(board), LOOSE, tests_ab[0], tests_ab[0])
    assert [d["key"] for d in result["config_diff"]] == ["device.target"]
    assert result["environment"]["diff"][0] == {"item": "device", "a": "CPU:0", "b": "Ascend:0"}
    evidence = cross_device_evidence(result)
    assert result["cross_device"] and evidence["status"] == Evidence.PASS
    assert evidence["devices"] == ["CPU:0", "Ascend:0"]
    assert cross_device_evidence(compare_runs(*pair, LOOSE, *tests_ab)) is None  # same device: not that evidence


def test_confusion_and_class_rules_on_odd_shapes():
    assert confusion_diff([[1, 2], [3, 4]], [[1, 2, 0], [3, 4, 0], [0, 0, 0]]) is None
    assert confusion_diff(None, [[1]]) is None
    assert class_deltas([{"f1": 0.5, "name": "a"}], []) == [
        {"class": 0, "name": "a", "a": 0.5, "b": None, "delta": None}
    ]


def test_loss_series_is_thinned_on_an_epoch_axis(pair):
    series = loss_series(pair[0], limit=20)
    assert len(series["x"]) == 20 and series["x"] == sorted(series["x"]) and 0 < series["x"][0] < series["x"][-1] <= 2


def test_compare_cli_json_and_out(tmp_path):
    root = tmp_path / "sessions"
    shutil.copytree(str(FIXTURE / SID), str(root / SID))
    set_interpreter(root / SID)  # the recording machine's interpreter path is not this one
    proc = run_cli(
        "compare", "%s/train-001" % SID, "%s/train-002" % SID, "--json", "--sessions", root, "--out", tmp_path / "cmp"
    )
    assert proc.returncode == 1, proc.stderr  # observed-fail with the documented defaults
    result = json.loads(proc.stdout)
    assert [d["key"] for d in result["config_diff"]] == ["train.lr"]
    assert result["verdict"]["status"] == Evidence.FAIL and "compare.max_macro_f1_delta" in result["verdict"]["summary"]
    assert set(result["loss_curves"]) >= {"a", "b"}
    svg = (tmp_path / "cmp" / "loss.svg").read_text()
    assert svg.count("<polyline") == 2 and "%s/train-002" % SID in svg
    loose = run_cli(
        "compare",
        "%s/train-001" % SID,
        "%s/train-002" % SID,
        "--sessions",
        root,
        "--set",
        "compare.max_macro_f1_delta=0.05",
        "--set",
        "compare.max_class_f1_delta=0.3",
        "--set",
        "compare.max_final_loss_rel_delta=0.5",
    )
    assert loose.returncode == 0 and "verdict: observed-pass" in loose.stdout
    by_folder = run_cli(
        "compare",
        root / SID / "jobs" / "train-001",
        root / SID / "jobs" / "train-002",
        "--json",
        "--sessions",
        tmp_path / "elsewhere",
    )
    assert json.loads(by_folder.stdout)["config_diff"] == result["config_diff"]
    bad = run_cli("compare", "%s/test-001" % SID, "%s/train-002" % SID, "--sessions", root)
    assert bad.returncode == 2 and "is a test job" in bad.stderr


def test_compare_dirs_finds_each_runs_first_test(pair):
    result = compare_dirs(RUN_A, RUN_B, LOOSE)
    assert result["test"]["a"]["jid"] == "test-001" and result["test"]["b"]["jid"] == "test-002"


def test_a_sessions_cross_device_evidence_is_found_among_imported_runs(tmp_path):
    from workbench.compare.inputs import cross_device_for_session
    from workbench.session.store import SessionStore

    root = tmp_path / "sessions"
    shutil.copytree(str(FIXTURE / SID), str(root / SID))
    set_interpreter(root / SID)  # the recording machine's interpreter path is not this one
    store = SessionStore(root)
    assert cross_device_for_session(store, SID, LOOSE) is None  # both runs on CPU: not cross-device
    board_sid = "20261130-090000-b0a2"  # train-001 as if it had run on a board, brought here by import
    board = root / board_sid / "jobs" / "train-001"
    shutil.copytree(str(RUN_B), str(board))
    (root / board_sid / "session.json").write_text(json.dumps({"id": board_sid, "host": "board", "created": 1.0}))
    (root / board_sid / "imported.json").write_text(json.dumps({"id": board_sid, "host": "board"}))
    spec = json.loads((board / "job.json").read_text())
    spec["device"] = {"requested": "Ascend", "resolved": "Ascend", "id": 0, "why": "set in config"}
    (board / "job.json").write_text(json.dumps(spec))
    cfg = json.loads((board / "config.json").read_text())
    cfg["device"]["target"] = "Ascend"
    (board / "config.json").write_text(json.dumps(cfg))
    lines = [json.loads(line) for line in (board / "events.jsonl").read_text().splitlines()]
    lines[0]["device"] = spec["device"]  # the started line says where it ran
    (board / "events.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in lines))
    found = cross_device_for_session(store, SID, LOOSE)
    assert found["reference"] == "%s/train-001" % board_sid and found["candidate"] == "%s/train-002" % SID
    assert found["status"] == Evidence.NOT_RUN  # the board run's test evaluation did not come with it


def _timed(images_per_s, spread_pct=None):
    from types import SimpleNamespace

    perf = {"scope": "run", "steady": {"images_per_s": images_per_s, "median_ms": 64000.0 / images_per_s, "n": 9}}
    checks = {}
    if spread_pct is not None:
        checks["perf-repeats"] = {
            "status": "observed-pass",
            "evidence": {"repeats": 3, "spread_pct": spread_pct, "per_repeat": [{}, {}, {}]},
        }
    return SimpleNamespace(perf=[perf], main_perf=perf, checks=checks)


def test_a_throughput_ratio_inside_the_run_to_run_spread_is_not_a_speed_difference():
    from workbench.compare.runs import WITHIN_SPREAD, throughput

    inside = throughput(_timed(1000.0, 40.0), _timed(1300.0, 35.0))
    assert inside["verdict"].startswith(WITHIN_SPREAD) and "spread A 40 %, B 35 %" in inside["verdict"]
    outside = throughput(_timed(1000.0, 5.0), _timed(3000.0, 8.0))
    assert outside["verdict"].startswith("outside run-to-run spread") and "spread A 5 %, B 8 %" in outside["verdict"]
    unmeasured = throughput(_timed(1000.0), _timed(2967.0, 8.0))
    assert "not measured for both runs" in unmeasured["verdict"] and "may be host noise" in unmeasured["verdict"]


def test_a_run_compared_with_itself_is_refused_not_passed(tmp_path):
    from tests.support.sessions import SID, copy_recorded
    from workbench.compare.inputs import CompareInputError, compare_refs
    from workbench.config.layers import defaults
    from workbench.session.store import SessionStore

    root = tmp_path / "sessions"
    copy_recorded(root)
    store = SessionStore(root)
    for b in ("%s/train-001" % SID, str(root / SID / "jobs" / "train-001")):
        with pytest.raises(CompareInputError, match="are the same run"):
            compare_refs(store, "%s/train-001" % SID, b, defaults()["compare"])
