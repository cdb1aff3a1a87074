"""Job folders written by hand: job.json, events lines, exit.json."""

from __future__ import annotations

import time

from workbench.events.protocol import encode
from workbench.system.atomic import write_json


def write_job(store, sid, jid, lines, exit_rec=None, created=None):
    """A job folder written by hand: job.json, events.jsonl lines, optional exit.json."""
    job = store.root / sid / "jobs" / jid
    (job / "artifacts").mkdir(parents=True)
    write_json(
        job / "job.json",
        {
            "jid": jid,
            "kind": jid.rsplit("-", 1)[0],
            "created": created or time.time(),
            "command": ["ms-workbench", "run", jid.rsplit("-", 1)[0]],
            "device": {"resolved": "CPU", "id": 0},
            "env": {},
        },
    )
    (job / "events.jsonl").write_bytes(b"".join(l if isinstance(l, bytes) else encode(l).encode() for l in lines))
    if exit_rec is not None:
        write_json(job / "exit.json", exit_rec)
    return job


def event(seq, type_, **fields):
    """One v1 event line (a dict) numbered `seq`, at t = 1000 + seq."""
    return dict({"v": 1, "seq": seq, "t": 1000.0 + seq, "type": type_}, **fields)
