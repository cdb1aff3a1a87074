"""Finished sessions of a given age, for the prune tests."""

from __future__ import annotations

import time

from workbench.session.store import SessionStore
from workbench.system.atomic import read_json, write_json

DAY_S = 86400.0


def aged_session(store: SessionStore, age_days: float, with_job: bool = True) -> str:
    """A finished session whose last activity was `age_days` ago."""
    sid = store.create()
    then = time.time() - age_days * DAY_S
    info = read_json(store.root / sid / "session.json")
    write_json(store.root / sid / "session.json", dict(info, created=then))
    if with_job:
        job = store.new_job_dir(sid, "drill")
        write_json(job / "job.json", {"jid": job.name, "kind": "drill", "created": then})
        write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0, "ended_at": then + 1})
        (job / "events.jsonl").write_text("")
    return sid
