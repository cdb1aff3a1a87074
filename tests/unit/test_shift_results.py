"""New-distribution results: heat map, worst drop, the scope statement and the threshold, true and false cases."""

from __future__ import annotations

from workbench.analysis import shift as S

CLEAN = {"macro_f1": 0.86, "accuracy": 0.87}


def row(name, severity, f1, shift="x"):
    return {"set": name, "severity": severity, "macro_f1": f1, "drop": CLEAN["macro_f1"] - f1, "shift": shift}


RESULT = {
    "clean": CLEAN,
    "tolerance": 0.05,
    "sets": [
        row("gamma", 1, 0.86),
        row("gamma", 5, 0.83),
        row("inverted", 1, 0.80, "inversion blend 0.2"),
        row("inverted", 3, 0.40, "inversion blend 0.6"),
        row("inverted", 5, 0.21, "inversion blend 1"),
        row("own", 0, 0.70),
    ],
}


def test_heat_map_is_sets_by_severity_without_the_own_set():
    names, severities, grid = S.heat_map(RESULT)
    assert names == ["gamma", "inverted"] and severities == [1, 3, 5]
    assert grid == [[0.86, None, 0.83], [0.80, 0.40, 0.21]]


def test_scope_says_where_it_holds_and_where_it_breaks_from_the_first_breaking_severity():
    scope = S.scope(RESULT)
    assert scope["holds"] == ["gamma: macro-F1 within 0.05 of the clean images at every severity evaluated"]
    assert scope["breaks"][0] == (
        "inverted: macro-F1 0.86 → 0.80 from severity 1 (inversion blend 0.2) — not for photos on light "
        "backgrounds without inversion"
    )
    assert scope["breaks"][1].startswith("own: macro-F1 0.86 → 0.70 — not for")


def test_a_set_just_over_the_tolerance_is_never_said_to_hold():
    result = dict(RESULT, sets=[row("gamma", 1, 0.86 - 0.0501)])
    assert S.scope(result) == {"holds": [], "breaks": [S.scope(result)["breaks"][0]]}
    assert S.scope(result)["breaks"][0].startswith("gamma:")


def test_judge_against_one_limit_and_per_set_limits():
    ok, lines = S.judge(RESULT, S.drop_limits(0.1, ["gamma", "inverted"]))
    assert not ok and lines == [
        "gamma: worst drop 0.030 at severity 5 within limit 0.100",
        "inverted: worst drop 0.650 at severity 5 over limit 0.100",
    ]
    ok, lines = S.judge(RESULT, S.drop_limits({"gamma": 0.05}, []))
    assert ok and lines == ["gamma: worst drop 0.030 at severity 5 within limit 0.050"]


def test_a_limited_set_that_was_not_evaluated_fails():
    ok, lines = S.judge(RESULT, {"rotate": 0.5})
    assert not ok and lines == ["rotate: not evaluated (limit 0.500)"]


def test_no_limit_means_no_judgement():
    assert S.drop_limits(None, ["gamma"]) == {}
