"""Session ids, job ids and job references: only their patterns, resolving inside the sessions root."""

from __future__ import annotations

import json

import pytest

from workbench.config.keys import get
from workbench.config.layers import ConfigError, load
from workbench.session.refs import BadReference, check_jid, check_sid
from workbench.session.store import SessionStore

SID = "20250314-101500-a1b2"


@pytest.fixture
def no_user_file(tmp_path):
    """A user-file path that does not exist, so the real ~/.config never leaks into a test."""
    return tmp_path / "absent" / "config.yaml"


@pytest.fixture
def store(tmp_path):
    """A sessions root with one real session, and a look-alike session folder outside it."""
    store = SessionStore(tmp_path / "sessions")
    sid = store.create(["test"])
    job = store.new_job_dir(sid, "drill")
    (job / "job.json").write_text(json.dumps({"created": 1.0}))
    evil = tmp_path / "evil"
    (evil / "jobs" / "drill-001").mkdir(parents=True)
    (evil / "session.json").write_text("{}")
    (evil / "jobs" / "drill-001" / "job.json").write_text("{}")
    return store


@pytest.mark.parametrize("sid", ["20250314-101500-a1b2", "20250101-000000-data"])
def test_session_ids_of_the_store_form_are_accepted(sid):
    assert check_sid(sid) == sid


@pytest.mark.parametrize(
    "sid",
    [
        "../evil",
        "/abs/path",
        "..",
        ".",
        "",
        "20250314-101500-a1b2/..",
        "20250314-101500-a1b2/../x",
        "x/20250314-101500-a1b2",
        "20250314-101500-A1B2",
    ],
)
def test_other_session_ids_are_refused(sid):
    with pytest.raises(BadReference, match="is not a session id"):
        check_sid(sid)


@pytest.mark.parametrize("jid", ["../drill-001", "drill-001/..", "drill", "/drill-001", "drill-1", ""])
def test_malformed_job_ids_are_refused(jid):
    with pytest.raises(BadReference, match="is not a job id"):
        check_jid(jid)


def test_the_store_refuses_a_session_outside_its_root(store, tmp_path):
    for ref in ("../evil", str(tmp_path / "evil")):
        with pytest.raises(BadReference):
            store.session_dir(ref)
        with pytest.raises(BadReference):
            store.new_job_dir(ref, "drill")
    assert sorted(p.name for p in (tmp_path / "evil" / "jobs").iterdir()) == ["drill-001"]  # nothing written there


def test_find_job_takes_ids_only(store, tmp_path):
    sid = store.sessions()[0]
    assert store.find_job("%s/drill-001" % sid) == store.root / sid / "jobs" / "drill-001"
    assert store.find_job("drill-001") == store.root / sid / "jobs" / "drill-001"
    for ref in (
        "%s/../../evil/jobs/drill-001" % sid,
        "../evil/jobs/drill-001",
        str(tmp_path / "evil/jobs/drill-001"),
        "%s/jobs/../../../evil/jobs/drill-001" % sid,
    ):
        with pytest.raises(BadReference):
            store.find_job(ref)


def test_sessions_lists_only_folders_named_like_sessions(store):
    (store.root / "not-a-session").mkdir()
    (store.root / "not-a-session" / "session.json").write_text("{}")
    assert store.sessions() == [p.name for p in store.root.iterdir() if p.name != "not-a-session"]


KEYS = ("data.from", "train.resume_from", "test.from", "align.weights_from", "export.from")


@pytest.mark.parametrize("key", KEYS)
def test_job_reference_keys_take_ids(key, no_user_file):
    assert get(load(sets=["%s=train-001" % key], user_file=no_user_file), key) == "train-001"
    assert get(load(sets=["%s=%s/train-001" % (key, SID)], user_file=no_user_file), key) == "%s/train-001" % SID


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    "value", ["../evil", "./train-001", "train-001/../../x", "x/y/z", "%s/../x" % SID, "../%s/train-001" % SID, "evil"]
)
def test_job_reference_keys_refuse_relative_paths(key, value, no_user_file):
    with pytest.raises(ConfigError) as info:
        load(sets=["%s=%s" % (key, value)], user_file=no_user_file)
    assert repr(key) in str(info.value) and repr(value) in str(info.value)
    assert "job id like train-001" in str(info.value)


@pytest.mark.parametrize("key", KEYS)
def test_an_absolute_job_reference_must_be_a_job_folder(key, tmp_path, no_user_file):
    job = tmp_path / "s" / "jobs" / "train-001"
    job.mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a folder but not a job folder"):
        load(sets=["%s=%s" % (key, job)], user_file=no_user_file)
    with pytest.raises(ConfigError, match="does not exist"):
        load(sets=["%s=%s" % (key, tmp_path / "nowhere")], user_file=no_user_file)
    (job / "job.json").write_text("{}")
    assert get(load(sets=["%s=%s" % (key, job)], user_file=no_user_file), key) == str(job)


def test_a_checkpoint_file_only_where_documented(tmp_path, no_user_file):
    ckpt = tmp_path / "best.ckpt"
    ckpt.write_bytes(b"x")
    for key in ("export.from", "align.weights_from"):
        assert get(load(sets=["%s=%s" % (key, ckpt)], user_file=no_user_file), key) == str(ckpt)
    for key in ("data.from", "train.resume_from", "test.from"):
        with pytest.raises(ConfigError, match="is not a job folder"):
            load(sets=["%s=%s" % (key, ckpt)], user_file=no_user_file)


def test_data_from_takes_a_split_folder(tmp_path, no_user_file):
    (tmp_path / "split.json").write_text("{}")
    assert get(load(sets=["data.from=%s" % tmp_path], user_file=no_user_file), "data.from") == str(tmp_path)


@pytest.mark.parametrize("tail", ["\n", "\r", " ", "\n\n", "/", "\x00"])
def test_an_id_is_matched_whole_a_trailing_newline_is_no_id(tmp_path, tail):
    with pytest.raises(BadReference):
        check_sid(SID + tail)
    with pytest.raises(BadReference):
        check_jid("train-001" + tail)
    store = SessionStore(tmp_path)
    sid = store.create()
    twin = tmp_path / (sid + "\n")
    twin.mkdir()
    (twin / "jobs").mkdir()
    (twin / "session.json").write_text(json.dumps({"id": sid + "\n", "created": 1.0}))
    assert store.sessions() == [sid]
