"""`ms-workbench reproduce RECORD|SID [--sessions ROOT]`: re-run the record's candidate lineage and diff it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from workbench.config.layers import ConfigError
from workbench.run.runner import RunnerError
from workbench.session.candidate import FreezeError
from workbench.session.refs import BadReference
from workbench.session.store import SessionStore, sessions_root

USAGE_ERROR = 2


def _load_npy(path: Path) -> Any:
    import numpy as np

    return np.load(str(path), allow_pickle=False)


def cmd_reproduce(args) -> int:
    """Re-run data, train, test and export from the record's effective configs; 0 only when reproduced."""
    from workbench.record import rerun  # here: the TUI's start builds this parser too

    store = SessionStore(sessions_root(args.sessions))
    try:
        record = rerun.find_record(args.record, store)
    except (rerun.RecordError, BadReference, FileNotFoundError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        ok, comparisons, sid = rerun.reproduce(record, store, list(sys.argv), say, _load_npy)
    except rerun.RecordError as exc:
        print("blocked: %s" % exc)
        return 1
    except (ConfigError, RunnerError, FreezeError) as exc:
        print("blocked: the re-run could not go on: %s" % exc)
        return 1
    print(rerun.verdict_line(ok, comparisons, sid))
    return 0 if ok else 1


def add_parser(sub: Any, parents: list) -> None:
    """Register `reproduce`."""
    p = sub.add_parser(
        "reproduce",
        parents=parents,
        help="re-run a record's candidate lineage in a new session and compare",
        description="Re-run the candidate's lineage (data, train, test, export) from a session record's effective "
        "configs in a new session under --sessions, then compare split hash, per-epoch losses, checkpoint hash, "
        "test metrics and exported outputs. Exit 0 only when reproduced.",
    )
    p.add_argument("record", help="a record folder (holding report.json), an unpacked <sid>/ folder, or a session id")
    p.set_defaults(func=cmd_reproduce)
