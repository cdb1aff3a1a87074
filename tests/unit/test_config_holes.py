"""Config input a clumsy user or an attacker gives: each is refused with a message naming what and where."""

from __future__ import annotations

import time

import pytest

from workbench.config.keys import get
from workbench.config.layers import ConfigError, load
from workbench.config.safe_yaml import MAX_CONFIG_BYTES

# Nine levels of nine aliases: 9**9 (about 387 million) strings once anything walks the value.
ALIAS_BOMB = (
    "\n".join(
        ["drill:", '  crash_signal: &a0 "lol"']
        + ["  x%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 10)]
    )
    + "\n"
)


@pytest.fixture
def no_user_file(tmp_path):
    """A user-file path that does not exist, so the real ~/.config never leaks into a test."""
    return tmp_path / "absent" / "config.yaml"


def test_a_config_file_that_is_not_utf8_is_a_config_error_naming_the_file(tmp_path, no_user_file):
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("drill:\n  crash_signal: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load(str(latin1), user_file=no_user_file)
    message = str(info.value)
    assert str(latin1) in message and "not UTF-8" in message and "0xe9" in message, message


def test_a_user_file_that_is_not_utf8_is_a_config_error_too(tmp_path):
    user = tmp_path / "user.yaml"
    user.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(ConfigError, match="user.yaml: not UTF-8"):
        load(user_file=user)


@pytest.mark.parametrize(
    "item, key, shown",
    [
        ("train.lr=.nan", "train.lr", "nan"),
        ("train.lr=1e400", "train.lr", "inf"),
        ("limits.stall_s=.inf", "limits.stall_s", "inf"),
        ("limits.job_timeout_s=-.inf", "limits.job_timeout_s", "-inf"),
        ("drill.rate=.NaN", "drill.rate", "nan"),
        ("ui.refresh_hz=1e999", "ui.refresh_hz", "inf"),
    ],
)
def test_every_float_must_be_finite(item, key, shown, no_user_file):
    with pytest.raises(ConfigError) as info:
        load(sets=[item], user_file=no_user_file)
    message = str(info.value)
    assert message.startswith("--set %s:" % item) and repr(key) in message, message
    assert "value %s;" % shown in message and "not a finite number" in message, message


def test_an_infinite_float_in_a_file_names_the_file_and_key(tmp_path, no_user_file):
    path = tmp_path / "inf.yaml"
    path.write_text("limits:\n  stall_s: 1e400\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(str(path), user_file=no_user_file)
    assert str(path) in str(info.value) and "'limits.stall_s'" in str(info.value)
    assert "not a finite number" in str(info.value)


def test_anchors_and_aliases_are_refused(tmp_path, no_user_file):
    path = tmp_path / "alias.yaml"
    path.write_text("drill: &d {steps: 3}\nlimits: {grace_s: 1}\nx: *d\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(str(path), user_file=no_user_file)
    assert str(path) in str(info.value) and "anchor &d" in str(info.value)
    with pytest.raises(ConfigError, match="alias \\*x"):
        load(sets=["drill.crash_signal=*x"], user_file=no_user_file)


def test_an_alias_bomb_is_refused_at_once(tmp_path, no_user_file):
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="anchors and aliases are not allowed"):
        load(str(path), user_file=no_user_file)
    # Timed on purpose: the refusal happens before anything expands (the old reader grew past 3 GB).
    assert time.perf_counter() - t0 < 1.0


def test_a_config_file_is_bounded_in_size(tmp_path, no_user_file):
    path = tmp_path / "huge.yaml"
    path.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="huge.yaml: more than %d bytes" % MAX_CONFIG_BYTES):
        load(str(path), user_file=no_user_file)


def test_deep_nesting_is_a_config_error_not_a_crash(tmp_path, no_user_file):
    path = tmp_path / "deep.yaml"
    path.write_text("drill: " + "[" * 100000 + "]" * 100000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="deep.yaml: not valid YAML"):
        load(str(path), user_file=no_user_file)


def test_a_duplicate_key_names_the_key_and_both_lines(tmp_path, no_user_file):
    path = tmp_path / "dup.yaml"
    path.write_text("train:\n  lr: 0.1\n  epochs: 2\n  lr: 0.2\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(str(path), user_file=no_user_file)
    message = str(info.value)
    assert str(path) in message and "duplicate key 'lr' at lines 2 and 4" in message, message

    top = tmp_path / "dup-top.yaml"
    top.write_text("drill:\n  steps: 1\nlimits:\n  grace_s: 1\ndrill:\n  steps: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="duplicate key 'drill' at lines 1 and 5"):
        load(str(top), user_file=no_user_file)
    with pytest.raises(ConfigError, match="duplicate key 'steps' at lines 1 and 1"):
        load(sets=["drill={steps: 1, steps: 2}"], user_file=no_user_file)


def test_an_interpreter_that_does_not_exist_is_a_config_error(tmp_path, no_user_file):
    with pytest.raises(ConfigError) as info:
        load(sets=["python=%s" % (tmp_path / "no-such-python")], user_file=no_user_file)
    assert "'python'" in str(info.value) and "is not an executable file" in str(info.value)
    with pytest.raises(ConfigError, match="no no-such-python-xyz on PATH"):
        load(user_file=no_user_file, extra=[("--python", {"python": "no-such-python-xyz"})])
    assert load(sets=["python=sh"], user_file=no_user_file)["python"] == "sh"


def test_an_explicit_data_dir_must_exist(tmp_path, no_user_file):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(ConfigError) as info:
        load(sets=["data.dir=%s" % missing], user_file=no_user_file)
    message = str(info.value)
    assert "'data.dir'" in message and "%s does not exist" % missing in message, message
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match="is not a folder"):
        load(sets=["data.dir=%s" % a_file], user_file=no_user_file)
    assert get(load(user_file=no_user_file), "data.dir") is None  # the default searches the usual places


def test_a_relative_data_dir_means_the_callers_folder(tmp_path, no_user_file, monkeypatch):
    (tmp_path / "fm").mkdir()
    monkeypatch.chdir(tmp_path)
    assert get(load(sets=["data.dir=fm"], user_file=no_user_file), "data.dir") == str(tmp_path / "fm")


@pytest.mark.parametrize("text", ["{1: .inf}", "{1: .nan}", "{1: 0.5, 2: -.inf}"])
def test_a_non_finite_float_inside_a_mapping_is_refused_naming_the_key(text, no_user_file):
    with pytest.raises(ConfigError, match=r"acceptance.export_max_abs_diff_by_batch.*is not a finite number"):
        load(None, ["acceptance.export_max_abs_diff_by_batch=%s" % text], user_file=no_user_file)


def test_a_set_key_a_thousand_levels_deep_is_a_config_error_not_a_recursion(no_user_file):
    with pytest.raises(ConfigError, match="a key 1000 levels deep; no config key has more than 16"):
        load(None, [".".join(["a"] * 1000) + "=1"], user_file=no_user_file)
