"""The align job's pure parts: forward order, matched settings, verdict; the Alignment view's helpers."""

from __future__ import annotations

import numpy as np
import pytest

from jobs.align.compare import compare_sides, forward_order, group_of, matched_settings, verdict
from jobs.align.inputs import choose_batch, path_label
from tests.support.views import feed
from workbench.fold.record import SessionModel
from workbench.jobkit.context import JobFailed
from workbench.views.alignment import AlignmentView, formula_lines, hist_rows, num, percent, shape_text

REF_NAMES = [
    "input",
    "labels",
    "layer.0.Flatten",
    "layer.1.Dense",
    "logits",
    "loss",
    "grad.1.weight",
    "steps.loss",
    "after1.1.weight",
]


def settings(**changes):
    base = {
        "preprocessing": "/255",
        "x_range": [0.0, 1.0],
        "class_order": ["T-shirt/top", "Trouser"],
        "loss_reduction": "mean",
        "state": {"forward": "eval", "loss_grads": "train"},
        "seed": 1,
        "inputs_sha256": "a" * 64,
        "init_sha256": "b" * 64,
        "model": {"name": "mlp", "hidden": 16},
        "optimizer": None,
    }
    base.update(changes)
    return base


def test_groups_follow_the_forward_pass():
    assert [group_of(n) for n in REF_NAMES] == [
        "input",
        "input",
        "layer",
        "layer",
        "logits",
        "loss",
        "grad",
        "steps",
        "steps",
    ]


def test_forward_order_keeps_one_sided_names_in_place():
    cand = ["input", "labels", "layer.0.Flatten", "layer.1.Dense", "layer.2.Extra", "logits", "loss"]
    order = forward_order(REF_NAMES, cand)
    assert order.index("layer.2.Extra") == order.index("layer.1.Dense") + 1
    assert order.index("layer.2.Extra") < order.index("logits")
    assert len(order) == len(set(order)) == len(REF_NAMES) + 1


def test_forward_order_sorts_groups_even_when_a_side_lists_them_oddly():
    assert forward_order(["loss", "logits", "input"], []) == ["input", "logits", "loss"]


def test_matched_settings_all_pass_when_equal():
    checks = matched_settings(settings(), settings())
    assert {c["status"] for c in checks} == {"observed-pass"}
    assert [c["id"] for c in checks][:2] == ["match.preprocessing", "match.input-range"]


@pytest.mark.parametrize(
    "key,value,check_id",
    [
        ("preprocessing", "/127.5-1", "match.preprocessing"),
        ("x_range", [0.0, 255.0], "match.input-range"),
        ("class_order", ["Trouser", "T-shirt/top"], "match.class-order"),
        ("loss_reduction", "sum", "match.loss-reduction"),
        ("state", {"forward": "train", "loss_grads": "train"}, "match.state"),
        ("seed", 2, "match.seed"),
        ("init_sha256", "c" * 64, "match.init"),
        ("optimizer", "Adam(lr=0.001, eps=0.0001)", "match.optimizer"),
    ],
)
def test_a_mismatched_setting_is_an_observed_fail_naming_both_values(key, value, check_id):
    checks = {c["id"]: c for c in matched_settings(settings(), settings(**{key: value}))}
    assert checks[check_id]["status"] == "observed-fail"
    assert checks[check_id]["evidence"] == {"ref": settings()[key], "cand": value}
    assert checks[check_id]["hint"]
    others = [c for cid, c in checks.items() if cid != check_id]
    assert all(c["status"] == "observed-pass" for c in others)


def test_the_optimizer_is_checked_only_when_steps_were_taken():
    assert "match.optimizer" not in {c["id"] for c in matched_settings(settings(), settings())}
    adam = "Adam(lr=0.001, eps=1e-08)"
    checks = {c["id"]: c for c in matched_settings(settings(optimizer=adam), settings(optimizer=adam))}
    assert checks["match.optimizer"]["status"] == "observed-pass"


def test_a_missing_setting_never_passes():
    checks = {c["id"]: c for c in matched_settings(settings(seed=None), settings(seed=None))}
    assert checks["match.seed"]["status"] == "observed-fail"
    assert "not recorded" in checks["match.seed"]["detail"]


