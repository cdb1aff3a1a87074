"""Exporting a long session keeps memory flat: peak RSS (resource, in a fresh process) stays under the goal
and barely grows from 15 000 to 150 000 events, while steps.csv still holds every step."""

from __future__ import annotations

from pathlib import Path

from bench.scale_sessions import SID, build_session
from tests.support.child import PEAK_MB, json_from_child

RSS_GOAL_MB = 250.0  # the export of a 1 000 000-event session stays under 250 MB (docs/PERFORMANCE.md)
GROWTH_MB = 30.0  # 10x the events may cost this much more at most ("flat")
CHILD = (
    """
import json, sys
from pathlib import Path
from workbench.record.write import export_session
from workbench.session.store import SessionStore
out = export_session(SessionStore(Path(sys.argv[1])), sys.argv[2])
rows = sum(1 for _ in open(out / "metrics" / "steps.csv")) - 1
report = json.loads((out / "report.json").read_text())
"""
    + PEAK_MB
    + """
print(json.dumps({"rss_mb": peak_mb, "csv_rows": rows,
                  "kept": len(report["jobs"][0]["steps"]["step"]), "recorded": report["jobs"][0]["steps"]["recorded"]}))
"""
)


def export_in_child(root: Path) -> dict:
    return json_from_child(CHILD, str(root), SID)


def test_export_memory_is_flat_in_the_number_of_events(tmp_path):
    small_events = build_session(tmp_path / "small", "train-per-line", 15000)
    big_events = build_session(tmp_path / "big", "train-per-line", 150000)
    steps_small = sum(1 for line in small_events.open() if '"type":"step"' in line)
    steps_big = sum(1 for line in big_events.open() if '"type":"step"' in line)
    small, big = export_in_child(tmp_path / "small"), export_in_child(tmp_path / "big")
    assert (small["csv_rows"], big["csv_rows"]) == (steps_small, steps_big)  # every step is in the CSV
    assert big["recorded"] == steps_big and big["kept"] <= 4001  # the report keeps a thinned table
    assert big["rss_mb"] < RSS_GOAL_MB, big
    assert big["rss_mb"] - small["rss_mb"] < GROWTH_MB, (small, big)
