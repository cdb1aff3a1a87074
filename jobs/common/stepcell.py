"""The training step of a run, built from its config: network, precision, loss, optimizer, the one-step cell.

The train job and the numerics replay build it with the same function, so a replay runs the same
numbers. With train.monitor.every the monitor reads the gradients a step applied: from Adam's first
moment around a plain step (first_moment), or else from a second cell that shares the network and
optimizer and also returns them (no second forward or backward pass either way); it reduces them,
and the weights before and after the step, to norms on the host.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from jobs.common import models, precision
from workbench.jobkit.context import JobFailed

LOSS_SCALE_START = 2.0**24
LOSS_SCALE_FACTOR = 2
LOSS_SCALE_WINDOW = 2000


class StepParts:
    """What build_step made: the network (parameters), the network run, the loss cell, optimizer, step cell."""

    def __init__(self, **parts: Any):
        self.net = parts["net"]
        self.run_net = parts["run_net"]
        self.precision_info: Dict[str, Any] = parts["precision_info"]
        self.loss_cell = parts["loss_cell"]
        self.opt = parts["opt"]
        self.opt_info: Dict[str, Any] = parts["opt_info"]
        self.train_step = parts["train_step"]


def build_step(ms: Any, cfg: Any) -> StepParts:
    """Seeded network, precision, loss, optimizer and the one-step training cell of `cfg`."""
    from mindspore import nn

    t, m = cfg.train, cfg.model
    ms.set_seed(t.seed)
    net = models.build_net(m.name, m.hidden)
    if m.hidden_gain != 1.0:
        net = with_hidden_gain(net, m.name, m.hidden_gain, t.precision)
    run_net, precision_info = precision.apply_precision(net, t.precision)
    for _, cell in run_net.cells_and_names():
        if type(cell).__name__ == "Gain":
            cell.to_float(ms.float32)  # after the network's: the product itself is taken in float32
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    params = run_net.trainable_params()
    if t.optimizer == "adam":
        eps = precision.adam_eps(t.precision)
        opt = nn.Adam(params, learning_rate=t.lr, eps=eps)
        opt_info = {"name": "adam", "lr": t.lr, "eps": eps}
    else:
        opt = nn.SGD(params, learning_rate=t.lr, momentum=t.momentum)
        opt_info = {"name": "sgd", "lr": t.lr, "momentum": t.momentum}
    loss_cell = precision.with_loss(run_net, loss_fn, t.precision)
    if t.loss_scale == "dynamic":
        # MindSpore's DynamicLossScaleManager defaults: start at 2**24, halve on overflow, double after 2000 good steps.
        manager = nn.DynamicLossScaleUpdateCell(
            loss_scale_value=LOSS_SCALE_START, scale_factor=LOSS_SCALE_FACTOR, scale_window=LOSS_SCALE_WINDOW
        )
        overflow_check = "MindSpore's own for the device (float-status)"
        cell_cls = nn.TrainOneStepWithLossScaleCell
        if cfg.device.target == "CPU":
            # The cell reads a float-status register (NPUGetFloatStatusV2 off GPU, FloatStatus on GPU), which has
            # no CPU kernel: on CPU the overflow is read with isfinite over the unscaled gradients instead.
            cell_cls = _isfinite_loss_scale_class()
            overflow_check = "isfinite over the unscaled gradients (CPU has no float-status kernel)"
        train_step = cell_cls(loss_cell, opt, scale_sense=manager)
        precision_info = dict(
            precision_info,
            loss_scale={
                "kind": "dynamic",
                "start": LOSS_SCALE_START,
                "factor": LOSS_SCALE_FACTOR,
                "window": LOSS_SCALE_WINDOW,
                "how": "nn.TrainOneStepWithLossScaleCell(scale_sense=nn.DynamicLossScaleUpdateCell): an overflowing "
                "step skips its update and halves the scale",
                "overflow_check": overflow_check,
            },
        )
    else:
        train_step = nn.TrainOneStepCell(loss_cell, opt)
    train_step.set_train(True)
    return StepParts(
        net=net,
        run_net=run_net,
        precision_info=precision_info,
        loss_cell=loss_cell,
        opt=opt,
        opt_info=opt_info,
        train_step=train_step,
    )


def loss_of(out: Any) -> Any:
    """The loss tensor of a step cell's output (a loss-scaled cell returns (loss, overflow, scale))."""
    return out[0] if isinstance(out, tuple) else out


