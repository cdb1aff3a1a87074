"""The first probe out of range, and the sentences said about it (workbench.analysis.overflow)."""

from __future__ import annotations

import numpy as np

from workbench.analysis import overflow
from workbench.events.protocol import Evidence


def probe(kind, cell, dtype, absmax, nonfinite=0, inp=None, param=None):
    out = {"min": -absmax, "max": absmax, "absmax": absmax, "nonfinite": nonfinite, "size": 100}
    p = {"kind": kind, "cell": cell, "dtype": dtype, "out": out}
    if inp is not None:
        p["in"] = {"absmax": inp, "nonfinite": 0}
    if param:
        p["param"] = param
    return p


AT = {"epoch": 3, "step": 12, "global_step": 1284}


def test_first_bad_is_the_first_in_order_not_the_worst():
    probes = [
        probe("forward", "layer.0.Flatten", "float16", 38.2),
        probe("forward", "layer.1.Dense", "float32", 7.1e4, inp=38.2),  # fp32: 7.1e4 is in range
        probe("forward", "layer.2.Gain", "float16", 6.0e4, nonfinite=3, inp=7.1e4),
        probe("forward", "layer.3.Dense", "float16", 1.0, nonfinite=100),
    ]
    bad = overflow.first_bad(probes)
    assert bad["cell"] == "layer.2.Gain" and bad["index"] == 2 and bad["problem"] == "non-finite"


def test_finite_value_beyond_the_dtype_is_bad():
    bad = overflow.first_bad([probe("forward", "layer.1.Dense", "float16", 7.1e4, inp=38.2)])
    assert bad["problem"] == "overflows fp16"
    text = overflow.sentence(bad, AT)
    assert text == (
        "layer.1.Dense forward output float16 overflows fp16 (max |x| 7.1e+04) at epoch 3 step 12 "
        "(global step 1 284); input max |x| 38.2"
    )
    assert overflow.first_bad([probe("forward", "layer.1.Dense", "float16", 65504.0)]) is None


def test_gradient_and_update_sentences_name_the_parameter():
    grad = overflow.first_bad([probe("gradient", "layer.3.Dense", "float16", 1.0, nonfinite=2, param="3.weight")])
    assert overflow.sentence(grad, AT).startswith("layer.3.Dense gradient of 3.weight float16 is non-finite (2 of 100")
    upd = overflow.first_bad([probe("update", "layer.1.Dense", "float16", 7e4, param="1.weight")])
    assert overflow.sentence(upd, AT).startswith("layer.1.Dense update of 1.weight float16 overflows fp16")


def test_clean_sentence_names_the_closest_probe():
    probes = [probe("forward", "layer.1.Dense", "float16", 6e4), probe("forward", "layer.3.Dense", "float32", 1e6)]
    assert overflow.first_bad(probes) is None
    text = overflow.clean_sentence(probes, AT)
    assert "finite and within its dtype (2 probes)" in text and "closest to its limit: layer.1.Dense" in text


def test_value_range_counts_nan_and_inf_and_ranges_the_finite():
    r = overflow.value_range(np.array([1.0, -3.0, np.inf, np.nan], np.float16))
    assert (r["min"], r["max"], r["absmax"], r["nonfinite"], r["nan"], r["size"]) == (-3.0, 1.0, 3.0, 2, 1, 4)
    r = overflow.value_range(np.array([np.nan], np.float32))
    assert r["absmax"] is None and r["nonfinite"] == 1
    assert overflow.dtype_name("Float16") == "float16" and overflow.dtype_name(np.dtype("float32")) == "float32"


def test_replay_on_another_device_says_what_it_is_evidence_about():
    bad = overflow.first_bad([probe("forward", "layer.1.Dense", "float16", 7.1e4)])
    finding = {"bad": bad, "sentence": overflow.sentence(bad, AT), "replay_device": {"target": "CPU"}}
    status, detail, _ = overflow.origin_verdict(finding, {"target": "Ascend"})
    assert status == Evidence.FAIL
    assert "replayed on CPU in PyNative (the run was on Ascend: this is evidence about the model's numbers" in detail
    status, detail, _ = overflow.origin_verdict(finding, {"target": "CPU"})
    assert "the run was on" not in detail
    status, detail, _ = overflow.origin_verdict({"error": "no MindSpore"}, {"target": "CPU"})
    assert status == Evidence.BLOCKED and "no MindSpore" in detail
    clean = {"bad": None, "sentence": "all finite", "replay_device": {"target": "CPU"}}
    assert overflow.origin_verdict(clean, {"target": "CPU"})[0] == Evidence.BLOCKED
