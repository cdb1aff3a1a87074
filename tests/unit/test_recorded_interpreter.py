"""A recorded session copied for a test names no interpreter of the machine that recorded it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.sessions import set_interpreter

COMPARE = Path(__file__).resolve().parents[1] / "fixtures" / "compare" / "20261201-141656-3875"


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_every_value_naming_the_recorded_interpreter_names_this_one(tmp_path):
    session = tmp_path / COMPARE.name
    shutil.copytree(str(COMPARE), str(session))
    recorded = json.loads((COMPARE / "jobs" / "env-001" / "events.jsonl").read_text().splitlines()[0])["python"]
    assert json.dumps(recorded) in (COMPARE / "jobs" / "env-001" / "job.json").read_text()  # what is to be rewritten
    here = str(tmp_path / "bin" / "python")  # not the recorded path, whichever machine this runs on
    set_interpreter(session, here)
    for path in sorted(session.glob("jobs/*/events.jsonl")) + sorted(session.glob("jobs/*/job.json")):
        text = path.read_text(encoding="utf-8")
        docs = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.suffix == ".jsonl"
            else [json.loads(text)]
        )
        values = [s for d in docs for s in _strings(d)]
        assert recorded not in values, path  # the env job's executable and each command's first word too
    env = [json.loads(line) for line in (session / "jobs" / "env-001" / "events.jsonl").read_text().splitlines()]
    assert here in [s for e in env for s in _strings(e)]
