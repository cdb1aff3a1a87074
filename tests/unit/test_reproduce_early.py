"""The revision and package lists asked while the export reads the session are those it would ask for afterwards."""

from __future__ import annotations

import sys

from workbench.record import reproduce

REPORT = {
    "session": {"id": "sid"},
    "jobs": [{"jid": "train-001", "kind": "train", "python": sys.executable, "started": {}, "command": []}],
}


def _same(a, b):
    for key in ("revision", "interpreter", "_lock", "commands", "environment"):
        assert a[key] == b[key], key


def test_asked_early_or_late_the_reproduce_section_is_the_same():
    early = reproduce.Early([sys.executable])
    got = reproduce.reproduce_record(REPORT, early)
    assert early.packages[sys.executable]["lock"]  # the list was asked early, and used
    _same(got, reproduce.reproduce_record(REPORT))


def test_an_interpreter_not_asked_early_is_asked_then(tmp_path, monkeypatch):
    """The early guess (job.json's interpreter) is not the one the jobs started with: that one is asked."""
    early = reproduce.Early([str(tmp_path / "no-python")])
    early.join()
    assert early.packages[str(tmp_path / "no-python")]["lock"] is None
    asked = []
    real = reproduce.interpreter_packages
    monkeypatch.setattr(reproduce, "interpreter_packages", lambda p: asked.append(p) or real(p))
    got = reproduce.reproduce_record(REPORT, early)
    assert asked == [sys.executable]
    assert got["interpreter"]["python"] == sys.executable and got["interpreter"]["error"] is None


def test_a_revision_not_got_early_is_asked_then(monkeypatch):
    def fails():
        raise OSError("unreadable source")

    monkeypatch.setattr(reproduce, "code_revision", fails)
    early = reproduce.Early([sys.executable])
    early.join()
    assert early.revision is None  # the thread's failure is not the record's: asked again, in the export
    monkeypatch.undo()
    _same(reproduce.reproduce_record(REPORT, early), reproduce.reproduce_record(REPORT))
