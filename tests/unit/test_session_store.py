"""SessionStore's clock: ids carry the clock's second, and sessions of one second still get distinct ids."""

from __future__ import annotations

import datetime

from workbench.atomic import read_json
from workbench.session import SessionStore

NOON = datetime.datetime(2025, 3, 14, 12, 0, 0).timestamp()


def test_ids_and_created_come_from_the_clock(tmp_path):
    ticks = iter([NOON, NOON + 61])
    store = SessionStore(tmp_path, clock=lambda: next(ticks))
    first, second = store.create(["a"]), store.create(["b"])
    assert first.startswith("20250314-120000-") and second.startswith("20250314-120101-")
    assert read_json(tmp_path / first / "session.json")["created"] == NOON
    assert store.sessions() == [first, second]


def test_sessions_made_in_the_same_second_get_distinct_ids(tmp_path):
    store = SessionStore(tmp_path, clock=lambda: NOON)
    ids = [store.create() for _ in range(200)]
    assert len(set(ids)) == 200 and all(sid.startswith("20250314-120000-") for sid in ids)
    assert sorted(ids) == store.sessions()
