"""The opening of report.md: the candidate, its lineage step by step, the hand-over, and what is about other models."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.record.lineage import SPLIT_PREFIX
from workbench.record.markdown.tables import table
from workbench.session.candidate import CHECKPOINT_PREFIX, subject_label


def _subject(value: Optional[str]) -> str:
    if not value:
        return "-"
    if value.startswith(SPLIT_PREFIX):
        return "split %s" % value[len(SPLIT_PREFIX) : len(SPLIT_PREFIX) + 12]
    return subject_label(value)


def candidate_lines(report: Dict[str, Any]) -> List[str]:
    """'## The candidate': who it is, the lineage table, the deliverable (or why none), other models apart."""
    lineage = report.get("candidate") or {}
    cand = lineage.get("candidate")
    sid = report["session"]["id"]
    made = report.get("deliverable") or {}
    lines = ["## The candidate", ""]
    if not cand:
        lines += [
            "**No candidate is frozen in this session.** No model here is the one handed over, no verdict is "
            "about a model, and no deliverable was written. Freeze one with `%s`."
            % ((lineage.get("commands") or {}).get("freeze") or "ms-workbench freeze %s" % sid),
            "",
        ]
    else:
        lines += [
            "**%s epoch %s**, checkpoint SHA-256 `%s` (`%s`); split `%s`, recipe `%s`; freeze %d of %d (%s)."
            % (
                cand["run"],
                cand["epoch"],
                cand["sha256"],
                cand["checkpoint"],
                (cand.get("split_sha256") or "not recorded")[:12],
                cand["recipe_sha256"][:12],
                cand["n"],
                lineage.get("freezes") or cand["n"],
                cand["reason"],
            ),
            "",
        ]
        lines += table(
            ["step", "job", "subject", "verdict", "detail"],
            [
                [s["step"], s["job"] or "-", _subject(s["subject"]), s["verdict"], s["detail"]]
                for s in lineage.get("steps") or []
            ],
        )
        if made.get("written"):
            lines += [
                "Hand-over: [deliverable/](deliverable/README.md) holds the candidate's `model.ckpt` and `model.mindir`, "
                "the standalone `model.py` (MindSpore and numpy only), `classes.json`, the preprocessing, the "
                "reference inputs with their expected outputs and `requirements.txt`; `python model.py` there checks "
                "them.",
                "",
            ]
        else:
            lines += ["No deliverable was written: %s." % (made.get("why") or "the record was rendered without it"), ""]
    others = lineage.get("other_models") or []
    if others:
        lines += [
            "About other models (not the candidate: their evidence does not count for it and their artefacts are "
            "not the hand-over):",
            "",
        ]
        lines += table(
            ["job", "kind", "subject", "its artefacts (not the hand-over)"],
            [
                [
                    o["jid"],
                    o["kind"],
                    _subject(o.get("subject")) if o.get("subject") else "not recorded",
                    ", ".join(o.get("artifacts") or []) or "-",
                ]
                for o in others
            ],
        )
    return lines


def about_line(report: Dict[str, Any], jid: str) -> str:
    """Whom a job's evidence is about, for its section: the candidate, or another model (not the hand-over)."""
    lineage = report.get("candidate") or {}
    jobs = lineage.get("jobs") or {}
    if jid in (jobs.get("test"), jobs.get("export")) or jid in (jobs.get("align") or []):
        return "About **the candidate** (%s)." % subject_label(CHECKPOINT_PREFIX + lineage["candidate"]["sha256"])
    for other in lineage.get("other_models") or []:
        if other["jid"] == jid:
            subject = _subject(other.get("subject")) if other.get("subject") else "subject not recorded"
            if not lineage.get("candidate"):
                return "About %s: no candidate is frozen, so nothing here is the hand-over." % subject
            return "About **another model** (%s): not the candidate; its artefacts are not the hand-over." % subject
    return ""
