"""Finished sessions of a given age, for the prune tests."""

from __future__ import annotations

import time

from workbench.session.store import SessionStore
from workbench.system import monotonic
from workbench.system.atomic import read_json, write_json

DAY_S = 86400.0


def aged_session(store: SessionStore, age_days: float, with_job: bool = True) -> str:
    """A finished session whose last activity was `age_days` ago, as if made then with the clock right.

    Its dates, its monotonic stamps and its number in the root's creation order all agree.
    """
    sid = store.create()
    then = time.time() - age_days * DAY_S
    stamp = monotonic.stamp()
    stamp["t"] -= age_days * DAY_S
    info = read_json(store.root / sid / "session.json")
    write_json(store.root / sid / "session.json", dict(info, created=then, created_monotonic=stamp))
    if with_job:
        job = store.new_job_dir(sid, "drill")
        write_json(job / "job.json", {"jid": job.name, "kind": "drill", "created": then, "created_monotonic": stamp})
        ended = dict(stamp, t=stamp["t"] + 1)
        write_json(
            job / "exit.json",
            {
                "returncode": 0,
                "signal": None,
                "duration_s": 1.0,
                "ended_at": then + 1,
                "monotonic": {"started": stamp, "ended": ended},
            },
        )
        (job / "events.jsonl").write_text("")
    native = [s for s in store.sessions() if store.made_here(s)]  # numbered again by date: made in that order
    for n, other in enumerate(sorted(native, key=lambda s: read_json(store.root / s / "session.json")["created"])):
        path = store.root / other / "session.json"
        write_json(path, dict(read_json(path), seq=n + 1))
    return sid
