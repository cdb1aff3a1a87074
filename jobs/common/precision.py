"""Numeric precision of a run: fp32, fp16 (parameters and inputs explicitly float16), amp-O1, amp-O2.

The automatic mixed precision API is feature-detected: `mindspore.amp.auto_mixed_precision`
(2.x), else `mindspore.train.amp.auto_mixed_precision`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from workbench.jobkit.context import JobFailed

PRECISIONS = ("fp32", "fp16", "amp-O1", "amp-O2")
# Adam's default eps (1e-8) is 0 in float16, so an fp16 moment of 0 divides by 0: the loss
# turns inf within an epoch. 1e-4 is the smallest round value that is a normal float16.
FP16_ADAM_EPS = 1e-4
DEFAULT_ADAM_EPS = 1e-8


def input_dtype(precision: str) -> np.dtype:
    """The numpy dtype the input images are fed in."""
    return np.dtype(np.float16) if precision == "fp16" else np.dtype(np.float32)


def prepare_inputs(images: np.ndarray, precision: str, scale: float = 1.0) -> np.ndarray:
    """Images as fed to the network: times train.input_scale (1 = as loaded), in the precision's input dtype."""
    if scale != 1.0:
        images = images * np.float32(scale)
    dtype = input_dtype(precision)
    return images.astype(dtype) if images.dtype != dtype else images


def adam_eps(precision: str) -> float:
    """Adam's eps for this precision (fp16 parameters need a representable eps)."""
    return FP16_ADAM_EPS if precision == "fp16" else DEFAULT_ADAM_EPS


def amp_api() -> Tuple[Optional[Callable], str]:
    """(auto_mixed_precision, where it was found) or (None, why not)."""
    import mindspore as ms

    amp = getattr(ms, "amp", None)
    if amp is not None and hasattr(amp, "auto_mixed_precision"):
        return amp.auto_mixed_precision, "mindspore.amp.auto_mixed_precision"
    try:
        from mindspore.train.amp import auto_mixed_precision  # older layout
    except ImportError:
        return None, "neither mindspore.amp nor mindspore.train.amp has auto_mixed_precision"
    return auto_mixed_precision, "mindspore.train.amp.auto_mixed_precision"


def apply_precision(net, precision: str) -> Tuple[Any, Dict[str, Any]]:
    """Prepare `net` for `precision`; return (the network to run, a description for events).

    `net` itself keeps the parameters (the amp wrappers share them), so a checkpoint saved
    from `net` loads into a plain `build_net` network.
    """
    import mindspore as ms

    info: Dict[str, Any] = {"precision": precision, "input_dtype": str(input_dtype(precision))}
    if precision == "fp32":
        info["how"] = "float32 parameters and inputs"
        return net, info
    if precision == "fp16":
        net.to_float(ms.float16)  # compute dtype of every cell
        for param in net.get_parameters():
            param.set_dtype(ms.float16)
        info["how"] = "parameters set_dtype(float16), cells to_float(float16), inputs float16; loss in float32"
        return net, info
    if precision in ("amp-O1", "amp-O2"):
        level = precision.split("-", 1)[1]
        fn, where = amp_api()
        if fn is None:
            raise JobFailed(
                "train.precision is %r but %s" % (precision, where),
                hint="use fp32 or fp16 with this MindSpore",
                type_="ConfigError",
            )
        try:
            run_net = fn(net, amp_level=level)
        except Exception as exc:
            raise JobFailed(
                "%s(net, amp_level=%r) failed: %s" % (where, level, exc),
                hint="try fp16 or fp32",
                type_=type(exc).__name__,
            )
        info["how"] = "%s(amp_level=%r), float32 inputs and master weights" % (where, level)
        return run_net, info
    raise JobFailed(
        "train.precision is %r; expected one of %s" % (precision, ", ".join(PRECISIONS)), type_="ConfigError"
    )


def with_loss(run_net, loss_fn, precision: str):
    """The network plus loss: the course's WithLossCell in fp32, else logits cast to float32 first."""
    from mindspore import nn

    if precision == "fp32":
        return nn.WithLossCell(run_net, loss_fn)
    return _float32_loss_class()(run_net, loss_fn)


def _float32_loss_class():
    """Defined lazily so importing this module does not import MindSpore."""
    import mindspore as ms
    from mindspore import nn, ops

    class Float32Loss(nn.Cell):
        """Loss on float32 logits, whatever the network computes in."""

        def __init__(self, backbone, loss_fn):
            super().__init__(auto_prefix=False)
            self._backbone = backbone
            self._loss_fn = loss_fn

        def construct(self, x, label):
            return self._loss_fn(ops.cast(self._backbone(x), ms.float32), label)

    return Float32Loss
