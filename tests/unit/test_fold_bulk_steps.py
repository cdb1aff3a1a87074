"""A batched line as the train job writes it (main rank, float lists, one size, one phase) is folded at once:
the outcome is the one of folding the `step` events it stands for, one by one (thinning, NaN and rank 0 included)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fold_state import record_state
from workbench.events.steps import expand_steps
from workbench.fold.record import JobRecord
from workbench.fold.steptable import StepTable

floats = st.floats(allow_nan=True, allow_infinity=True) | st.floats(0.001, 10.0)


@st.composite
def job_lines(draw):
    """Batched lines of one run: consecutive steps, sometimes rank 0, phases the job writes."""
    lines, seq, step = [], 0, 1
    rank = draw(st.sampled_from([None, 0]))
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 40))
        ev = {
            "v": 1,
            "seq": seq,
            "t": 1.0 + seq,
            "type": "steps",
            "epoch": 1,
            "first_step": step,
            "global_step": step,
            "loss": draw(st.lists(floats, min_size=n, max_size=n)),
            "step_ms": draw(st.lists(floats, min_size=n, max_size=n)),
            "batch_size": draw(st.sampled_from([64, 48])),
            "phase": draw(st.sampled_from(["compile", "recompile", "warmup", "steady", "profiled", "other"])),
        }
        if rank is not None:
            ev["rank"] = rank
        lines.append(ev)
        seq, step = seq + 1, step + n
    return lines


def _record(max_rows):
    return JobRecord(
        "train-001",
        "train",
        config={"train": {"warmup_steps": 2}},
        keep_steps=StepTable(max_rows=max_rows, spool=True, jid="train-001"),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_lines(), st.sampled_from([1, 2, 3, 7, 4000]))
def test_a_batched_line_at_once_equals_its_steps_one_by_one(lines, max_rows):
    batched = _record(max_rows)
    batched.ingest([dict(ev) for ev in lines])
    single = _record(max_rows)
    for ev in lines:
        for step in expand_steps(ev):
            single._one_step(step)
    a, b = record_state(batched), record_state(single)
    for key in ("steps_seen", "series", "ranks", "table", "table_facts", "rows"):
        assert a[key] == b[key], key
