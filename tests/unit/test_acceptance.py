"""The acceptance rules on the session recorded from the real jobs and on edited copies of it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import variants
from workbench.acceptance.about import about_session
from workbench.acceptance.performance import NOT_REQUIRED
from workbench.acceptance.verdict import CPU_DEVICE_SUMMARY, evaluate
from workbench.config.layers import defaults
from workbench.events.protocol import Evidence
from workbench.fold.stream import fold_session
from workbench.record.collect import collect
from workbench.session import candidate
from workbench.session.store import SessionStore
from workbench.system.atomic import sha256_file

ROOT = Path(__file__).resolve().parents[2]


def _judge(session: Path, cfg=None):
    return evaluate(fold_session(session), cfg if cfg is not None else variants.lenient(), about=about_session(session))


def _layer(acc, name):
    return next(lay for lay in acc["layers"] if lay["layer"] == name)


def _row(layer, check):
    return next(r for r in layer["deciding"] if r["check"] == check)


def test_the_shape_is_the_documented_one(tmp_path):
    acc = _judge(variants.copy_real(tmp_path))
    assert acc["format"] == "ms-workbench.acceptance.verdict/1"
    assert set(acc["target"]) == {"device", "requested", "why"}
    assert [lay["layer"] for lay in acc["layers"]] == ["task", "framework", "device", "performance"]
    for lay in acc["layers"]:
        assert set(lay) == {"layer", "verdict", "summary", "observed_on", "deciding", "missing"}
        assert lay["verdict"] in Evidence.ALL + (NOT_REQUIRED,)
        for row in lay["deciding"]:
            assert set(row) == {"job", "check", "level", "device", "value", "threshold", "detail"}
        for need in lay["missing"]:
            assert set(need) == {"what", "command", "key"}
    assert acc["thresholds"] == variants.lenient()
    assert acc["overall"] in Evidence.ALL
    json.dumps(acc, allow_nan=False)


def test_all_checks_pass_on_cpu_but_the_device_layer_is_never_passed(tmp_path):
    acc = _judge(variants.all_pass_on_cpu(tmp_path))
    assert acc["target"]["device"] == "CPU"
    task, framework, device, performance = acc["layers"]
    assert performance["verdict"] == NOT_REQUIRED
    assert task["verdict"] == Evidence.PASS, task["summary"]
    assert framework["verdict"] == Evidence.PASS, framework["summary"]
    assert task["observed_on"] == framework["observed_on"] == ["CPU"]
    assert device["verdict"] == Evidence.NOT_RUN
    assert device["summary"] == CPU_DEVICE_SUMMARY
    assert device["deciding"] == []
    assert "device.target=Ascend" in device["missing"][0]["command"]
    assert acc["overall"] == Evidence.PASS  # the device layer of a CPU target is not required


def test_cpu_evidence_does_not_pass_the_device_layer_of_an_ascend_target(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.retarget(session, "Ascend", jobs=("train-001",))  # env stays on CPU: its probes passed on CPU
    acc = _judge(session)
    assert acc["target"]["device"] == "Ascend"
    device = _layer(acc, "device")
    assert device["verdict"] != Evidence.PASS
    probe = _row(device, "probe-add-fp32")
    assert probe["level"] == Evidence.PASS and probe["device"] == "CPU"
    assert "observed on CPU, target Ascend: does not count" in probe["detail"]
    # the task and framework layers ran on CPU too: they do not pass for an Ascend target either
    assert _layer(acc, "task")["verdict"] == Evidence.NOT_RUN
    assert acc["overall"] != Evidence.PASS


def test_a_blocked_ascend_probe_makes_the_device_layer_blocked(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.retarget(session, "Ascend")
    variants.block_probes(session, "Ascend")
    acc = _judge(session)
    device = _layer(acc, "device")
    assert device["verdict"] == Evidence.BLOCKED
    assert "probe-add-fp32" in device["summary"]
    assert _row(device, "probe-add-fp32")["device"] == "Ascend"
    assert any("device.target=Ascend" in m["command"] and "probe-" in m["what"] for m in device["missing"])
    assert acc["overall"] == Evidence.BLOCKED


def test_a_test_set_evaluated_twice_fails_the_task_layer(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.evaluate_test_again(session)
    acc = _judge(session)
    task = _layer(acc, "task")
    assert task["verdict"] == Evidence.FAIL
    row = _row(task, "test-evaluations")
    assert row["level"] == Evidence.FAIL and row["value"] == 2 and row["threshold"] == "<= 1"
    assert "evaluated 2 times: test-001 (train-001, checkpoint " in row["detail"]
    assert ", test-002 (train-001, checkpoint " in row["detail"]
    assert _row(task, "test-macro-f1")["job"] == "test-001"  # the first result stays the reported one


def test_a_threshold_miss_fails_the_layer_and_names_the_number(tmp_path):
    acc = _judge(variants.all_pass_on_cpu(tmp_path), variants.lenient(min_test_macro_f1_mlp=0.5))
    task = _layer(acc, "task")
    assert task["verdict"] == Evidence.FAIL
    assert "test-macro-f1 0.3747 (needs >= 0.50)" in task["summary"]
    row = _row(task, "test-macro-f1")
    assert row["value"] == pytest.approx(0.37471130744788034) and row["threshold"] == ">= 0.50"
    assert _row(task, "val-macro-f1")["level"] == Evidence.PASS


def test_the_default_thresholds_fail_the_tiny_recorded_run(tmp_path):
    acc = _judge(variants.copy_real(tmp_path), defaults()["acceptance"])
    assert "val-macro-f1 0.3728 (needs >= 0.80)" in _layer(acc, "task")["summary"]


def test_a_session_without_the_test_evaluation_is_task_not_run_naming_the_command(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    shutil.rmtree(str(session / "jobs" / "test-001"))
    task = _layer(_judge(session), "task")
    assert task["verdict"] == Evidence.NOT_RUN
    assert "test-macro-f1" in task["summary"]
    assert task["missing"] == [
        {
            "what": "the test-set evaluation of the candidate (it takes the candidate when test.from is unset) "
            "(test-macro-f1, test-evaluations)",
            "command": "ms-workbench run test --session %s --sessions %s" % (session.name, tmp_path),
            "key": "t on the Training screen",
        }
    ]


def test_missing_course_checks_keep_the_framework_layer_from_passing(tmp_path):
    framework = _layer(_judge(variants.copy_real(tmp_path)), "framework")
    assert framework["verdict"] == Evidence.NOT_RUN
    for check in variants.COURSE_CHECKS:
        assert _row(framework, check)["level"] == Evidence.NOT_RUN
        assert any(check in m["what"] for m in framework["missing"])


def test_an_export_reload_beyond_its_batch_tolerance_fails(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    acc = _judge(session, variants.lenient(export_max_abs_diff_by_batch={64: 1e-7}))
    framework = _layer(acc, "framework")
    assert framework["verdict"] == Evidence.FAIL
    row = _row(framework, "mindir-b64")
    assert row["level"] == Evidence.FAIL and row["threshold"] == "<= 1e-07"
    assert _row(framework, "mindir-b1")["level"] == Evidence.PASS  # batch 1 keeps the general 1e-5


def test_accept_json_equals_the_reports_acceptance(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    report = collect(SessionStore(tmp_path), session.name, acceptance=defaults()["acceptance"])
    out = subprocess.run(
        [sys.executable, "-m", "workbench", "--sessions", str(tmp_path), "accept", "--json"],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        env=_env(tmp_path),
    )
    assert out.returncode == 1, out.stderr  # the default minimums fail this tiny run
    assert json.loads(out.stdout) == json.loads(json.dumps(report["acceptance"]))


def test_accept_exit_codes(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    sets = ["--set", "acceptance.min_val_macro_f1_mlp=0.35", "--set", "acceptance.min_test_macro_f1_mlp=0.35"]
    run = _accept(tmp_path, [session.name] + sets)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "device      not-run        not-run: target CPU, no device claim" in run.stdout
    assert "performance not-required   not-required: no throughput or step-time threshold set" in run.stdout
    assert _accept(tmp_path, [session.name]).returncode == 1
    assert _accept(tmp_path, ["20990101-000000-beef"]).returncode == 2
    bad = _accept(tmp_path, ["--set", "acceptance.min_val_macro_f1_mlp=2"])
    assert bad.returncode == 2 and "acceptance.min_val_macro_f1_mlp" in bad.stderr
    assert _accept(tmp_path / "empty", []).returncode == 2


def test_accept_with_a_throughput_threshold_the_cpu_run_misses_exits_1_naming_it(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    figure, _, run = _run_figure(session)
    sets = ["--set", "acceptance.min_val_macro_f1_mlp=0.35", "--set", "acceptance.min_test_macro_f1_mlp=0.35"]
    out = _accept(tmp_path, [session.name] + sets + ["--set", "acceptance.min_steady_images_per_s=50000"])
    assert out.returncode == 1, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("performance "))
    assert "observed-fail" in line and "%.1f images/s on CPU (a CPU figure, not a device claim)" % figure in line
    assert "threshold 50000 images/s" in line and "batch %d" % run["batch_size"] in line
    assert "overall observed-fail" in out.stdout


def _env(tmp_path):
    import os

    return dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(tmp_path))  # no user config file changes the defaults


def _accept(root: Path, args):
    return subprocess.run(
        [sys.executable, "-m", "workbench", "--sessions", str(root), "accept"] + args,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        env=_env(root),
    )


def test_effect_consistency_when_required_compares_the_runs_of_two_devices(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.clone_job(session, "train-001", "train-002")
    variants.retarget(session, "Ascend", jobs=("train-002",))
    test = variants.clone_job(session, "test-001", "test-002")
    variants.edit_events(test, lambda ev: ev["type"] == "result" and ev["summary"].update({"from": "train-002"}))
    cfg = variants.lenient(task_checks=["effect-consistency"])
    tolerances = defaults().get("compare")  # helper compare's section; optional input
    row = _row(_layer(evaluate(fold_session(session), cfg, tolerances), "task"), "effect-consistency")
    if tolerances is None:
        assert row["level"] == Evidence.NOT_RUN and "no `compare` tolerances" in row["detail"]
        return
    # the same weights' numbers on both sides: the same effect, observed on the target
    assert row["level"] == Evidence.PASS, row["detail"]
    assert row["device"] == "Ascend" and "train-001 vs train-002" in row["detail"]


def test_a_cancelled_training_run_does_not_pass_the_task_layer(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    exit_path = session / "jobs" / "train-001" / "exit.json"
    exit_record = json.loads(exit_path.read_text())
    exit_record.update(cancelled=True)
    exit_path.write_text(json.dumps(exit_record))
    variants.edit_events(
        session / "jobs" / "train-001", lambda ev: ev.update(status="cancelled") if ev["type"] == "finished" else None
    )
    task = _layer(_judge(session), "task")
    row = _row(task, "val-macro-f1")
    assert row["level"] == Evidence.NOT_RUN and row["detail"].startswith("train-001 cancelled")
    assert task["verdict"] == Evidence.NOT_RUN


# -- the performance row ------------------------------------------------------------------------------------------
def _run_figure(session: Path):
    perf = [e for e in variants.read_events(session / "jobs" / "train-001") if e["type"] == "perf"]
    run = [p for p in perf if p.get("scope") == "run"][-1]
    return run["steady"]["images_per_s"], run["steady"]["median_ms"], run


def test_a_throughput_threshold_above_the_cpu_figure_fails_naming_figure_threshold_and_conditions(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    figure, _, run = _run_figure(session)
    acc = _judge(session, variants.lenient(min_steady_images_per_s=50000))
    perf = _layer(acc, "performance")
    assert perf["verdict"] == Evidence.FAIL and acc["overall"] == Evidence.FAIL
    row = _row(perf, "steady-throughput")
    assert row["value"] == pytest.approx(figure) and row["threshold"] == ">= 50000 images/s"
    assert row["device"] == "CPU" and "a CPU figure, not a device claim" in row["detail"]
    for said in ("batch %d" % run["batch_size"], run["precision"], "%d warm-up steps" % run["warmup_steps"]):
        assert said in row["detail"], said
    assert "sync %s" % run["sync"] in row["detail"] and "timed once" in row["detail"]
    assert "%.1f images/s" % figure in perf["summary"] and "50000" in perf["summary"]


def test_a_threshold_the_cpu_figure_meets_passes_labelled_as_a_cpu_figure(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    figure, median, _ = _run_figure(session)
    acc = _judge(session, variants.lenient(min_steady_images_per_s=figure / 2, max_steady_median_ms=median * 2))
    perf = _layer(acc, "performance")
    assert perf["verdict"] == Evidence.PASS and acc["overall"] == Evidence.PASS
    assert [r["level"] for r in perf["deciding"]] == [Evidence.PASS, Evidence.PASS]
    assert all("a CPU figure, not a device claim" in r["detail"] for r in perf["deciding"])


def test_a_step_time_threshold_below_the_median_fails(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    _, median, _ = _run_figure(session)
    perf = _layer(_judge(session, variants.lenient(max_steady_median_ms=median / 2)), "performance")
    row = _row(perf, "steady-step-time")
    assert perf["verdict"] == Evidence.FAIL and row["level"] == Evidence.FAIL
    assert row["value"] == pytest.approx(median) and row["threshold"] == "<= %g ms" % (median / 2)
    assert _row(perf, "steady-throughput")["level"] == NOT_REQUIRED


def test_unset_thresholds_read_not_required_and_still_show_the_figure(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    figure, _, _ = _run_figure(session)
    perf = _layer(_judge(session), "performance")
    assert perf["verdict"] == NOT_REQUIRED and "min_steady_images_per_s" in perf["summary"]
    row = _row(perf, "steady-throughput")
    assert row["level"] == NOT_REQUIRED and row["value"] == pytest.approx(figure) and row["threshold"] is None


def test_a_cpu_figure_never_passes_the_performance_row_of_an_ascend_target(tmp_path):
    from workbench.acceptance.verdict import performance_layer

    model = fold_session(variants.all_pass_on_cpu(tmp_path))
    perf = performance_layer(model, variants.lenient(min_steady_images_per_s=1), "Ascend", model.records["train-001"])
    assert perf["verdict"] == Evidence.NOT_RUN
    assert "observed on CPU, target Ascend: does not count" in _row(perf, "steady-throughput")["detail"]
    assert "device.target=Ascend" in perf["missing"][0]["command"]


def test_a_figure_measured_on_the_device_is_not_labelled_a_cpu_figure(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.retarget(session, "Ascend", jobs=("train-001",))
    perf = _layer(_judge(session, variants.lenient(min_steady_images_per_s=1)), "performance")
    row = _row(perf, "steady-throughput")
    assert perf["verdict"] == Evidence.PASS and row["device"] == "Ascend"
    assert "CPU figure" not in row["detail"] and "on Ascend" in row["detail"]


def test_accept_prints_a_passing_check_with_its_value_against_its_threshold(tmp_path):
    from workbench.cli.accept import render

    acc = _judge(variants.all_pass_on_cpu(tmp_path))
    val = _row(_layer(acc, "task"), "val-macro-f1")
    assert val["level"] == Evidence.PASS
    text = render(acc)
    assert "%.4g against %s" % (val["value"], val["threshold"]) in text
    assert "performance" in text and "not-required" in text


def test_effect_consistency_on_a_cpu_target_asks_for_a_run_on_another_device(tmp_path):
    acc = _judge(variants.all_pass_on_cpu(tmp_path), variants.lenient(task_checks=["effect-consistency"]))
    (need,) = _layer(acc, "task")["missing"]
    assert "device.target=CPU" not in need["command"] and "device.target=Ascend" in need["command"]


def _other_weights(session: Path, jid: str, new_jid: str) -> Path:
    """A second training run with other weights (its best.json records their hash, as a real run's does)."""
    run = variants.clone_job(session, jid, new_jid)
    (run / "artifacts" / "best.ckpt").write_bytes(b"other weights")
    best = json.loads((run / "artifacts" / "best.json").read_text())
    best["checkpoint"]["sha256"] = sha256_file(run / "artifacts" / "best.ckpt")
    (run / "artifacts" / "best.json").write_text(json.dumps(best))
    return run


def test_evidence_about_another_checkpoint_never_counts(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    assert _judge(session)["overall"] == Evidence.PASS
    variants.set_subject(session / "jobs" / "export-001", candidate.checkpoint_subject("9" * 64))
    acc = _judge(session)
    framework = _layer(acc, "framework")
    assert framework["verdict"] == Evidence.NOT_RUN and acc["overall"] == Evidence.NOT_RUN
    row = _row(framework, "export:ckpt-reload")
    assert row["level"] == Evidence.NOT_RUN and row["job"] is None
    assert "export-001 has it about checkpoint 999999999999 (another model: does not count)" in row["detail"]
    assert {"job": "export-001", "kind": "export", "subject": "checkpoint 999999999999"}.items() <= next(
        o for o in acc["about_other"] if o["job"] == "export-001"
    ).items()


def test_initial_weights_never_count(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    for jid in ("export-001", "align-001", "align-002"):
        variants.set_subject(session / "jobs" / jid, candidate.INITIAL_WEIGHTS)
    acc = _judge(session)
    framework = _layer(acc, "framework")
    assert _row(framework, "align:graph-vs-pynative")["level"] == Evidence.NOT_RUN
    assert {o["job"]: o["subject"] for o in acc["about_other"]} == {
        "export-001": "initial weights",
        "align-001": "initial weights",
        "align-002": "initial weights",
    }


def test_course_checks_of_another_recipe_do_not_count(tmp_path):
    session = variants.copy_real(tmp_path)
    other = variants.clone_job(session, "train-001", "train-002")
    cfg = json.loads((other / "config.json").read_text())
    cfg["train"]["lr"] = cfg["train"]["lr"] * 10
    (other / "config.json").write_text(json.dumps(cfg))
    variants.set_subject(other, candidate.recipe_subject(cfg))
    variants.add_course_checks(session)  # in train-001: the candidate's own recipe
    assert _row(_layer(_judge(session), "framework"), "overfit-batch")["level"] == Evidence.PASS
    session2 = variants.copy_real(tmp_path / "b")
    variants.insert_checks(
        session2 / "jobs" / "train-001",
        [{"id": "overfit-batch", "status": "observed-pass", "subject": candidate.recipe_subject(cfg)}],
    )
    row = _row(_layer(_judge(session2), "framework"), "overfit-batch")
    assert row["level"] == Evidence.NOT_RUN and "another model: does not count" in row["detail"]


def test_nothing_frozen_names_the_freeze_command_and_counts_no_model_evidence(tmp_path):
    session = variants.copy_real(tmp_path, frozen=False)
    variants.add_course_checks(session)
    variants.add_precision_align(session)
    acc = _judge(session)
    task = _layer(acc, "task")
    assert acc["candidate"] is None and acc["overall"] == Evidence.FAIL
    assert _row(task, "candidate")["level"] == Evidence.NOT_RUN
    spent = _row(task, "test-evaluations")  # the test set was looked at before any model was chosen
    assert spent["level"] == Evidence.FAIL and "another model than the candidate (none frozen)" in spent["detail"]
    assert "test-evaluations 1 (needs <= 1)" not in task["summary"]  # the count is not why it fails
    assert "test-evaluations the test set was spent on another model" in task["summary"]
    freeze = next(m for m in task["missing"] if "candidate" in m["what"])
    assert freeze["command"] == "ms-workbench freeze %s --sessions %s" % (session.name, tmp_path)
    assert _layer(acc, "framework")["verdict"] == Evidence.NOT_RUN


def test_a_refreeze_after_a_test_evaluation_keeps_the_test_set_spent(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    first = _row(_layer(_judge(session), "task"), "test-evaluations")
    assert first["level"] == Evidence.PASS and "the candidate: test-001 (train-001" in first["detail"]
    _other_weights(session, "train-001", "train-002")
    variants.freeze(session, "train-002", "better validation loss")
    acc = _judge(session)
    task = _layer(acc, "task")
    assert acc["candidate"]["run"] == "train-002" and [f["n"] for f in acc["freezes"]] == [1, 2]
    spent = _row(task, "test-evaluations")
    assert spent["level"] == Evidence.FAIL and "spent on another model than the candidate" in spent["detail"]
    assert "test-001 (train-001" in spent["detail"]
    assert "(needs <= 1)" not in task["summary"] and spent["threshold"] is None
    assert _row(task, "test-macro-f1")["level"] == Evidence.NOT_RUN
    assert "the test set is already spent: test-001" in _row(task, "test-macro-f1")["detail"]
    assert any(o["job"] == "test-001" for o in acc["about_other"])


def test_accept_shortens_a_long_detail_at_a_word_never_mid_word():
    from workbench.cli.accept import wrap

    text = "alpha " * 40 + "omega"
    short = wrap(text, 50)
    assert short.endswith(" …") and len(short) <= 52
    assert short[:-2].split(" ")[-1] == "alpha"  # whole words only
    assert wrap("short detail", 50) == "short detail"
