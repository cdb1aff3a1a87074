"""The one walker of dotted config keys: reading with and without a default, setting, replacing, nesting."""

from __future__ import annotations

import pytest

from workbench.config.keys import get, nest, put
from workbench.config.layers import ConfigError, check_value, defaults, schema_field


def test_get_reads_a_dotted_key_and_names_it_when_absent():
    cfg = {"train": {"epochs": 3, "parallel": {"workers": 2}}}
    assert get(cfg, "train.parallel.workers") == 2
    with pytest.raises(KeyError, match="train.nothing"):
        get(cfg, "train.nothing")
    with pytest.raises(KeyError, match="train.epochs.deeper"):
        get(cfg, "train.epochs.deeper")  # a number where a mapping was expected
    assert get(cfg, "train.nothing", None) is None
    assert get(cfg, "train.epochs.deeper", "x") == "x"
    assert get(cfg, "train.epochs", None) == 3


def test_put_creates_or_only_replaces_and_nest_builds_overrides():
    cfg = {"train": {"epochs": 3}}
    put(cfg, "train.parallel.workers", 2)
    assert cfg == {"train": {"epochs": 3, "parallel": {"workers": 2}}}
    put(cfg, "train.epochs", 5, create=False)
    assert cfg["train"]["epochs"] == 5
    with pytest.raises(KeyError):
        put(cfg, "train.nothing", 1, create=False)
    with pytest.raises(KeyError):
        put(cfg, "nowhere.at_all", 1, create=False)
    assert cfg == {"train": {"epochs": 5, "parallel": {"workers": 2}}}  # a refused key changes nothing
    assert nest([("train.epochs", 1), ("train.lr", 0.1), ("device.target", "CPU")]) == {
        "train": {"epochs": 1, "lr": 0.1},
        "device": {"target": "CPU"},
    }


def test_the_public_check_is_the_config_layers_check():
    assert check_value("train.epochs", 4, "form") == 4
    with pytest.raises(ConfigError, match=r"form: key 'train.epochs' has value -1"):
        check_value("train.epochs", -1, "form")
    with pytest.raises(KeyError):
        schema_field("train")  # a section, not a field
    assert schema_field("train.epochs").default == get(defaults(), "train.epochs")
