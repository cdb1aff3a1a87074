"""The schema refuses a batch larger than the train split (with both numbers) and an lr of 0 or less."""

import numpy as np
import pytest

from workbench.config.layers import ConfigError, batch_problem, check_value, load, train_images
from workbench.data.split import stratified_split
from workbench.data.synthetic import synthetic_images


def _load(*sets):
    return load(sets=list(sets), user_file=False)


def test_a_batch_larger_than_the_official_train_split_is_refused_with_both_numbers():
    with pytest.raises(ConfigError) as err:
        _load("train.batch_size=60000")
    assert "train.batch_size 60000 > 54000 images in the train split" in str(err.value)
    assert "expected at most 54000" in str(err.value)
    assert _load("train.batch_size=54000")["train"]["batch_size"] == 54000  # the whole split in one batch is allowed


@pytest.mark.parametrize("n, fraction", [(2000, 0.1), (1203, 0.1), (257, 0.37), (20, 0.5)])
def test_the_counted_train_split_is_the_one_the_split_rule_makes(n, fraction):
    cfg = _load(
        "data.source=synthetic", "data.synthetic_train=%d" % n, "data.val_fraction=%s" % fraction, "train.batch_size=1"
    )
    _, labels = synthetic_images(n, np.random.default_rng(0))
    train_idx, _ = stratified_split(labels, fraction)
    assert train_images(cfg)[0] == len(train_idx)


def test_train_limit_bounds_the_epoch_and_data_from_is_left_to_the_job():
    cfg = _load("train.train_limit=512")
    assert train_images(cfg)[0] == 512
    cfg["train"]["batch_size"] = 513
    assert "train.batch_size 513 > 512" in batch_problem(cfg) and "train.train_limit" in batch_problem(cfg)
    cfg["data"]["from"] = "data-001"
    assert train_images(cfg) is None and batch_problem(cfg) is None


@pytest.mark.parametrize("lr", [0, 0.0, -0.001])
def test_an_lr_of_zero_or_less_is_refused(lr):
    with pytest.raises(ConfigError) as err:
        check_value("train.lr", lr, "form")
    assert "'train.lr'" in str(err.value) and "> 0.0" in str(err.value) and "too small" in str(err.value)


def test_a_tiny_positive_lr_is_accepted():
    assert check_value("train.lr", 1e-9, "form") == 1e-9
