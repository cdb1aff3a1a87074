"""The bench's sessions: the batched shape is the same run as the per-line one, written as the train job writes it."""

import json

from bench.scale_sessions import STEPS_PER_LINE, build_session
from workbench.events.protocol import steps_line_ok
from workbench.fold.stream import fold_job


def test_the_batched_session_folds_to_the_same_steps_as_the_per_line_one(tmp_path):
    batched = build_session(tmp_path / "b", "train", 3000)
    per_line = build_session(tmp_path / "p", "train-per-line", 3000)
    a, b = fold_job(batched.parent), fold_job(per_line.parent)
    assert a.damaged_count == b.damaged_count == 0 and not a.seq_problems and not b.seq_problems
    assert a.steps_seen == b.steps_seen > 2900  # a step counts one event whichever way it is written
    assert list(a.steps.loss) == list(b.steps.loss)
    assert [dict(e, seq=0) for e in a.epochs] == [dict(e, seq=0) for e in b.epochs]  # seq counts lines
    lines = [json.loads(line) for line in batched.read_text().splitlines()]
    steps = [ev for ev in lines if ev["type"] == "steps"]
    assert not any(ev["type"] == "step" for ev in lines) and all(steps_line_ok(ev) for ev in steps)
    assert max(len(ev["loss"]) for ev in steps) == STEPS_PER_LINE
    assert len(lines) < len(per_line.read_text().splitlines()) / 20
