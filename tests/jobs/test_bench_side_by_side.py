"""Benches started at the same time on one machine leave each other's processes, terminals and folders alone; run_all's commands."""

from __future__ import annotations

import json
import shutil

import pytest

from bench.run_all import benches, unknown_options
from tests.support.side_by_side import python, run_pair


@pytest.mark.slow
def test_two_scale_benches_and_startup_at_once_each_finish_clean(tmp_path):
    py = python()
    scale = [py, "bench/scale.py", "--sizes", "10000", "--mixes", "train", "--rounds", "1", "--out", "{out}"]
    scale += ["--arms", "json.loads,export,attach,minimal app"]
    reports = run_pair(
        {
            "scale-a": scale + ["--seed", "1"],
            "scale-b": scale + ["--seed", "2"],
            "startup": [py, "bench/startup.py", "--rounds", "1", "--seed", "1", "--out", "{out}"],
        },
        tmp_path,
    )
    for name, rep in reports.items():
        assert rep["rc"] == 0, (name, rep["tail"])
        assert rep["alive"] == [], (name, rep["alive"])  # nothing it started outlives it
        assert rep["left_in_tmp"] == [], (name, rep["left_in_tmp"])  # its temporary folders are gone
    for name in ("scale-a", "scale-b"):
        doc = json.loads((tmp_path / name / "out" / "scale.json").read_text())
        (res,) = doc["results"]
        (row,) = res["rounds"]
        # each run's attach reached its own session's end and its export wrote its screenshots
        assert row["attach"]["timed_out"] is False, row["attach"]
        assert row["attach"]["caught_up_events"] == res["lines"], row["attach"]
        assert row["export"]["rc"] == 0 and row["export"]["screenshots"] > 0, row["export"]
    startup = json.loads((tmp_path / "startup" / "out" / "startup.json").read_text())
    assert startup["rounds"][0]["ms-workbench"] is not None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_two_ui_follow_benches_at_once_keep_to_their_own_tmux_servers_and_jobs(tmp_path):
    py = python()
    follow = [py, "bench/ui_load.py", "--train-only", "--windows", "5", "--window-s", "0.5"]
    reports = run_pair({"ui-a": follow + ["--seed", "1"], "ui-b": follow + ["--seed", "2"]}, tmp_path)
    for name, rep in reports.items():
        assert rep["rc"] == 0, (name, rep["tail"])
        assert rep["alive"] == [], (name, rep["alive"])  # its tmux server, TUIs and training job are gone
        assert rep["left_in_tmp"] == [], (name, rep["left_in_tmp"])  # its socket folder too
        # both measured their own TUI following their own job (a killed server or a refused job ends the run)
        assert "this tree following | 1 |" in rep["tail"], rep["tail"]
        assert "every TUI frozen (floor) | 3 |" in rep["tail"], rep["tail"]


def test_run_all_passes_only_options_its_benches_take():
    # each bench's --help against what the driver passes, full and quick: a renamed option fails here, not at 08:50
    for quick in (False, True):
        assert unknown_options(benches(quick, False)) == []
    broken = benches(False, False)[:1]
    broken[0]["argv"].append("--no-such-option")
    assert unknown_options(broken) == [broken[0]["name"] + ": --no-such-option"]
