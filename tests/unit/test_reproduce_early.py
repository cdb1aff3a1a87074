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


EMAIL_PARSED = (  # the listing as it was: importlib.metadata's own parse of each whole metadata file
    "import importlib.metadata as m\n"
    "seen = {}\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name']\n"
    "    if name: seen.setdefault(name.lower(), '%s==%s' % (name, d.version))\n"
    "print('\\n'.join(seen[k] for k in sorted(seen)))\n"
)


def test_the_package_list_read_from_header_lines_is_the_parsed_one(tmp_path):
    """LIST_PACKAGES reads Name and Version from the header lines only: the same list as parsing each file whole,
    for this interpreter's distributions and odd ones beside them (a description quoting other headers, CRLF lines,
    an egg-info's PKG-INFO, a name differing only in case from another's)."""
    import subprocess

    site = tmp_path / "site"
    odd = {
        "quoted-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: quoted\nVersion: 1.0\n\nName: other\nVersion: 9\n",
        "crlf-2.0.dist-info/METADATA": "Metadata-Version: 2.1\r\nName: CrLf\r\nVersion: 2.0\r\n\r\nbody\r\n",
        "old-3.0-py3.9.egg-info/PKG-INFO": "Metadata-Version: 1.0\nName: old\nVersion: 3.0\nSummary: s\n",
        "Quoted-5.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: Quoted\nVersion: 5.0\n",
    }
    for rel, text in odd.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    lists = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
        for code in (reproduce.LIST_PACKAGES, EMAIL_PARSED)
    ]
    assert lists[0] == lists[1]
    assert "CrLf==2.0" in lists[0] and "old==3.0" in lists[0] and "quoted==1.0" in lists[0].lower()
