"""One side of an alignment, in its own process: device first, then the tensors of one path.

    python -m jobs.align.side --job-dir DIR --side ref|cand
    python -m jobs.align.side --job-dir DIR --make-init     (initial weights, on CPU)

A side writes artifacts/side-<side>.npz (every tensor, by name, in the dtype it was
computed in) and artifacts/side-<side>.json (status, effective settings read back from
MindSpore, the tensor list in forward order, pid). A side whose device cannot be set
writes status "blocked" with MindSpore's message and computes nothing.

Forward tensors (layer outputs, logits) are computed in eval state, loss and gradients
in train state; both are read back from the cells and recorded. Cells are always used
(never bare functions) so that GRAPH mode really compiles what is compared.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import traceback
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from jobs.align.inputs import INIT_NAME, INPUTS_NAME, path_label, read_inputs
from workbench.analysis.tensordiff import dtype_name
from workbench.jobkit.config import load_job_config
from workbench.jobkit.context import JobFailed
from workbench.system.atomic import sha256_file, write_bytes, write_json

SIDES = {"ref": "reference", "cand": "candidate"}
EXIT_OK, EXIT_FAILED, EXIT_BLOCKED = 0, 1, 2
SIDE_OK, SIDE_FAILED, SIDE_BLOCKED = "ok", "failed", "blocked"  # a side record's status
LOSS_REDUCTION = "mean"
LAYERS_HOW = (
    "every cell of the SequentialCell in turn, inside one cell together with the whole network's "
    "call (one graph in GRAPH mode); named layer.<i>.<class of the cell as built>"
)


def side_paths(job_dir: Path, side: str) -> Dict[str, Path]:
    """Where a side writes its tensors and its record."""
    art = Path(job_dir) / "artifacts"
    return {"npz": art / ("side-%s.npz" % side), "json": art / ("side-%s.json" % side)}


def _cells():
    """Cell classes, defined lazily so importing this module does not import MindSpore."""
    from mindspore import nn, ops

    class ForwardTap(nn.Cell):
        """Every layer's output and the network's own output, from one call."""

        def __init__(self, seq, run_net):
            super().__init__(auto_prefix=False)  # keep parameter names as built (1.weight …)
            self.seq = seq
            self.run_net = run_net

        def construct(self, x):
            outs = ()
            h = x
            for cell in self.seq.cell_list:
                h = cell(h)
                outs = outs + (h,)  # type: ignore[assignment]  # no annotation of `outs`: MindSpore's graph parser compiles this body
            return outs + (self.run_net(x),)

    class LossAndGrads(nn.Cell):
        """The loss and the gradient of every trainable parameter, in one call."""

        def __init__(self, net_with_loss, weights):
            super().__init__(auto_prefix=False)
            self.net_with_loss = net_with_loss
            self.weights = weights
            self.grad = ops.GradOperation(get_by_list=True)

        def construct(self, x, y):
            return self.net_with_loss(x, y), self.grad(self.net_with_loss, self.weights)(x, y)

    return ForwardTap, LossAndGrads


def _sequential(run_net, net):
    """The SequentialCell whose cells the run really calls (amp may wrap or rewrite the network)."""
    from mindspore import nn

    for candidate in (run_net, getattr(run_net, "_backbone", None), net):
        if isinstance(candidate, nn.SequentialCell):
            return candidate
    raise JobFailed(
        "the network is %s, not a SequentialCell: layer outputs cannot be tapped" % type(net).__name__,
        hint="set align.layers=false",
        type_="AlignError",
    )


def _optimizer(cfg: Mapping[str, Any], params, precision: str):
    """The optimizer of the training config (Adam with a float16-safe eps for fp16)."""
    from mindspore import nn

    from jobs.common.precision import adam_eps

    train = cfg["train"]
    if train["optimizer"] == "adam":
        return nn.Adam(params, learning_rate=train["lr"], eps=adam_eps(precision)), "Adam(lr=%g, eps=%g)" % (
            train["lr"],
            adam_eps(precision),
        )
    return nn.SGD(params, learning_rate=train["lr"], momentum=train["momentum"]), "SGD(lr=%g, momentum=%g)" % (
        train["lr"],
        train["momentum"],
    )


def _state(cell) -> str:
    """`train` or `eval`, read back from the cell."""
    return "train" if bool(cell.training) else "eval"


def compute(
    cfg: Mapping[str, Any], job_dir: Path, path: Dict[str, Any], record: Dict[str, Any]
) -> OrderedDict[str, np.ndarray]:
    """Run one path: set the device first, load the shared weights, return its tensors in forward order."""
    from jobs.common.msdevice import effective_device, ms_role_warning, set_device

    timing: Dict[str, float] = {}
    t0 = time.perf_counter()
    how = set_device(path["target"], path["id"], path["mode"])  # before any tensor op
    timing["set_device_s"] = time.perf_counter() - t0
    import mindspore as ms
    from mindspore import Tensor, nn

    from jobs.common.models import build_net, load_weights
    from jobs.common.precision import apply_precision, input_dtype, with_loss

    record["mindspore"] = ms.__version__
    record["device_api"] = how
    record["effective"] = effective_device()
    record["ms_role_warning"] = ms_role_warning()
    seed = cfg["train"]["seed"]
    ms.set_seed(seed)  # nothing here draws random numbers; set and read back so both sides state it
    art = Path(job_dir) / "artifacts"
    inputs = read_inputs(art / INPUTS_NAME)
    precision = str(path["precision"])
    net = build_net(cfg["model"]["name"], cfg["model"]["hidden"])
    layer_names = ["layer.%d.%s" % (i, type(cell).__name__) for i, cell in enumerate(net.cell_list)]
    loaded = load_weights(net, art / INIT_NAME, "initial weights")
    run_net, prec_info = apply_precision(net, precision)
    params = net.trainable_params()
    x = Tensor(inputs["x"].astype(input_dtype(precision)))
    y = Tensor(inputs["y"].astype(np.int32))
    tensors: OrderedDict[str, np.ndarray] = OrderedDict()
    tensors["input"] = x.asnumpy()
    tensors["labels"] = y.asnumpy()

    ForwardTap, LossAndGrads = _cells()
    tap = ForwardTap(_sequential(run_net, net), run_net)
    tap.set_train(False)
    t0 = time.perf_counter()
    outs = tap(x)
    timing["forward_s"] = time.perf_counter() - t0
    forward_state = _state(run_net)
    layer_outs = [o.asnumpy() for o in outs[:-1]]
    logits = outs[-1].asnumpy()
    if cfg["align"]["layers"]:
        for name, value in zip(layer_names, layer_outs):
            tensors[name] = value
    tensors["logits"] = logits
    computed: Dict[str, str] = {}
    if dtype_name(layer_outs[-1].dtype) != dtype_name(logits.dtype):
        # amp casts the network's output back to float32: the values were computed in the last layer's dtype
        computed["logits"] = dtype_name(layer_outs[-1].dtype)
    record["computed_dtype"] = computed
    last = layer_outs[-1].astype(np.float64)
    record["tap_check"] = {
        "rule": "the last layer output, taken cell by cell, equals the network's logits on the same side",
        "max_abs": float(np.max(np.abs(last - logits.astype(np.float64)))) if last.shape == logits.shape else None,
        "shapes": [list(last.shape), list(logits.shape)],
    }

    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction=LOSS_REDUCTION)
    net_with_loss = with_loss(run_net, loss_fn, precision)
    t0 = time.perf_counter()
    if cfg["align"]["grads"]:
        loss_grads = LossAndGrads(net_with_loss, ms.ParameterTuple(params))
        loss_grads.set_train(True)
        loss, grads = loss_grads(x, y)
        loss_state = _state(run_net)
        tensors["loss"] = loss.asnumpy()
        for param, grad in zip(params, grads):
            tensors["grad." + param.name] = grad.asnumpy()
    else:
        net_with_loss.set_train(True)
        loss = net_with_loss(x, y)
        loss_state = _state(run_net)
        tensors["loss"] = loss.asnumpy()
    timing["loss_grads_s"] = time.perf_counter() - t0

    steps = cfg["align"]["steps"]
    if steps:
        optimizer, opt_text = _optimizer(cfg, params, precision)
        train_step = nn.TrainOneStepCell(net_with_loss, optimizer)
        train_step.set_train(True)
        t0 = time.perf_counter()
        losses = [float(train_step(x, y).asnumpy()) for _ in range(steps)]
        timing["steps_s"] = time.perf_counter() - t0
        tensors["steps.loss"] = np.asarray(losses, dtype=np.float32)
        for param in params:
            tensors["after%d.%s" % (steps, param.name)] = param.asnumpy()
        record["steps"] = {
            "k": steps,
            "optimizer": opt_text,
            "batch": "the same fixed batch every step",
            "state": _state(run_net),
        }

    record["precision"] = prec_info
    record["settings"] = {
        "preprocessing": inputs["preprocessing"],
        "x_range": [float(tensors["input"].min()), float(tensors["input"].max())],
        "input_dtype": dtype_name(tensors["input"].dtype),
        "class_order": inputs["class_names"],
        "loss": "SoftmaxCrossEntropyWithLogits(sparse=True)",
        "loss_reduction": str(getattr(loss_fn, "reduction", LOSS_REDUCTION)),
        "state": {"forward": forward_state, "loss_grads": loss_state},
        "seed": int(ms.get_seed()),
        "inputs_sha256": sha256_file(art / INPUTS_NAME),
        "init_sha256": sha256_file(art / INIT_NAME),
        "model": {"name": cfg["model"]["name"], "hidden": cfg["model"]["hidden"]},
        "optimizer": (record.get("steps") or {}).get("optimizer"),
    }
    record["loaded"] = loaded
    record["layers_how"] = LAYERS_HOW if cfg["align"]["layers"] else "not taken (align.layers=false)"
    record["timing_s"] = timing
    return tensors


def write_tensors(
    npz_path: Path, tensors: OrderedDict[str, np.ndarray], computed: Optional[Dict[str, str]] = None
) -> List[Dict[str, Any]]:
    """Save every tensor (atomically); return [{name, shape, dtype, computed_dtype}] in forward order.

    `computed_dtype` is the dtype the values were computed in, where it differs from the stored one.
    """
    buffer = io.BytesIO()
    np.savez(buffer, **tensors)
    write_bytes(npz_path, buffer.getvalue())
    computed = computed or {}
    return [
        {"name": k, "shape": list(v.shape), "dtype": dtype_name(v.dtype), "computed_dtype": computed.get(k)}
        for k, v in tensors.items()
    ]


def run_side(job_dir: Path, side: str) -> int:
    """Compute one side and write its record; the exit code says ok (0), failed (1) or blocked (2).

    The path's target was decided by the runner before the job started (config.json holds it,
    with what was requested and why).
    """
    cfg = load_job_config(Path(job_dir))
    path = dict(cfg["align"][SIDES[side]])
    out = side_paths(job_dir, side)
    record: Dict[str, Any] = {
        "side": side,
        "role": SIDES[side],
        "label": path_label(path),
        "requested": dict(path),
        "pid": os.getpid(),
        "python": sys.executable,
        "status": "running",
        "error": None,
    }
    code = EXIT_OK
    try:
        tensors = compute(cfg, Path(job_dir), path, record)
        record["tensors"] = write_tensors(out["npz"], tensors, record.get("computed_dtype"))
        record["npz"] = out["npz"].name
        record["npz_sha256"] = sha256_file(out["npz"])
        record["status"] = SIDE_OK
    except JobFailed as exc:
        # A device that cannot be set is a missing precondition (blocked); anything later is a failure.
        blocked = exc.type_ == "DeviceError" and "effective" not in record
        record["status"] = SIDE_BLOCKED if blocked else SIDE_FAILED
        record["error"] = {"type": exc.type_, "message": str(exc), "hint": exc.hint}
        code = EXIT_BLOCKED if blocked else EXIT_FAILED
    except Exception as exc:  # the record must say what broke, whatever it was
        traceback.print_exc()
        record["status"] = SIDE_FAILED
        record["error"] = {"type": type(exc).__name__, "message": str(exc), "hint": None}
        code = EXIT_FAILED
    write_json(out["json"], record)
    return code


def make_init(job_dir: Path) -> int:
    """Build the network once with train.seed on CPU and save artifacts/init.ckpt (+ init.json)."""
    from jobs.common.msdevice import set_device

    cfg = load_job_config(Path(job_dir))
    art = Path(job_dir) / "artifacts"
    set_device("CPU", 0, "pynative")  # initial values are host data: the device plays no part in them
    import mindspore as ms

    from jobs.common.models import build_net

    seed = cfg["train"]["seed"]
    ms.set_seed(seed)
    net = build_net(cfg["model"]["name"], cfg["model"]["hidden"])
    ms.save_checkpoint(net, str(art / INIT_NAME))  # MindSpore writes via a temp file and a rename
    write_json(
        art / "init.json",
        {
            "seed": seed,
            "how": "build_net(%r, %d) after mindspore.set_seed(%d), on CPU"
            % (cfg["model"]["name"], cfg["model"]["hidden"], seed),
            "parameters": [{"name": p.name, "shape": list(p.shape)} for p in net.trainable_params()],
            "pid": os.getpid(),
            "mindspore": ms.__version__,
        },
    )
    return EXIT_OK


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the side process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job-dir", required=True)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--side", choices=sorted(SIDES))
    group.add_argument("--make-init", action="store_true")
    args = parser.parse_args(argv)
    job_dir = Path(args.job_dir).resolve()
    if args.make_init:
        return make_init(job_dir)
    return run_side(job_dir, args.side)


if __name__ == "__main__":
    sys.exit(main())
