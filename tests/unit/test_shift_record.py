"""The record's new-distribution lines: said when evaluated, 'not evaluated' when no shift job ended ok."""

from __future__ import annotations

from workbench.record.markdown import shift as shift_md

RESULT = {
    "candidate": {"label": "train-002 epoch 5, checkpoint 3f2a9c1e4b5d", "sha256": "3f2a9c1e4b5d" + "0" * 52},
    "images": {"n": 2000},
    "clean": {"macro_f1": 0.86},
    "tolerance": 0.05,
    "sets": [
        {
            "set": "gamma",
            "severity": 1,
            "macro_f1": 0.85,
            "drop": 0.01,
            "accuracy": 0.85,
            "mean_confidence": 0.9,
            "recall_drop": [0.0] * 10,
            "shift": "gamma 1.4",
        },
        {
            "set": "inverted",
            "severity": 1,
            "macro_f1": 0.21,
            "drop": 0.65,
            "accuracy": 0.2,
            "mean_confidence": 0.9,
            "recall_drop": [0.5] + [0.0] * 9,
            "shift": "inversion blend 0.2",
        },
    ],
    "failures": [
        {"set": "inverted", "severity": 1, "cases": [{"test_index": 7, "true": 0, "pred": 8, "confidence": 0.97}]}
    ],
}


def job(state="ok", summary=RESULT, jid="shift-001"):
    return {"jid": jid, "label": state, "state": state, "summary": summary, "artifacts": [], "checks": []}


def test_scope_lines_quote_the_newest_ok_job():
    lines = shift_md.scope_lines({"new_distribution": [job(jid="shift-001"), job("failed", None, "shift-002")]})
    text = "\n".join(lines)
    assert "shift-001 evaluated the candidate train-002 epoch 5" in text
    assert "- Holds — gamma: macro-F1 within 0.05" in text
    assert "- **Does not hold** — inverted: macro-F1 0.86 → 0.21 from severity 1 (inversion blend 0.2)" in text


def test_without_an_ok_shift_job_the_scope_is_not_evaluated_and_nothing_holds():
    for jobs in ([], [job("failed", None)]):
        text = "\n".join(shift_md.scope_lines({"new_distribution": jobs}))
        assert text.count("Not evaluated") == 1 and "Holds" not in text and "Does not hold" not in text


def test_the_section_shows_the_failures_and_the_class_hit_first():
    text = "\n".join(shift_md.section_lines({"new_distribution": [job()]}, {}))
    assert "| inverted | background | 0.21 | 0.65 | T-shirt/top −0.50 |" in text
    assert "| inverted | 1 | 7 | T-shirt/top | Bag | 0.97 |" in text
