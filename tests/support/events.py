"""Checks on the events files a test left behind."""

from __future__ import annotations

from pathlib import Path

from workbench.events.protocol import validate_file


def assert_events_valid(job_dir: Path) -> None:
    """Every line of the job's events.jsonl is a valid v1 event with contiguous seq."""
    path = Path(job_dir) / "events.jsonl"
    assert path.is_file(), "%s: no events.jsonl" % job_dir
    problems = validate_file(str(path))
    assert not problems, "%s:\n  %s" % (path, "\n  ".join(problems[:20]))
