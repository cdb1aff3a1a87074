"""bench/startup.py's verdict: judged on the 95 % interval of the per-round ratios, every round over counted."""

from __future__ import annotations

from bench.startup import goal_line


def test_met_only_when_the_whole_interval_is_at_or_under_the_goal():
    line = goal_line([0.904, 1.681, 0.802, 0.988, 1.031, 1.010, 1.400, 1.164, 1.274, 1.252])
    assert ": met —" in line and "[0.96×, 1.32×]" in line
    assert "1 of 10 rounds over 1.5×, worst 1.68×" in line  # the round over the goal is still said


def test_not_met_when_the_whole_interval_is_over():
    line = goal_line([1.8, 1.9, 1.85, 1.95, 1.75])
    assert ": NOT met —" in line and "5 of 5 rounds over" in line


def test_not_settled_when_the_interval_straddles_the_goal_or_there_is_one_round():
    assert ": not settled —" in goal_line([1.2, 1.9, 1.1])
    assert ": not settled (one round;" in goal_line([1.2])