def current_scale(train_step: Any) -> Any:
    """The loss scale a loss-scaled step cell holds now (None for a plain cell)."""
    sense = getattr(train_step, "scale_sense", None)
    return float(sense.asnumpy()) if sense is not None and hasattr(sense, "asnumpy") else None


def with_hidden_gain(net: Any, name: str, gain: float, precision_name: str) -> Any:
    """The mlp with a parameter-free x gain after its first Dense and x 1/gain after its ReLU (model.hidden_gain).

    ReLU is positively homogeneous, so the function, its gradients and its training are those of the
    plain mlp up to rounding; only the hidden activations are `gain` times larger, which makes an fp16
    run overflow at the first Gain cell by construction when gain x the Dense output passes 65504.
    """
    from mindspore import nn

    if name != "mlp":
        raise JobFailed(
            "model.hidden_gain is %r but model.name is %r: only the mlp takes a hidden gain" % (gain, name),
            hint="set model.hidden_gain=1 or model.name=mlp",
            type_="ConfigError",
        )
    cells = list(net.cells())
    gain_cls = _gain_class()
    fp16 = precision_name == "fp16"
    return nn.SequentialCell(cells[0], cells[1], gain_cls(gain, fp16), cells[2], gain_cls(1.0 / gain, fp16), cells[3])


def _isfinite_loss_scale_class():
    """TrainOneStepWithLossScaleCell whose overflow flag is any non-finite gradient (defined lazily)."""
    from mindspore import nn, ops

    class IsfiniteLossScaleStep(nn.TrainOneStepWithLossScaleCell):
        """The loss-scaled step with the overflow read by isfinite (CPU runs it)."""

        def get_overflow_status(self, status, compute_output):
            finite: tuple = ()
            for grad in compute_output:
                finite += (ops.isfinite(grad).all(),)
            return ops.logical_not(ops.stack(finite).all())

    return IsfiniteLossScaleStep


def _gain_class():
    """Defined lazily so importing this module does not import MindSpore."""
    import mindspore as ms
    from mindspore import nn, ops

    class Gain(nn.Cell):
        """x * gain taken in float32, returned in the network's activation dtype (an fp16 result past 65504 is inf)."""

        def __init__(self, gain, fp16):
            super().__init__()
            self.gain = float(gain)
            self.out_dtype = ms.float16 if fp16 else ms.float32

        def construct(self, x):
            return ops.cast(ops.cast(x, ms.float32) * self.gain, self.out_dtype)

    return Gain


def monitored_step(train_step: Any, loss_cell: Any, opt: Any) -> Any:
    """A step cell sharing `train_step`'s loss cell, optimizer (and loss scale) that also returns the gradients it applied.

    Plain: (loss, grads). Loss-scaled: (loss, overflow, scale, grads), the gradients unscaled; the
    scale parameter and its update cell are `train_step`'s own, so both cells move one scale.
    """
    manager = getattr(train_step, "loss_scaling_manager", None)
    if manager is None:
        return _monitored_class()(loss_cell, opt)
    cell = _monitored_loss_scale_class(type(train_step))(loss_cell, opt, scale_sense=manager)
    cell.scale_sense = train_step.scale_sense
    return cell


