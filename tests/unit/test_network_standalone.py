"""jobs/common/network.py is the hand-over's model.py: standalone, and the same facts the workbench uses."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from jobs.common import network
from workbench.data.dataset import CLASS_NAMES, scale

SOURCE = Path(network.__file__)


def test_imports_only_mindspore_numpy_and_the_standard_library():
    tops = set()
    for node in ast.walk(ast.parse(SOURCE.read_text())):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            tops.add((node.module or "").split(".")[0])
    assert tops == {"__future__", "json", "sys", "pathlib", "numpy", "mindspore"}


def test_class_names_and_preprocessing_are_the_workbench_ones():
    assert network.CLASS_NAMES == tuple(CLASS_NAMES)
    images = np.arange(3 * 28 * 28, dtype=np.int64).reshape(3, 28, 28).astype(np.uint8)
    assert np.array_equal(network.preprocess(images), scale(images))
    with pytest.raises(ValueError, match="dtype float32; expected uint8"):
        network.preprocess(images.astype(np.float32))
    with pytest.raises(ValueError, match=r"shape \[3, 784\]; expected \[N, 28, 28\]"):
        network.preprocess(images.reshape(3, 784))


def test_an_unknown_model_name_is_named():
    with pytest.raises(ValueError, match="model name is 'resnet'; expected one of mlp, cnn"):
        network.build_net("resnet")
