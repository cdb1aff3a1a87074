"""bench/train_throughput.py and bench/stats.py: the job-vs-bare verdict, its interval, the budget, the estimators."""

from __future__ import annotations

import math
import statistics

from hypothesis import given
from hypothesis import strategies as st

from bench.stats import ratio_interval, rounds_to_settle, t_quantile
from bench.train_throughput import (
    aa_settled,
    estimator_table,
    fits_budget,
    merged,
    paced_step_s,
    paired_ratios,
    running_within,
    spread_sources,
    steps_per_epoch,
    switch_cost,
    verdict,
)


def _run(epochs, step_ms=1.0):
    return {"epoch_s": epochs, "step_ms_median": step_ms}


def test_verdict_says_within_only_when_the_whole_interval_is_at_most_plus_5_percent():
    assert verdict((1.0, 0.97, 1.05)) == "within 5 %"
    assert verdict((1.0, 0.97, 1.051)) == "not settled"
    assert verdict((1.1, 1.051, 1.2)) == "not within"
    assert verdict((1.06, 1.05, 1.2)) == "not settled"
    assert verdict(None) == "not settled"


def test_the_99_percent_interval_is_wider_than_the_95_percent_one():
    ratios = [0.9, 1.1, 1.0, 0.95, 1.08]
    mean95, low95, high95 = ratio_interval(ratios)
    mean99, low99, high99 = ratio_interval(ratios, 0.99)
    assert mean95 == mean99 and low99 < low95 and high99 > high95
    assert t_quantile(40) == 1.96 and t_quantile(40, 0.99) == 2.576


def test_rounds_to_settle_is_the_first_count_whose_interval_clears_the_bound():
    ratios = [math.exp(v) for v in (-0.2, 0.15, -0.05, 0.1, -0.1)]
    logs = [math.log(r) for r in ratios]
    gap, sd = abs(statistics.fmean(logs) - math.log(1.05)), statistics.stdev(logs)
    n = rounds_to_settle(ratios, 1.05)
    assert n is not None
    assert t_quantile(n - 1) * sd / math.sqrt(n) < gap <= t_quantile(n - 2) * sd / math.sqrt(n - 1)


def test_rounds_to_settle_says_never_when_the_mean_sits_on_the_bound():
    assert rounds_to_settle([1.05 * 0.9, 1.05 / 0.9], 1.05) is None
    assert rounds_to_settle([1.0], 1.05) is None


def test_the_budget_refuses_a_round_that_would_end_after_it():
    assert fits_budget(500.0, 20.0, 12.0)
    assert not fits_budget(710.0, 20.0, 12.0)
    assert fits_budget(10_000.0, 20.0, 0.0)


def test_paired_ratios_and_the_estimators_leave_out_the_compile_epoch():
    raw = {
        "job": [_run([9.0, 1.1, 1.3, 1.2], 2.0), _run([9.0, 1.0, 1.0, 1.0], 1.0)],
        "bare": [_run([1.0, 1.0, 1.0, 1.0], 1.0), _run([5.0, 2.0, 2.0, 2.0], 4.0)],
    }
    assert paired_ratios(raw) == [1.2, 0.5]
    rows = estimator_table(raw)
    assert rows[2].startswith("| median steady epoch |")
    by_name = {row.split(" | ")[0].lstrip("| "): row for row in rows[2:]}
    assert "not the same span" in " ".join(by_name)
    fastest = by_name["fastest steady epoch"]
    # fastest: 1.1/1.0 and 1.0/2.0
    assert "| %.3f |" % (abs(math.log(1.1) - math.log(0.5)) / math.sqrt(2)) in fastest


def test_spread_sources_splits_within_a_process_from_between_processes():
    runs = [_run([9.0, 1.0, 1.0, 1.0]), _run([9.0, 2.0, 2.0, 2.0])]
    within, between = spread_sources(runs)
    assert within == 0.0 and abs(between - math.log(2.0) / math.sqrt(2)) < 1e-12
    assert spread_sources([_run([9.0, 1.0]), _run([9.0, 2.0])])[0] is None


def test_a_bracketing_bare_loop_pairs_by_the_geometric_mean_of_its_epochs_before_and_after_the_job():
    bare = _run([5.0, 1.0], 1.0)
    bare.update(after_s=[4.0], bracket_s=2.0)  # sqrt(1.0 * 4.0), as arm_bare writes it
    raw = {"job": [_run([9.0, 3.0]), _run([9.0, 2.0])], "bare": [bare, _run([5.0, 1.0])]}
    assert paired_ratios(raw) == [1.5, 2.0]  # the second round's bare loop did not bracket: its steady epoch
    by_name = {row.split(" | ")[0].lstrip("| "): row for row in estimator_table(raw)[2:]}
    before, after = (by_name["median steady epoch, bare %s the job only" % w] for w in ("before", "after"))
    # before the job: 3.0/1.0 and 2.0/1.0; after it: 3.0/4.0 and 2.0/1.0
    assert "| %.3f |" % (abs(math.log(3.0) - math.log(2.0)) / math.sqrt(2)) in before
    assert "| %.3f |" % (abs(math.log(0.75) - math.log(2.0)) / math.sqrt(2)) in after


