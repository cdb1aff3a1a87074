"""One training step replayed in PyNative with every leaf cell's output, the loss, each gradient and update inspected.

Run by the numerics job in its own process, and by the train job as a fresh process
(`python -m jobs.numerics.replay --job-dir TRAIN_JOB --case CASE --out FINDING.json`) when a step
turned non-finite: a fresh process, because forward hooks only run in PyNative mode and the train
job's process is in graph mode with its device taken.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from workbench.analysis import overflow
from workbench.jobkit.config import load_job_config
from workbench.jobkit.context import JobFailed
from workbench.system.atomic import write_json


def _first_tensor(value: Any) -> Any:
    """The first tensor of a hook's inputs (a tuple) or output (a tensor or a tuple)."""
    while isinstance(value, (tuple, list)):
        if not value:
            return None
        value = value[0]
    return value


def _range(tensor: Any) -> Optional[Dict[str, Any]]:
    if tensor is None or not hasattr(tensor, "asnumpy"):
        return None
    return overflow.value_range(tensor.asnumpy())


def leaf_cells(net: Any) -> List[Any]:
    """(name, cell) of every cell without children, in definition order."""
    return [(name, cell) for name, cell in net.cells_and_names() if name and not list(cell.cells())]


def cell_label(name: str, cell: Any) -> str:
    """'layer.1.Dense': the cell's name in its network and its class."""
    return "layer.%s.%s" % (name, type(cell).__name__)


def forward_probes(loss_cell: Any, run_net: Any, x: Any, y: Any) -> List[Dict[str, Any]]:
    """Run the loss cell once with a forward hook on each leaf cell; the probes in the order the cells ran."""
    probes: List[Dict[str, Any]] = []
    handles = []

    def hook_for(label: str):
        def hook(*args):  # (cell, inputs, output) in 2.3+, (cell_id, inputs, output) before
            inputs, output = args[-2], args[-1]
            out = _first_tensor(output)
            probes.append(
                {
                    "kind": "forward",
                    "cell": label,
                    "dtype": overflow.dtype_name(getattr(out, "dtype", "?")),
                    "in": _range(_first_tensor(inputs)),
                    "out": _range(out),
                }
            )

        return hook

    for name, cell in leaf_cells(run_net):
        if not hasattr(cell, "register_forward_hook"):
            raise JobFailed(
                "this MindSpore has no Cell.register_forward_hook: cell outputs cannot be inspected",
                type_="Unsupported",
            )
        handles.append(cell.register_forward_hook(hook_for(cell_label(name, cell))))
    try:
        loss = loss_cell(x, y)
    finally:
        for handle in handles:
            if hasattr(handle, "remove"):
                handle.remove()
    probes.append({"kind": "loss", "cell": "loss", "dtype": overflow.dtype_name(loss.dtype), "out": _range(loss)})
    return probes


def owner_labels(net: Any) -> Dict[str, str]:
    """Parameter name -> the label of the cell that holds it."""
    cells = dict(net.cells_and_names())
    out = {}
    for param in net.get_parameters():
        owner = param.name.rsplit(".", 1)[0] if "." in param.name else ""
        cell = cells.get(owner)
        out[param.name] = cell_label(owner, cell) if cell is not None else "layer.%s" % owner
    return out


def inspect_step(parts: Any, x_np: np.ndarray, y_np: np.ndarray) -> List[Dict[str, Any]]:
    """Every probe of one step of `parts` (jobs/train/stepcell.StepParts) on one batch, in execution order."""
    from mindspore import Tensor, ops

    x, y = Tensor(x_np), Tensor(y_np)
    probes = forward_probes(parts.loss_cell, parts.run_net, x, y)
    weights = parts.opt.parameters
    grads = ops.GradOperation(get_by_list=True)(parts.loss_cell, weights)(x, y)
    owners = owner_labels(parts.net)
    for param, grad in reversed(list(zip(weights, grads))):
        probes.append(
            {
                "kind": "gradient",
                "cell": owners.get(param.name, param.name),
                "param": param.name,
                "dtype": overflow.dtype_name(grad.dtype),
                "out": _range(grad),
            }
        )
    parts.opt(grads)
    for param in weights:
        probes.append(
            {
                "kind": "update",
                "cell": owners.get(param.name, param.name),
                "param": param.name,
                "dtype": overflow.dtype_name(param.dtype),
                "out": _range(param),
            }
        )
    return probes


def finding(probes: List[Dict[str, Any]], at: Dict[str, Any], device: Dict[str, Any]) -> Dict[str, Any]:
    """The replay's result: the first bad probe and its sentence, or the clean sentence; what it is about."""
    bad = overflow.first_bad(probes)
    out = {
        "at": at,
        "bad": bad,
        "sentence": overflow.sentence(bad, at) if bad is not None else overflow.clean_sentence(probes, at),
        "probes": probes,
        "replay_device": device,
        "order_rule": overflow.ORDER_RULE,
        "bad_rule": overflow.BAD_RULE,
    }
    return out


def replay_case(job_dir: Path, case_dir: Path) -> Dict[str, Any]:
    """In this process: set the run's device in PyNative, build its step, load the case, inspect the step."""
    from jobs.common import models, msdevice, precision, stepcell
    from jobs.common.failcase import STATE, load_case

    cfg = load_job_config(job_dir)
    meta, x, y = load_case(case_dir)
    msdevice.set_device(cfg.device.target, cfg.device.id, "pynative")
    import mindspore as ms

    parts = stepcell.build_step(ms, cfg)
    models.load_weights(parts.train_step, Path(case_dir) / STATE, "numerics case state")
    x = precision.prepare_inputs(x, cfg.train.precision, 1.0)  # the batch was saved as fed
    device = dict(msdevice.effective_device(), mode="pynative", mindspore=ms.__version__)
    return finding(inspect_step(parts, x, y), meta.get("at") or {}, device)


def main(argv: Optional[List[str]] = None) -> int:
    """The train job's fresh-process replay: the finding as JSON in --out (exit 0), or the error there (exit 1)."""
    parser = argparse.ArgumentParser(prog="python -m jobs.numerics.replay")
    parser.add_argument("--job-dir", required=True, help="the train job whose config built the step")
    parser.add_argument("--case", required=True, help="the case folder (state.ckpt, batch.npz, case.json)")
    parser.add_argument("--out", required=True, help="where the finding is written (JSON)")
    args = parser.parse_args(argv)
    try:
        result = replay_case(Path(args.job_dir), Path(args.case))
    except Exception as exc:  # the parent reports it as the check's blocked reason
        message = str(exc) if isinstance(exc, JobFailed) else "%s: %s" % (type(exc).__name__, exc)
        write_json(Path(args.out), {"error": message})
        return 1
    write_json(Path(args.out), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