def first_moment(train_step: Any, opt: Any) -> Optional[Tuple[list, float]]:
    """(first-moment parameters, beta1) where a plain step's applied gradients can be read back from Adam's first moment.

    Adam keeps m_t = beta1 m_(t-1) + (1 - beta1) g_t, so g_t = (m_t - beta1 m_(t-1)) / (1 - beta1) from the
    moment before and after a step (float32 rounding: about 1e-7 of |g|, measured). None where that does
    not hold or is not wanted: another optimizer, a float16 moment (train.precision=fp16), weight decay,
    a gradient scale or centralisation, grouped parameters, lazy/offloaded/AMSGrad updates, or a loss
    scale (a step it skips leaves the moment unchanged; its overflowing gradients are what the cell shows).
    """
    import mindspore as ms
    from mindspore import nn

    if getattr(train_step, "loss_scaling_manager", None) is not None or type(opt) is not nn.Adam:
        return None
    plain = (
        all(m.dtype == ms.float32 for m in opt.moment1)  # a float16 moment's rounding would swamp the difference
        and not opt.is_group
        and not getattr(opt, "is_group_lr", False)
        and not getattr(opt, "dynamic_weight_decay", False)
        and _number(opt.weight_decay) == 0.0
        and _number(opt.loss_scale) == 1.0
        and not getattr(opt, "grad_centralization", False)
        and not (opt.use_lazy or opt.use_offload or getattr(opt, "use_amsgrad", False))
    )
    return (list(opt.moment1), float(opt.beta1.asnumpy())) if plain else None


def _number(value: Any) -> Optional[float]:
    """A float, or a scalar Tensor's value; None for anything else (a schedule cell)."""
    if isinstance(value, (int, float)):
        return float(value)
    if hasattr(value, "asnumpy") and getattr(value, "size", 0) == 1:
        return float(value.asnumpy())
    return None


def _monitored_class():
    """Defined lazily so importing this module does not import MindSpore."""
    from mindspore import nn, ops

    class MonitoredStep(nn.TrainOneStepCell):
        """TrainOneStepCell's step that also returns the gradients it applied (one compiled graph, no second pass).

        The gradients pass the cell's grad reducer (the mean over the ranks of a data-parallel run), so
        every rank applies and returns the same gradients, as with the plain cell.
        """

        def construct(self, x, label):
            loss = self.network(x, label)
            sens = ops.fill(loss.dtype, loss.shape, 1.0)
            grads = self.grad(self.network, self.weights)(x, label, sens)
            grads = self.grad_reducer(grads)
            loss = ops.depend(loss, self.optimizer(grads))
            return loss, grads

    return MonitoredStep


def _monitored_loss_scale_class(base: Any) -> Any:
    """`base` (a TrainOneStepWithLossScaleCell) whose step also returns the unscaled gradients."""
    from mindspore import Tensor, ops
    from mindspore import dtype as mstype
    from mindspore.nn.wrap.loss_scale import _grad_scale

    class MonitoredLossScaleStep(base):
        """TrainOneStepWithLossScaleCell.construct, returning the gradients after unscaling as a fourth output."""

        def construct(self, x, label):
            loss = self.network(x, label)
            scaling_sens = self.scale_sense
            status = Tensor([0] * 8, mstype.int32)
            scaling_sens_filled = ops.ones_like(loss) * ops.cast(scaling_sens, ops.dtype(loss))
            grads = self.grad(self.network, self.weights)(x, label, scaling_sens_filled)
            grads = self.hyper_map(ops.partial(_grad_scale, scaling_sens), grads)
            grads = self.grad_reducer(grads)
            cond = self.get_overflow_status(status, grads)
            overflow = self.process_loss_scale(cond)
            if not overflow:
                loss = ops.depend(loss, self.optimizer(grads))
            return loss, cond, scaling_sens, grads

    return MonitoredLossScaleStep


def param_names(opt: Any) -> list:
    """The names of the optimizer's parameters, in the monitored cell's row order."""
    return [p.name for p in opt.parameters]


def param_sizes(opt: Any) -> list:
    """Element counts of the optimizer's parameters, in row order."""
    return [int(np.prod(p.shape)) if len(p.shape) else 1 for p in opt.parameters]
