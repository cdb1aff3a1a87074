"""Layered, typed configuration: defaults < user file < --config < --set, with errors that name things."""

from __future__ import annotations

import pytest
import yaml

from workbench.config.keys import get
from workbench.config.layers import SCHEMA, ConfigError, Field, defaults, dump, load, parse_set


@pytest.fixture
def no_user_file(tmp_path):
    """A user-file path that does not exist, so the real ~/.config never leaks into a test."""
    return tmp_path / "absent" / "config.yaml"


def write_yaml(path, data):
    """Write a YAML file and return its path."""
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_defaults_are_the_schema_defaults(no_user_file):
    cfg = load(user_file=no_user_file)
    assert cfg == defaults()
    assert get(cfg, "drill.steps") == 20
    assert get(cfg, "limits.stall_s") == 300.0
    assert get(cfg, "limits.job_timeout_s") == 0.0
    assert get(cfg, "device.target") == "auto"
    assert get(cfg, "data.dir") is None
    assert get(cfg, "export.formats") == ["ckpt", "mindir"]
    assert get(cfg, "align.reference.mode") == "pynative"


def test_defaults_are_fresh_copies():
    a = defaults()
    a["export"]["formats"].append("onnx")
    assert defaults()["export"]["formats"] == ["ckpt", "mindir"]


def test_every_default_passes_its_own_check(no_user_file):
    def walk(schema, prefix=""):
        for key, spec in schema.items():
            if isinstance(spec, dict):
                yield from walk(spec, prefix + key + ".")
            else:
                yield prefix + key, spec

    for key, spec in walk(SCHEMA):
        assert isinstance(spec, Field)
        # Setting each default explicitly must be accepted unchanged.
        value = "null" if spec.default is None else yaml.safe_dump(spec.default, default_flow_style=True).strip()
        value = value.replace("\n...", "")
        cfg = load(user_file=no_user_file, sets=["%s=%s" % (key, value)])
        assert get(cfg, key) == spec.default, key


def test_layering_user_file_then_config_then_set(tmp_path):
    user = write_yaml(tmp_path / "user.yaml", {"drill": {"steps": 1, "rate": 2.0, "hang": True}, "glog_v": 1})
    project = write_yaml(tmp_path / "project.yaml", {"drill": {"steps": 10, "rate": 20.0}})
    cfg = load(str(project), ["drill.steps=100"], user_file=user)
    assert get(cfg, "drill.steps") == 100  # --set wins
    assert get(cfg, "drill.rate") == 20.0  # --config beats the user file
    assert get(cfg, "drill.hang") is True  # the user file beats the defaults
    assert get(cfg, "glog_v") == 1
    assert get(cfg, "drill.crash_after") == 0  # untouched keys keep their defaults

    # A later --set beats an earlier one.
    assert get(load(sets=["drill.steps=3", "drill.steps=4"], user_file=user), "drill.steps") == 4


def executable(path):
    """A tiny executable file standing for an interpreter; returns its path as a string."""
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def test_extra_layer_sits_between_config_and_set(tmp_path, no_user_file):
    from_config, from_flag, from_set = (executable(tmp_path / n) for n in ("config-py", "flag-py", "set-py"))
    project = write_yaml(tmp_path / "project.yaml", {"python": from_config})
    cfg = load(str(project), [], user_file=no_user_file, extra=[("--python", {"python": from_flag})])
    assert cfg["python"] == from_flag
    cfg = load(
        str(project), ["python=%s" % from_set], user_file=no_user_file, extra=[("--python", {"python": from_flag})]
    )
    assert cfg["python"] == from_set


@pytest.mark.parametrize(
    "item, key, value",
    [
        ("drill.steps=7", "drill.steps", 7),
        ("drill.rate=2.5", "drill.rate", 2.5),
        ("drill.rate=3", "drill.rate", 3),
        ("train.lr=1", "train.lr", 1.0),
        ("train.lr=1e-3", "train.lr", 1e-3),  # YAML 1.1 alone would read this as a string
        ("train.lr=5E-4", "train.lr", 5e-4),
        ("drill.hang=true", "drill.hang", True),
        ("drill.hang=no", "drill.hang", False),
        ("data.dir=null", "data.dir", None),
        ("data.dir=~", "data.dir", None),
        ("data.dir=", "data.dir", None),
        ("data.dir=/tmp", "data.dir", "/tmp"),
        ("drill.crash_signal=SIGSEGV", "drill.crash_signal", "SIGSEGV"),
        ("export.formats=[ckpt]", "export.formats", ["ckpt"]),
        ("export.formats=[]", "export.formats", []),
        ("export.batch_sizes=[1,8]", "export.batch_sizes", [1, 8]),
    ],
)
def test_set_values_are_yaml_scalars(item, key, value, no_user_file):
    got = get(load(sets=[item], user_file=no_user_file), key)
    assert got == value and type(got) is type(value), (item, got)


def test_exponent_floats_in_a_file(tmp_path, no_user_file):
    path = tmp_path / "lr.yaml"
    path.write_text("train:\n  lr: 1e-3\n  momentum: 5e-1\n", encoding="utf-8")
    cfg = load(str(path), user_file=no_user_file)
    assert get(cfg, "train.lr") == 0.001 and get(cfg, "train.momentum") == 0.5


def test_int_given_for_a_float_key_becomes_float(no_user_file):
    assert isinstance(get(load(sets=["train.lr=1"], user_file=no_user_file), "train.lr"), float)


def test_parse_set_nests_dotted_keys():
    assert parse_set("train.parallel.workers=2") == {"train": {"parallel": {"workers": 2}}}
    assert parse_set("a=b=c") == {"a": "b=c"}  # only the first '=' splits


