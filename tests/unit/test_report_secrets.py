"""Secrets stay out of the record: allow-list, masking by name, and by value wherever it reappears."""

import json

from workbench.masking.envvars import record_env as mask_env
from workbench.masking.scrub import MASK, Scrubber, file_kind, looks_like_env, scrub_pairs, secret_name


def test_secret_names_are_recognised_by_their_words():
    for name in (
        "MS_SECRET_TOKEN",
        "ASCEND_API_KEY",
        "apiKey",
        "password",
        "DB_PASSWD",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "github_credentials",
        "Authorization",
    ):
        assert secret_name(name), name
    for name in (
        "PATH",
        "KeyError",
        "key",
        "num_tokens",
        "TOKEN_COUNT",
        "ASCEND_HOME_PATH",
        "GLOG_v",
        "sha256",
        "KEY_PATH",
    ):
        assert not secret_name(name), name


def test_environment_for_the_report_keeps_the_allow_list_and_masks_secret_names():
    env = {
        "PATH": "/usr/bin",
        "LD_LIBRARY_PATH": "/opt/lib",
        "PYTHONPATH": "/src",
        "GLOG_v": "3",
        "ASCEND_HOME_PATH": "/usr/local/Ascend",
        "MS_SECRET_TOKEN": "hunter2",
        "ASCEND_API_KEY": "k-123456",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "abcd1234",
        "PYTHONUNBUFFERED": "1",
    }
    shown = mask_env(env)
    assert shown == {
        "ASCEND_API_KEY": MASK,
        "ASCEND_HOME_PATH": "/usr/local/Ascend",
        "GLOG_v": "3",
        "LD_LIBRARY_PATH": "/opt/lib",
        "MS_SECRET_TOKEN": MASK,
        "PATH": "/usr/bin",
        "PYTHONPATH": "/src",
    }


def test_env_mappings_are_told_apart_from_version_summaries():
    assert looks_like_env("environment", {"PATH": "/bin", "HOME": "/root"})
    assert not looks_like_env("environment", {"python": "3.9", "mindspore": "2.4.10"})
    assert looks_like_env(None, {"PATH": "/bin", "MS_ROLE": "MS_WORKER"})
    assert not looks_like_env("env", {"PATH": {"nested": 1}})


def test_jsonl_masking_keeps_clean_lines_byte_identical():
    clean_line = b'{"v":1,"seq":0,"t":1.5,"type":"log","level":"info","message":"ok"}'
    dirty = {
        "v": 1,
        "seq": 1,
        "t": 2.0,
        "type": "result",
        "summary": {"environment": {"PATH": "/bin", "MS_SECRET_TOKEN": "hunter2"}},
    }
    data = clean_line + b"\n" + json.dumps(dirty).encode() + b"\n"
    scrubber = scrub_pairs([("events.jsonl", data)], environ={})
    out = scrubber.file("events.jsonl", data)
    lines = out.split(b"\n")
    assert lines[0] == clean_line
    second = json.loads(lines[1])
    assert second["summary"]["environment"] == {"PATH": "/bin", "MS_SECRET_TOKEN": MASK}
    assert second["seq"] == 1 and out.endswith(b"\n")
    assert b"hunter2" not in out


def test_a_value_learned_in_one_file_is_masked_in_every_other_text_file():
    events = b'{"type":"check","evidence":{"env":{"ASCEND_API_KEY":"k-9f8e7d6c"}}}\n'
    log = b"connecting with k-9f8e7d6c\nTraceback: KeyError: 'train'\n"
    scrubber = scrub_pairs([("events.jsonl", events), ("stderr.log", log)], environ={})
    out = scrubber.file("stderr.log", log).decode()
    assert "k-9f8e7d6c" not in out
    assert "connecting with %s" % MASK in out
    assert "KeyError: 'train'" in out  # an exception name is not a secret name


def test_assignments_in_free_text_are_masked_by_name():
    scrubber = Scrubber()
    text = "export MS_SECRET_TOKEN=hunter2 GLOG_v=3 password: 'pa ss' url=http://x"
    out = scrubber.text(text)
    assert out == "export MS_SECRET_TOKEN=%s GLOG_v=3 password: '%s' url=http://x" % (MASK, MASK)


def test_values_of_secret_variables_in_the_exporting_environment_are_hunted():
    scrubber = scrub_pairs([], environ={"MY_TOKEN": "tok-abcdef", "PATH": "/bin", "SHORT_TOKEN": "ab"})
    assert scrubber.text("the token tok-abcdef leaked") == "the token %s leaked" % MASK
    assert scrubber.text("ab stays") == "ab stays"  # too short to hunt by value


def test_binary_files_are_never_rewritten():
    blob = b"\x00\x01hunter2\xff" * 10
    scrubber = Scrubber(["hunter2"])
    assert file_kind("best.ckpt", blob) == "binary"
    assert scrubber.file("best.ckpt", blob) == blob


def test_json_file_is_rewritten_only_when_it_held_a_secret():
    clean = b'{\n  "env": {\n    "PATH": "/bin"\n  }\n}\n'
    scrubber = Scrubber()
    assert scrubber.file("job.json", clean) == clean
    dirty = json.dumps({"env": {"PATH": "/bin", "MS_SECRET_TOKEN": "hunter2"}}).encode()
    assert json.loads(scrubber.file("job.json", dirty))["env"]["MS_SECRET_TOKEN"] == MASK


def test_values_a_job_already_masked_are_left_as_they_are():
    line = b'{"type":"result","summary":{"environment":{"MS_SECRET_TOKEN":"<masked>","PATH":"/bin"}}}'
    scrubber = scrub_pairs([("events.jsonl", line + b"\n")], environ={})
    assert scrubber.file("events.jsonl", line + b"\n") == line + b"\n"
    assert scrubber.values == set()
