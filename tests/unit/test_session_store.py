"""SessionStore's clock: ids carry the clock's second, and sessions of one second still get distinct ids."""

from __future__ import annotations

import datetime

from workbench.session.store import SessionStore
from workbench.system.atomic import read_json

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
    assert store.sessions() == ids  # listed in the order they were made, not by their random suffix


def test_sessions_of_one_second_list_in_creation_order(tmp_path):
    """Ids of one second sort at random by name; the listing follows session.json's created time."""
    ticks = iter([1700000000.1, 1700000000.2, 1700000000.3, 1700000000.4, 1700000000.5, 1700000000.6])
    store = SessionStore(tmp_path, clock=lambda: next(ticks))
    made = [store.create() for _ in range(6)]
    assert store.sessions() == made
