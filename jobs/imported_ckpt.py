"""A checkpoint reused from an imported record is re-verified against that record before it is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from workbench.jobkit import JobFailed
from workbench.protocol import Evidence
from workbench.recordimport import RecordRefused, reverify_imported_file


def reverify_checkpoint(ctx: Any, ckpt: Path, key: str) -> Optional[Dict[str, Any]]:
    """None for a local checkpoint; for one of an imported record, a check, or JobFailed when its hash changed."""
    try:
        found = reverify_imported_file(Path(ckpt))
    except RecordRefused as exc:
        ctx.check("imported-checkpoint", "imported checkpoint re-verified", Evidence.FAIL, str(exc),
                  evidence={"path": str(ckpt), "key": key})
        raise JobFailed("%s: %s" % (key, exc), hint="import the record again from its archive (`ms-workbench import`)",
                        type_="CheckpointMismatch")
    if found is not None:
        ctx.check("imported-checkpoint", "imported checkpoint re-verified", Evidence.PASS,
                  "%s of imported session %s: SHA-256 %s matches its manifest%s" % (
                      found["file"], found["session"], found["sha256"],
                      " and its artifact event" if found["artifact_event"] else ""),
                  evidence=dict(found, key=key))
    return found
