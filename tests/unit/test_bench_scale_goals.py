"""bench/scale.py's goal lines: the export's time on the 95 % interval of its per-round ratios, memory and attach in
every round."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from bench.scale import goals


def _result(ratios: List[float], rss: Optional[List[float]] = None, attach: Optional[List[Any]] = None) -> Dict:
    rounds = []
    for i, r in enumerate(ratios):
        row: Dict[str, Any] = {"export": {"ratio": r, "cpu_ratio": r * 1.8, "all_rss_mb": (rss or [150.0] * 99)[i]}}
        if attach is not None:
            row["attach"] = {"ratio": attach[i]}
        rounds.append(row)
    return {"mix": "train", "events": 1000000, "lines": 33334, "bytes": 1, "rounds": rounds}


def test_the_export_is_met_on_its_interval_and_the_rounds_over_are_still_said():
    line = goals([_result([3.06, 2.98, 2.66, 3.29, 3.04, 2.36, 2.69, 2.87, 2.93, 2.70, 2.68, 2.51, 2.90, 2.85])])[0]
    assert "(goal ≤ 3.0): met — 2.81×, 95 % interval [2.68×, 2.96×] (3 of 14 rounds over 3.0×, worst 3.29×)" in line


def test_an_interval_reaching_over_the_goal_is_not_settled_and_one_wholly_over_is_not_met():
    assert "(goal ≤ 3.0): not settled — " in goals([_result([2.9, 3.3, 2.7, 3.2])])[0]
    assert "(goal ≤ 3.0): NOT met — " in goals([_result([3.3, 3.4, 3.35, 3.5])])[0]
    assert "(goal ≤ 3.0): not settled (one round;" in goals([_result([2.0])])[0]


def test_memory_and_attach_are_judged_on_every_round():
    line = goals([_result([2.5, 2.6, 2.4], rss=[150.0, 251.0, 140.0], attach=[1.2, 1.9, 2.1])])[0]
    assert "(goal < 250: NOT met)" in line and "(goal ≤ 2.0 in every round: NOT met)" in line
    line = goals([_result([2.5, 2.6, 2.4], attach=[1.2, None, 1.1])])[0]
    assert "NOT met: 1 attach(es) never caught up" in line


def test_only_the_largest_session_of_each_mix_is_judged():
    small = dict(_result([9.0, 9.5]), events=10000)
    got = goals([small, _result([2.5, 2.6, 2.4])])
    assert len(got) == 1 and got[0].startswith("train/1000000: ")


def test_an_export_arm_that_was_not_run_is_said_not_measured():
    result = _result([])
    result["rounds"] = [{"attach": {"ratio": 1.2}}]
    assert "(goal ≤ 3.0): not measured;" in goals([result])[0]
