"""Comparing two long runs keeps memory flat, as export does: both folds stream their events files and keep
the record's thinned step table, so peak RSS (in a fresh process) barely grows from 15 000 to 150 000 events."""

from __future__ import annotations

from pathlib import Path

from bench.scale_sessions import SID, build_session
from tests.support.child import PEAK_MB, json_from_child

GROWTH_MB = 10.0  # 10x the events may cost this much more at most ("flat")
CHILD = (
    """
import json, sys
from pathlib import Path
from workbench.compare.inputs import compare_dirs, default_tolerances
job = Path(sys.argv[1]) / sys.argv[2] / "jobs" / "train-001"
result = compare_dirs(job, job, default_tolerances())
"""
    + PEAK_MB
    + """
print(json.dumps({"rss_mb": peak_mb, "points": len(result["loss_curves"]["a"]["x"])}))
"""
)


def compare_in_child(root: Path) -> dict:
    return json_from_child(CHILD, str(root), SID)


def test_compare_memory_is_flat_in_the_number_of_events(tmp_path):
    build_session(tmp_path / "small", "train-per-line", 15000)
    build_session(tmp_path / "big", "train-per-line", 150000)
    small, big = compare_in_child(tmp_path / "small"), compare_in_child(tmp_path / "big")
    assert 0 < big["points"] <= 400 and small["points"] > 0  # a loss curve was drawn from the steps
    assert big["rss_mb"] - small["rss_mb"] < GROWTH_MB, (small, big)