def _arrays(scale_logits=1.0):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 10)).astype(np.float32)
    return {"input": np.linspace(0, 1, 12, dtype=np.float32), "logits": logits * scale_logits, "loss": np.float32(2.3)}


def test_compare_sides_passes_identical_tensors_and_counts_flips():
    diffs = compare_sides(
        _arrays(),
        _arrays(),
        ["input", "logits", "loss"],
        ["input", "logits", "loss"],
        None,
        None,
        labels=[0, 1, 2, 3, 4, 5],
    )
    assert [d["name"] for d in diffs] == ["input", "logits", "loss"]
    assert all(d["passed"] and d["max_abs"] == 0.0 for d in diffs)
    assert diffs[1]["flips"]["count"] == 0 and isinstance(diffs[1]["flips"]["count"], int)
    assert diffs[0]["hist"]["zeros"] == 12
    summary = verdict(diffs, matched_settings(settings(), settings()))
    assert summary["verdict"] == "observed-pass"
    assert summary["first_failure"] is None


def test_compare_sides_reports_first_failure_one_sided_and_flips():
    ref, cand = _arrays(), _arrays()
    cand["logits"] = cand["logits"].copy()
    cand["logits"][2] = -cand["logits"][2]  # sample 2 changes its arg-max
    cand["extra"] = np.ones(3, np.float32)
    diffs = compare_sides(
        ref,
        cand,
        ["input", "logits", "loss"],
        ["input", "logits", "loss", "extra"],
        None,
        None,
        labels=[9, 9, 7, 9, 9, 9],
    )
    logits = diffs[1]
    assert not logits["passed"] and logits["worst_index"][0] == 2
    assert logits["flips"]["count"] == 1
    assert logits["flips"]["pairs"][0]["index"] == 2 and logits["flips"]["pairs"][0]["label"] == 7
    extra = [d for d in diffs if d["name"] == "extra"][0]
    assert extra["reason"] == "present only in candidate" and not extra["passed"]
    summary = verdict(diffs, [])
    assert summary["verdict"] == "observed-fail"
    assert summary["first_failure"]["name"] == "logits"
    assert summary["one_sided"] == ["extra"]
    assert summary["class_flips"]["count"] == 1


def test_verdict_fails_on_a_setting_mismatch_even_when_every_tensor_passes():
    diffs = compare_sides(_arrays(), _arrays(), ["input"], ["input"], None, None)
    summary = verdict(diffs, matched_settings(settings(), settings(seed=3)))
    assert summary["verdict"] == "observed-fail" and summary["settings_mismatch"] == ["match.seed"]


def test_verdict_of_nothing_compared_is_not_a_pass():
    assert verdict([], [])["verdict"] == "observed-fail"


def test_fp16_candidate_uses_fp16_tolerances_and_explicit_ones_win():
    ref = {"x": np.array([1.0, 2.0], np.float32)}
    cand = {"x": np.array([1.0005, 2.0], np.float16)}
    default = compare_sides(ref, cand, ["x"], ["x"], None, None)[0]
    assert (default["rtol"], default["atol"]) == (1e-3, 1e-5) and default["passed"]
    strict = compare_sides(ref, cand, ["x"], ["x"], 0.0, 0.0)[0]
    assert (strict["rtol"], strict["atol"]) == (0.0, 0.0) and not strict["passed"]


def test_choose_batch_is_seeded_sorted_and_bounded():
    val = np.arange(100, 200)
    a, b = choose_batch(val, 8, 3), choose_batch(val, 8, 3)
    assert np.array_equal(a, b) and np.all(np.diff(a) > 0) and set(a) <= set(val)
    assert not np.array_equal(a, choose_batch(val, 8, 4))
    with pytest.raises(JobFailed, match="align.batch is 101"):
        choose_batch(val, 101, 0)


def test_path_label():
    assert path_label({"target": "CPU", "id": 0, "mode": "pynative", "precision": "fp32"}) == "CPU/pynative/fp32"
    assert path_label({"target": "Ascend", "id": 1, "mode": "graph", "precision": "amp-O2"}) == "Ascend:1/graph/amp-O2"