@pytest.mark.parametrize(
    "item, key, value, why",
    [
        ("drill.stepz=3", "drill.stepz", "value 3", "unknown key"),
        ("nosuch=x", "nosuch", "value 'x'", "unknown key"),
        ("drill.steps=abc", "drill.steps", "'abc'", "got str"),
        ("drill.steps=2.5", "drill.steps", "2.5", "got float"),
        ("drill.steps=true", "drill.steps", "True", "got a boolean"),
        ("drill.steps=-1", "drill.steps", "-1", "too small"),
        ("glog_v=9", "glog_v", "9", "too large"),
        ("limits.stall_s=-0.5", "limits.stall_s", "-0.5", "too small"),
        ("model.name=resnet", "model.name", "'resnet'", "one of mlp, cnn"),
        ("device.target=npu", "device.target", "'npu'", "one of auto, CPU, GPU, Ascend"),
        ("drill.steps=null", "drill.steps", "None", "null not allowed"),
        ("export.batch_sizes=[1, x]", "export.batch_sizes", "[1, 'x']", "item 1 is 'x': got str"),
        ("export.formats=ckpt", "export.formats", "'ckpt'", "got str"),
        ("drill=3", "drill", "3", "must be a mapping"),
    ],
)
def test_set_errors_name_key_value_and_source(item, key, value, why, no_user_file):
    with pytest.raises(ConfigError) as info:
        load(sets=[item], user_file=no_user_file)
    message = str(info.value)
    assert message.startswith("--set %s:" % item), message
    assert repr(key) in message or key in message, message
    assert value in message, message
    assert why in message, message


def test_file_errors_name_the_file(tmp_path, no_user_file):
    bad = write_yaml(tmp_path / "bad.yaml", {"train": {"epochs": 0}})
    with pytest.raises(ConfigError) as info:
        load(str(bad), user_file=no_user_file)
    message = str(info.value)
    assert str(bad) in message and "'train.epochs'" in message and "value 0" in message and ">= 1" in message

    user = write_yaml(tmp_path / "user.yaml", {"ui": {"refresh_hz": "fast"}})
    with pytest.raises(ConfigError) as info:
        load(user_file=user)
    assert str(user) in str(info.value) and "'ui.refresh_hz'" in str(info.value) and "'fast'" in str(info.value)

    unknown = write_yaml(tmp_path / "unknown.yaml", {"train": {"epoch": 3}})
    with pytest.raises(ConfigError) as info:
        load(str(unknown), user_file=no_user_file)
    assert str(unknown) in str(info.value) and "'train.epoch' with value 3" in str(info.value)
    assert "epochs" in str(info.value)  # the known keys are offered


def test_unreadable_and_invalid_files_are_config_errors(tmp_path, no_user_file):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError, match="missing.yaml: cannot read config file"):
        load(str(missing), user_file=no_user_file)
    broken = tmp_path / "broken.yaml"
    broken.write_text("drill: {steps: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="broken.yaml: not valid YAML"):
        load(str(broken), user_file=no_user_file)
    top = tmp_path / "top.yaml"
    top.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="top.yaml: the top level must be a mapping"):
        load(str(top), user_file=no_user_file)


@pytest.mark.parametrize("item", ["drill.steps", "=3", "drill.steps=[1,"])
def test_malformed_set_items(item, no_user_file):
    with pytest.raises(ConfigError, match="--set"):
        load(sets=[item], user_file=no_user_file)


def test_empty_user_file_is_fine(tmp_path):
    empty = tmp_path / "user.yaml"
    empty.write_text("", encoding="utf-8")
    assert load(user_file=empty) == defaults()


def test_dump_round_trips(no_user_file):
    cfg = load(sets=["drill.steps=3", "export.formats=[mindir]", "data.dir=/"], user_file=no_user_file)
    assert yaml.safe_load(dump(cfg)) == cfg
    assert list(yaml.safe_load(dump(cfg))) == list(SCHEMA)  # schema order, not sorted


@pytest.mark.parametrize(
    "item, why",
    [
        ("export.formats=[onnx]", "item 0 is 'onnx': not an allowed value"),
        ("export.formats=[ckpt, lite]", "item 1 is 'lite': not an allowed value"),
        ("export.batch_sizes=[64, 0]", "item 1 is 0: too small"),
        ("export.batch_sizes=[70000]", "item 0 is 70000: too large"),
        ("export.batch_sizes=[1, true]", "item 1 is True: got a boolean"),
    ],
)
def test_list_items_have_choices_and_ranges(item, why, no_user_file):
    with pytest.raises(ConfigError) as info:
        load(sets=[item], user_file=no_user_file)
    message = str(info.value)
    assert why in message, message
    key = item.split("=")[0]
    expected = {
        "export.formats": "list of str each one of ckpt, mindir",
        "export.batch_sizes": "list of int each >= 1 <= 65536",
    }[key]
    assert "expected %s" % expected in message, message


def test_the_export_formats_are_what_the_export_job_writes():
    from workbench.config.layers import EXPORT_FORMATS

    assert SCHEMA["export"]["formats"].item_choices == EXPORT_FORMATS == ("ckpt", "mindir")


def test_mindir_needs_a_batch_size(no_user_file):
    with pytest.raises(ConfigError, match="'export.batch_sizes' is empty while 'export.formats' has mindir"):
        load(sets=["export.batch_sizes=[]"], user_file=no_user_file)
    cfg = load(sets=["export.batch_sizes=[]", "export.formats=[ckpt]"], user_file=no_user_file)
    assert get(cfg, "export.batch_sizes") == [] and get(cfg, "export.formats") == ["ckpt"]
