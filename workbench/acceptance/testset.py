"""The test set is spent once per session: every evaluation on the test split counts, whatever model it evaluated."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List

from workbench.fold.record import SessionModel
from workbench.session.candidate import checkpoint_subject, subject_label

COST = (
    "a second evaluation of the test set makes test-evaluations observed-fail for this session, whatever model it "
    "evaluates (choosing between models by test numbers uses the test set for selection); the candidate's first "
    "test result stays the reported one"
)


def evaluations(model: SessionModel) -> List[Dict[str, Any]]:
    """Every test-set evaluation of the session, oldest first: {jid, from, sha256, subject, t, macro_f1, ...}."""
    out = []
    for rec in model.of_kind("test"):
        for summary in rec.results:
            ckpt = summary["checkpoint"] if isinstance(summary.get("checkpoint"), dict) else {}
            sha = ckpt.get("sha256") if isinstance(ckpt.get("sha256"), str) else None
            out.append(
                dict(summary, jid=rec.jid, sha256=sha, subject=checkpoint_subject(sha) if sha else None, t=rec.created)
            )
    return out


def session_evaluations(session_dir: Path) -> List[Dict[str, Any]]:
    """evaluations() of a session folder, folding only its test jobs (a long training run is never read)."""
    from workbench.fold.record import SessionModel
    from workbench.fold.stream import fold_job

    model = SessionModel()
    for job_dir in sorted((Path(session_dir) / "jobs").glob("test-*")):
        if (job_dir / "job.json").is_file():
            model.add(fold_job(job_dir))
    return evaluations(model)


def describe(ev: Dict[str, Any]) -> str:
    """'test-001 (train-001, checkpoint 3f2a9c1e4b5d, 2026-12-02 01:23)' for one evaluation."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(ev["t"])) if ev.get("t") else "time unknown"
    return "%s (%s, %s, %s)" % (ev["jid"], ev.get("from") or "?", subject_label(ev.get("subject")), when)