def test_the_bare_before_and_after_rows_are_left_out_without_bracketing():
    raw = {"job": [_run([9.0, 3.0]), _run([9.0, 2.0])], "bare": [_run([5.0, 1.0]), _run([5.0, 1.5])]}
    assert not any("bare before" in row or "bare after" in row for row in estimator_table(raw))


def test_running_within_counts_only_the_running_turns_inside_the_span():
    runs = [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert running_within(runs, 0.5, 4.5) == 0.5 + 1.0 + 0.5
    assert running_within(runs, 1.0, 2.0) == 0.0  # stopped the whole span
    assert running_within([[2.0, 3.0], [0.0, 2.5]], 0.0, 3.0) == 3.0  # overlapping turns count once
    assert running_within([], 0.0, 3.0) == 0.0


def test_switch_cost_compares_steps_cut_by_a_stop_with_whole_ones_by_their_running_time():
    runs = [[0.0, 1.0], [2.0, 3.0]]
    # two whole steps of 0.1 s, one cut: 0.15 s before the stop and 0.05 s after it (0.2 s of running time)
    steps = [[0.1, 0.2], [0.3, 0.4], [0.85, 2.05], [2.1, 2.2]]
    cut_ms, whole_ms, n_cut, n_whole = switch_cost(runs, steps)
    assert math.isclose(cut_ms, 200.0) and math.isclose(whole_ms, 100.0) and (n_cut, n_whole) == (1, 3)
    assert switch_cost(runs, [[0.1, 0.2]]) is None  # no step was cut


_times = st.floats(min_value=0.0, max_value=1000.0, allow_nan=False)


@given(st.lists(st.tuples(_times, _times), max_size=12), _times, _times)
def test_running_time_within_a_span_is_never_more_than_the_span(turns, start, end):
    start, end = min(start, end), max(start, end)
    got = running_within([sorted(t) for t in turns], start, end)
    assert 0.0 <= got <= (end - start) * (1 + 1e-9) + 1e-9


@given(_times, _times, st.floats(min_value=0.0, max_value=10.0), st.floats(min_value=0.0, max_value=10.0))
def test_an_arm_never_stopped_in_the_span_gets_the_whole_span(start, end, before, after):
    start, end = min(start, end), max(start, end)
    got = running_within([[start - before, end + after]], start, end)
    assert math.isclose(got, end - start, rel_tol=1e-9, abs_tol=1e-9)


@given(st.lists(st.tuples(_times, _times), max_size=12), _times, _times)
def test_running_time_and_stopped_time_add_up_to_the_span(turns, start, end):
    start, end = min(start, end), max(start, end)
    runs = merged([sorted(t) for t in turns])
    edges = [-1e9] + [v for run in runs for v in run] + [2e9]
    stopped = [edges[i : i + 2] for i in range(0, len(edges), 2)]  # before the first turn, between turns, after
    got = running_within(runs, start, end) + running_within(stopped, start, end)
    assert math.isclose(got, end - start, rel_tol=1e-9, abs_tol=1e-6)


def test_the_aa_check_is_settled_only_when_its_interval_is_narrow_enough():
    assert aa_settled((1.0, 0.99, 1.01))
    assert not aa_settled((1.0, 0.97, 1.03))
    assert not aa_settled(None)


def _paced(steady_end=3.0):
    """A pacing arm that ran [0, 1] and [2, 3] (stopped between), 0.1 running seconds a step, steady from 0."""

    def wall(r):
        return r if r < 1.0 else r + 1.0

    steps = [[wall(k / 10), wall((k + 1) / 10)] for k in range(20) if wall((k + 1) / 10) <= steady_end]
    return {"runs": [[0.0, 1.0], [2.0, 3.0]], "spans": [[-1.0, 0.0], [0.0, steady_end]], "step_spans": steps}


def test_a_pacing_arm_is_timed_per_step_over_the_other_arms_span_leaving_out_its_stopped_time():
    per_step, covered = paced_step_s(_paced(), 0.5, 2.5)  # 5 steps before the stop, 5 after
    assert math.isclose(per_step, 0.1) and covered == 1.0
    per_step, covered = paced_step_s(_paced(), 0.55, 2.45)  # half a step at each edge counts as half
    assert math.isclose(per_step, 0.1) and math.isclose(covered, 1.0)
    per_step, covered = paced_step_s(_paced(steady_end=2.2), 0.5, 2.5)  # its steady epochs ended at 2.2
    assert math.isclose(per_step, 0.1) and math.isclose(covered, 1.7 / 2.0)
    assert math.isnan(paced_step_s(_paced(), -1.0, -0.5)[0])  # no steady step there: no time per step
    assert steps_per_epoch() == 844 and steps_per_epoch(640) == 10