def test_view_formula_fills_in_the_worst_element():
    diff = {"atol": 1e-5, "rtol": 1e-3, "worst": {"ref": 0.5, "cand": 0.502}, "worst_index": [3, 1]}
    lines = formula_lines(diff)
    assert "[3, 1]" in lines[1] and "ref 0.5" in lines[2] and "cand 0.502" in lines[2]
    assert lines[3].endswith("= 0.002")
    assert lines[4].endswith("= 1.00e-05 + 0.001·0.5 = 5.10e-04")  # 1e-5 + 1e-3 * 0.5
    assert lines[-1].endswith("OUTSIDE")
    inside = formula_lines({"atol": 1e-5, "rtol": 1e-3, "worst": {"ref": 0.5, "cand": 0.5001}, "worst_index": [0]})
    assert inside[-1].endswith("within")


def test_view_formula_for_non_finite_and_missing():
    nan = formula_lines({"atol": 1e-5, "rtol": 1e-3, "worst": {"ref": 1.0, "cand": "nan"}, "worst_index": [0]})
    assert "NaN never matches" in nan[-1]
    one_sided = formula_lines({"atol": None, "rtol": None, "worst": None, "reason": "present only in reference"})
    assert "present only in reference" in one_sided[-1]


def test_view_number_and_histogram_helpers():
    assert num(0.0) == "0" and num(None) == "—" and num("nan") == "nan"
    assert num(2.5e-7) == "2.50e-07" and num(0.1234567) == "0.1235"
    assert percent(0.0) == "0.00%" and percent(1e-6) == "<0.01%" and percent(None) == "—"
    assert shape_text([]) == "scalar" and shape_text([8, 16]) == "8×16"
    assert shape_text({"ref": [2], "cand": [3]}) == "ref 2 / cand 3"
    rows = hist_rows({"edges": [1e-6, 1e-5, 1e-4], "counts": [4, 2], "zeros": 10, "nonfinite": 1}, width=10)
    assert [r[1] for r in rows] == [10, 4, 2, 1]
    assert rows[0][2] == "█" * 10 and rows[2][2] == "██"
    assert hist_rows(None) == []


class _Job:
    def __init__(self, jid):
        self.jid, self.kind = jid, "align"


def test_view_folds_events_and_resets_on_a_new_job():
    view = AlignmentView(SessionModel())
    job = _Job("align-001")
    feed(
        view,
        job,
        [
            {"type": "started", "reference": "CPU/pynative/fp32", "candidate": "CPU/graph/fp16"},
            {"type": "check", "id": "side.ref", "status": "observed-pass", "evidence": {}},
            {"type": "check", "id": "match.seed", "status": "observed-pass"},
            {"type": "tensor_diff", "name": "input", "passed": True},
            {"type": "tensor_diff", "name": "logits", "passed": False, "flips": {"n": 4, "count": 1, "pairs": []}},
            {"type": "tensor_diff", "name": "loss", "passed": False},
        ],
    )
    assert view.label("ref") == "CPU/pynative/fp32" and view.side_status("ref") == "observed-pass"
    assert view.first_failure == 1 and view.default_selection() == "logits"
    assert view.flips["count"] == 1 and len(view.matched) == 1
    before = view.version
    view.select("loss")
    assert view.selected == "loss" and view.version == before + 1
    feed(view, _Job("align-002"), [{"type": "tensor_diff", "name": "input", "passed": True}])
    assert view.jid == "align-002" and view.first_failure is None and view.matched == []


def test_a_declared_compute_dtype_sets_the_tolerance_and_keeps_the_stored_one():
    ref = {"logits": np.array([[1.0, 2.0]], np.float32)}
    cand = {"logits": np.array([[1.0005, 2.0]], np.float32)}  # amp: float16 work, float32 output
    plain = compare_sides(ref, cand, ["logits"], ["logits"], None, None)[0]
    assert plain["rtol"] == 1.3e-6 and not plain["passed"] and "stored_dtype" not in plain
    declared = compare_sides(
        ref, cand, ["logits"], ["logits"], None, None, computed={"ref": {}, "cand": {"logits": "float16"}}
    )[0]
    assert declared["dtype"] == {"ref": "float32", "cand": "float16"}
    assert declared["stored_dtype"] == {"ref": "float32", "cand": "float32"}
    assert declared["rtol"] == 1e-3 and declared["passed"]
