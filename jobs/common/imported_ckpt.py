"""A checkpoint reused from an imported record is re-verified against that record before it is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobFailed
from workbench.record.importing import RecordRefused, reverify_imported_file
from workbench.session.imported import imported_session_of
from workbench.system.atomic import read_json, write_json


def reverify_checkpoint(ctx: Any, ckpt: Path, key: str) -> Optional[Dict[str, Any]]:
    """None for a local checkpoint; for one of an imported record, a check, or JobFailed when its hash changed."""
    try:
        found = reverify_imported_file(Path(ckpt))
    except RecordRefused as exc:
        ctx.check(
            "imported-checkpoint",
            "imported checkpoint re-verified",
            Evidence.FAIL,
            str(exc),
            evidence={"path": str(ckpt), "key": key},
        )
        raise JobFailed(
            "%s: %s" % (key, exc),
            hint="import the record again from its archive (`ms-workbench import`)",
            type_="CheckpointMismatch",
        )
    if found is not None:
        ctx.check(
            "imported-checkpoint",
            "imported checkpoint re-verified",
            Evidence.PASS,
            "%s of imported session %s: SHA-256 %s matches its manifest%s"
            % (
                found["file"],
                found["session"],
                found["sha256"],
                " and its artifact event" if found["artifact_event"] else "",
            ),
            evidence=dict(found, key=key),
        )
    return found


def counter_home(train_dir: Path, job_dir: Path, counter_name: str) -> Path:
    """Where the test-evaluation counter of a run is kept: beside the run, or for an imported (read-only)
    run in the testing session's `imported-evaluations/<sid>/<jid>/`, started from the count the record brought."""
    train_dir = Path(train_dir)
    if imported_session_of(train_dir) is None:
        return train_dir
    home = Path(job_dir).parent.parent / "imported-evaluations" / train_dir.parent.parent.name / train_dir.name
    home.mkdir(parents=True, exist_ok=True)
    brought = train_dir / counter_name
    if not (home / counter_name).exists() and brought.is_file():
        write_json(home / counter_name, read_json(brought))  # the evaluations made where it was trained count
    return home
