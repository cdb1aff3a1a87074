"""Secrets planted in env vars and config values never reach the export; exporting never writes the session."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import pytest

from workbench.session.store import SessionStore

# Env vars the env job records (allow-listed) or only inherits, holding URL credentials and query tokens.
PLANTED_ENV = {
    "MS_DOWNLOAD_MIRROR": "https://mirroruser:mirror-pass-7f3e@mirror.example.com/ms?token=tok-9a8b7c6d&x=1",
    "ASCEND_PROXY": "http://proxyuser:proxy-pw-5d4c@proxy.example.com:3128",
    "MS_API_TOKEN": "plain-token-1234",
    "HTTPS_PROXY": "http://proxyuser:https-pw-0e0e@proxy.example.com:3128",
}
# A config value (a free-form string key) carrying the same kinds of secrets.
CONFIG_URL = "https://cfguser:cfg-pass-31a2@store.example.com/x?access_key=AKIA-cfg-77&signature=sig-cfg-88"
SECRETS = [
    "mirror-pass-7f3e",
    "tok-9a8b7c6d",
    "proxy-pw-5d4c",
    "plain-token-1234",
    "https-pw-0e0e",
    "cfg-pass-31a2",
    "AKIA-cfg-77",
    "sig-cfg-88",
]
TRAIN = [
    "--set",
    "data.source=synthetic",
    "--set",
    "data.synthetic_train=400",
    "--set",
    "data.synthetic_test=100",
    "--set",
    "train.epochs=1",
    "--set",
    "train.val_limit=100",
    "--set",
    "train.warmup_steps=1",
    "--set",
    "train.max_steps=3",
    "--set",
    "train.parallel.master_addr=%s" % CONFIG_URL,
]


def hashes(root: Path, skip_prefix: str = "\0") -> dict:
    """SHA-256 of every file under root (relative path -> digest), leaving out one sub-folder."""
    out = {}
    for dirpath, _, files in os.walk(str(root)):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if not rel.startswith(skip_prefix):
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def leaks(folder: Path) -> list:
    """(file, secret) for every planted secret found in a file of the folder or in its decompressed archive."""
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".tar.gz") else path.read_bytes()
        found += [(str(path.relative_to(folder)), s) for s in SECRETS if s.encode() in data]
    return found


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A session with an env job and a train job run under the planted env vars and config value."""
    from tests.support.cli import run_cli

    root = tmp_path_factory.mktemp("secrets") / "sessions"
    env = dict(PLANTED_ENV, MS_WORKBENCH_SESSIONS=str(root))
    proc = run_cli("run", "env", "--sessions", root, "--set", "env.probes=false", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sid,) = SessionStore(root).sessions()
    proc = run_cli("run", "train", "--sessions", root, "--session", sid, *TRAIN, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, sid


def test_the_env_job_writes_its_events_masked(planted):
    root, sid = planted
    events = (root / sid / "jobs" / "env-001" / "events.jsonl").read_text(encoding="utf-8")
    assert not [s for s in SECRETS if s in events]
    assert "https://***@mirror.example.com/ms?token=***&x=1" in events  # the host and harmless parts stay
    assert "http://***@proxy.example.com:3128" in events


def test_export_leaves_the_session_byte_identical_and_leaks_nothing(planted, tmp_path):
    from tests.support.cli import run_cli

    root, sid = planted
    session = root / sid
    assert [s for s in SECRETS if any(s.encode() in p.read_bytes() for p in session.rglob("*") if p.is_file())]
    before = hashes(session)

    # Elsewhere: not one file of the session folder changes, and none appears.
    handover = tmp_path / "handover"
    proc = run_cli("export", sid, "--sessions", root, "--out", handover, "--no-screenshots", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert hashes(session) == before
    assert leaks(handover) == []

    # Into the session's own export/ folder (screens rendered too): only export/ is new.
    proc = run_cli("export", sid, "--sessions", root, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert hashes(session, skip_prefix="export/") == before
    assert leaks(session / "export") == []

    # report.md and its appendices: the masked values are shown, with their hosts
    report = "\n".join(p.read_text(encoding="utf-8") for p in sorted((session / "export").rglob("*.md")))
    for shown in (
        "https://***@mirror.example.com/ms?token=***",
        "http://***@proxy.example.com:3128",
        "https://***@store.example.com/x?access_key=***&signature=***",
    ):
        assert shown in report, shown
