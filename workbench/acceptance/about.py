"""What the verdict is about: the session's frozen candidate, which evidence is about it, and complete commands."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from workbench.fold.record import JobRecord, SessionModel
from workbench.session.candidate import Candidate, history, is_about, subject_label
from workbench.session.store import sessions_root

# Jobs whose checks look at a model (its weights or its recipe); the checks of the others (env, data, drill)
# are about the device or the data and count whatever the candidate.
MODEL_JOBS = ("train", "test", "align", "export", "overfit", "resume", "precision")
RECIPE_JOBS_NEEDING_CONFIG = ("overfit", "resume", "precision")  # rerun with the candidate's run config


@dataclass
class About:
    """The session's freezes (the newest is the candidate) and how a printed command names the session."""

    sid: Optional[str] = None
    freezes: Sequence[Candidate] = ()
    sessions: Optional[str] = None  # --sessions ROOT for printed commands, when the root is not the default
    run_config: Optional[str] = None  # the candidate run's config.yaml (the recipe to rerun checks with)
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def candidate(self) -> Optional[Candidate]:
        """The newest freeze, None when nothing was frozen."""
        return self.freezes[-1] if self.freezes else None

    def complete(self, command: str) -> str:
        """A printed `ms-workbench ...` command made runnable as printed: the session, the root, the recipe."""
        if not command.startswith("ms-workbench "):
            return command
        words = shlex.split(command)
        if self.sid and len(words) > 2 and words[1] == "run" and "--session" not in words:
            words[3:3] = ["--session", self.sid]
            if words[2] in RECIPE_JOBS_NEEDING_CONFIG and self.run_config and "--config" not in words:
                words[5:5] = ["--config", self.run_config]
        elif self.sid and len(words) > 1 and words[1] in ("freeze", "accept", "export") and len(words) == 2:
            words.append(self.sid)
        if self.sessions and "--sessions" not in words:
            words += ["--sessions", self.sessions]
        return " ".join(shlex.quote(w) for w in words)


def about_session(session_dir: Path) -> About:
    """The About of a session folder: its freezes (candidate.jsonl), its candidate run's config.yaml, and
    --sessions for printed commands when its root is not the default one."""
    session_dir = Path(session_dir)
    root = session_dir.parent.resolve()
    sessions = None if root == sessions_root(None) else str(root)
    freezes = history(session_dir)
    run_config = None
    if freezes:
        found = (session_dir / freezes[-1].checkpoint).parent.parent / "config.yaml"
        run_config = str(found.resolve()) if found.is_file() else None
    return About(sid=session_dir.name, freezes=freezes, sessions=sessions, run_config=run_config)


def subject_of(rec: JobRecord, cid: str) -> Optional[str]:
    """The subject a check of a job carries (None: the check says nothing about what it looked at)."""
    ev = rec.checks.get(cid) or {}
    subject = ev.get("subject")
    return subject if isinstance(subject, str) and subject else None


def counts(rec: JobRecord, cid: str, cand: Optional[Candidate]) -> bool:
    """True when a check counts for the candidate: about its checkpoint or recipe, or not about a model at all."""
    return rec.kind not in MODEL_JOBS or is_about(subject_of(rec, cid), cand)


def about_other(model: SessionModel, cand: Optional[Candidate]) -> List[Dict[str, Any]]:
    """Every job whose model checks are about another model, with its subject: listed, never counted."""
    out = []
    for rec in model.of_kind(*MODEL_JOBS):
        other = [cid for cid in rec.checks if not counts(rec, cid, cand)]
        if other:
            subjects = sorted({subject_label(subject_of(rec, cid)) for cid in other})
            out.append({"job": rec.jid, "kind": rec.kind, "subject": ", ".join(subjects), "checks": other})
    return out
