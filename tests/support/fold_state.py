"""Everything a JobRecord says about its lines and steps, as one comparable value (spool rows included)."""

from __future__ import annotations

from workbench.fold.record import JobRecord


def record_state(rec: JobRecord) -> dict:
    """Everything a record says about its lines and steps (the spool's rows too)."""
    s, t = rec.steps, rec.step_table
    rows = None
    if t is not None:
        t._flush()
        t.spool.seek(0)
        rows = t.spool.read()
    return {
        "events": rec.events,
        "damaged": rec.damaged,
        "damaged_count": rec.damaged_count,
        "type_counts": dict(rec.type_counts),
        "seq_problems": rec.seq_problems,
        "missing": rec.missing_seq,
        "expected": dict(rec.seq.expected),
        "last_t": repr(rec.last_t),
        "synthetic": rec.synthetic,
        "steps_seen": rec.steps_seen,
        "unknown": rec.unknown,
        "series": (
            repr(s.loss.points),
            s.loss.per_point,
            repr(list(s.step_ms)),
            repr(s.compile_ms),
            s.warmup_seen,
            s.profiled_seen,
            s.count,
            repr(s.last),
            repr((s.first_loss, s.last_loss, s.min_loss)),
        ),
        "ranks": {r: (repr(list(v.step_ms)), list(v.sizes), repr(v.last_ms)) for r, v in rec.rank_steps.items()},
        "table": repr(t.as_dict()) if t is not None else None,
        "table_facts": (
            repr((t.main_count, t.first_loss, t.last_loss, t.min_loss, sorted(t.ranks), t.sizes))
            if t is not None
            else None
        ),
        "rows": rows,
    }
