"""The env job's probe verdict: a set-device error that names libraries decides whether set_env.sh is blamed."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from jobs.env.probes import SET_ENV_MISSING, DeviceProbes
from tests.support.ascend_fakes import fixture_text, make_fake_ascend_tree

E2_LINE = "Load dynamic library: libmindspore_ascend.so.2 failed. libge_runner.so: cannot open shared object file"
MISSING = ["CANN toolkit not found (3 places looked at)", "%s (LD_LIBRARY_PATH: ...)" % SET_ENV_MISSING]


def probes(root: Path) -> DeviceProbes:
    """A DeviceProbes reading libraries under `root` (the rest of the job is not needed for this verdict)."""
    found = DeviceProbes.__new__(DeviceProbes)
    found.env = SimpleNamespace(root=str(root))
    return found


def test_reachable_named_library_is_no_reason_to_blame_set_env(tmp_path, monkeypatch):
    assert E2_LINE in fixture_text("errors_verbatim_collection.md")
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    Path(env["ASCEND_HOME_PATH"], "lib64", "libge_runner.so").write_bytes(b"")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    missing, detail = probes(tmp_path).libraries_named(E2_LINE, list(MISSING))
    assert missing == MISSING[:1]  # the toolkit finding stays; "set_env.sh not sourced" goes
    assert "libge_runner.so is reachable in %s/lib64: not a missing search path" % env["ASCEND_HOME_PATH"] in detail


def test_unreachable_named_library_keeps_the_set_env_finding_and_names_where_it_is(tmp_path, monkeypatch):
    env = make_fake_ascend_tree(tmp_path, "8.0.0")
    home = env["ASCEND_HOME_PATH"]
    Path(home, "lib64", "libge_runner.so").write_bytes(b"")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(
        "LD_LIBRARY_PATH", os.pathsep.join(p for p in env["LD_LIBRARY_PATH"].split(os.pathsep) if p != home + "/lib64")
    )
    missing, detail = probes(tmp_path).libraries_named(E2_LINE, list(MISSING))
    assert missing == MISSING
    assert "libge_runner.so is in %s/lib64, which no LD_LIBRARY_PATH entry names" % home in detail


def test_an_error_naming_no_library_changes_nothing(tmp_path):
    missing, detail = probes(tmp_path).libraries_named("Unsupported device target Ascend", list(MISSING))
    assert missing == MISSING and detail == ""
