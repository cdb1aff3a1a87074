"""`ms-workbench freeze [SID] [RUN] [--reason TEXT]`: name the session's candidate, the model every check is about."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional, Tuple

from workbench.session import candidate
from workbench.session.imported import imported_mark
from workbench.session.refs import JID_PATTERN, SID_PATTERN, BadReference
from workbench.session.store import SessionStore, sessions_root

USAGE_ERROR = 2


def _split_args(args) -> Tuple[Optional[str], Optional[str]]:
    """(session id, run reference) from `freeze [SID] [RUN]` and --session: a lone word that is a job is the run."""
    words = [w for w in (args.first, args.second) if w]
    sid = args.session
    if words and sid is None and SID_PATTERN.fullmatch(words[0]):
        sid = words.pop(0)
    if len(words) > 1:
        raise BadReference("freeze takes at most one run (got %s)" % ", ".join(words))
    return sid, (words[0] if words else None)


def run_dir_of(store: SessionStore, session_dir: Path, ref: str) -> Path:
    """A run reference -> its folder: a job id of this session, <session>/<job id> (an imported record's run),
    or a job folder's absolute path."""
    if JID_PATTERN.fullmatch(ref):
        found = session_dir / "jobs" / ref
        if not found.is_dir():
            raise FileNotFoundError("no job %s in session %s (%s)" % (ref, session_dir.name, session_dir / "jobs"))
        return found
    if "/" in ref and not ref.startswith(("/", "~", ".")):
        return store.find_job(ref)
    path = Path(ref).expanduser()
    if not path.is_absolute() or not (path / "job.json").is_file():
        raise BadReference(
            "%r is not a training run (expected a job id like train-001, <session>/<job id>, or a job folder)" % ref
        )
    return path


def describe(entry: candidate.Candidate) -> str:
    """What was frozen, for people."""
    return (
        "frozen candidate #%d: %s\n"
        "  checkpoint %s\n  sha256     %s\n  split      %s\n  recipe     %s\n  reason     %s\n"
        % (
            entry.n,
            entry.label(),
            entry.checkpoint,
            entry.sha256,
            entry.split_sha256 or "not recorded by the run",
            entry.recipe_sha256,
            entry.reason,
        )
    )


def cmd_freeze(args) -> int:
    """Freeze a training run's best checkpoint as the candidate; 0 done, 1 refused, 2 usage errors."""
    store = SessionStore(sessions_root(args.sessions))
    try:
        sid, ref = _split_args(args)
        session_dir = store.session_dir(store.named_or_newest(sid))
        if imported_mark(session_dir) is not None:
            raise BadReference(
                "session %s is an imported record (read-only): freeze its run from a session of your own, "
                "e.g. %s"
                % (session_dir.name, store.command("freeze", "<your session>", "%s/<train job>" % session_dir.name))
            )
        run_dir = run_dir_of(store, session_dir, ref) if ref else None
    except (BadReference, FileNotFoundError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    try:
        if run_dir is None:
            run_dir = candidate.newest_trained(session_dir)
        before = candidate.current(session_dir)
        entry = candidate.freeze(session_dir, candidate.from_run(session_dir, run_dir), args.reason or "")
    except candidate.FreezeError as exc:
        print("freeze refused: %s" % exc, file=sys.stderr)
        return 1
    out = "session %s\n%s" % (session_dir.name, describe(entry))
    if before is not None:
        out += "  replaces   #%d (%s); the earlier freezes stay in %s\n" % (
            before.n,
            before.label(),
            session_dir / candidate.CANDIDATE_FILE,
        )
    sys.stdout.write(out)
    return 0


def add_parser(sub: Any, parents: list) -> None:
    """Register `freeze` on the CLI's subparsers."""
    p = sub.add_parser(
        "freeze",
        parents=parents,
        help="name the candidate: a training run's best checkpoint, which test, align, export and accept are about",
    )
    p.add_argument("first", nargs="?", metavar="SID", help="session id (default: the newest)")
    p.add_argument(
        "second",
        nargs="?",
        metavar="RUN",
        help="training run: train-001, <session>/<job id> of an imported record, or a job folder "
        "(default: the newest training run that ended ok)",
    )
    p.add_argument("--session", help="session id (the same as SID)")
    p.add_argument("--reason", help="why this checkpoint (required for a re-freeze)")
    p.set_defaults(func=cmd_freeze)
