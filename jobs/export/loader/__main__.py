"""Load an exported artefact in a fresh process and record what it computes.

The export job starts this with exec (subprocess.run([sys.executable, "-m", "jobs.export.loader", ...])),
never with fork: a process forked after MindSpore ran an op hangs, and a fresh process is
the point — parameters still in the export job's memory cannot hide a wrong or stale file.

What it loads (first argument):
  ckpt        build the network, load_checkpoint + load_param_into_net, set_train(False), run the inputs
  mindir      mindspore.load + nn.GraphCell, run the inputs at each batch size
  lite-probe  does mindspore_lite import here? (never in the same process as MindSpore; lite.py)
  lite        mindspore_lite build_from_file on one backend, then predict (loader/lite.py)

It writes one JSON report (atomically; rewritten after every step, so a crash leaves the steps
done) and the outputs as .npy beside it. It never writes events: the export job owns events.jsonl.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from jobs.common.msdevice import short_error
from jobs.export.loader.lite import lite_probe, load_lite
from jobs.export.loader.report import Report, batch_rows, save_npy, set_device


def load_ckpt(args: argparse.Namespace, report: Report) -> int:
    """Rebuild the network, load the checkpoint into it, run the inputs once at batch N."""
    ms = set_device(report, args.target, args.device_id, args.ms_mode)
    if ms is None:
        return 1
    from mindspore import Tensor

    from jobs.common.models import build_net

    inputs = np.load(args.inputs, allow_pickle=False)
    net = build_net(args.model, args.hidden)
    names = [p.name for p in net.get_parameters()]
    report.set(network={"model": args.model, "hidden": args.hidden, "parameters": names})
    t0 = time.perf_counter()
    try:
        params = ms.load_checkpoint(args.ckpt)
    except Exception as exc:  # a damaged file raises ValueError; its text names the file
        report.step(step="load_checkpoint", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail(
            "%s cannot be read by mindspore.load_checkpoint: %s" % (args.ckpt, short_error(exc)),
            type(exc).__name__,
            file=args.ckpt,
        )
        return 1
    report.step(step="load_checkpoint", ok=True, tensors=sorted(params), s=time.perf_counter() - t0)
    t0 = time.perf_counter()
    try:
        # strict_load=True: names must match exactly (without it MindSpore strips a shared name
        # prefix and loads anyway, while still listing the names as not loaded).
        not_in_net_loaded, not_from_ckpt = ms.load_param_into_net(net, params, strict_load=True)
    except Exception as exc:  # a shape mismatch raises
        report.step(step="load_param_into_net", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail(
            "%s does not fit the network: %s" % (args.ckpt, short_error(exc)), type(exc).__name__, file=args.ckpt
        )
        return 1
    param_not_load, ckpt_not_load = list(not_in_net_loaded or []), list(not_from_ckpt or [])
    report.step(
        step="load_param_into_net",
        ok=not param_not_load and not ckpt_not_load,
        param_not_load=param_not_load,
        ckpt_not_load=ckpt_not_load,
        strict_load=True,
        s=time.perf_counter() - t0,
    )
    net.set_train(False)
    # Outputs are computed even when names did not match: their difference is evidence too.
    t0 = time.perf_counter()
    try:
        logits = net(Tensor(inputs)).asnumpy()
    except Exception as exc:
        report.step(step="forward", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail("forward pass after loading %s failed: %s" % (args.ckpt, short_error(exc)), type(exc).__name__)
        return 1
    out = Path(args.out).with_name(Path(args.out).stem + ".logits.npy")
    report.step(
        step="forward",
        ok=True,
        batch_size=int(inputs.shape[0]),
        shape=list(logits.shape),
        outputs=save_npy(out, logits.astype(np.float32)),
        s=time.perf_counter() - t0,
    )
    return 0


def load_mindir(args: argparse.Namespace, report: Report) -> int:
    """mindspore.load + nn.GraphCell, then each batch size: outputs and row map per size."""
    ms = set_device(report, args.target, args.device_id, args.ms_mode)
    if ms is None:
        return 1
    from mindspore import Tensor, nn

    inputs = np.load(args.inputs, allow_pickle=False)
    t0 = time.perf_counter()
    try:
        graph = ms.load(args.mindir)
        cell = nn.GraphCell(graph)
    except Exception as exc:
        report.step(step="load", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail(
            "%s cannot be loaded (mindspore.load + nn.GraphCell): %s" % (args.mindir, short_error(exc)),
            type(exc).__name__,
            file=args.mindir,
        )
        return 1
    report.step(step="load", ok=True, api="mindspore.load + nn.GraphCell", s=time.perf_counter() - t0)
    base = Path(args.out)
    for batch_size in [int(b) for b in args.batch_sizes.split(",") if b]:
        rows = batch_rows(int(inputs.shape[0]), batch_size)
        outputs: List[np.ndarray] = []
        call_s: List[float] = []
        error: Optional[str] = None
        for call_rows in rows:
            t0 = time.perf_counter()
            try:
                outputs.append(cell(Tensor(inputs[call_rows])).asnumpy())
            except Exception as exc:  # whatever MindSpore does with this shape is the finding
                error = short_error(exc)
                call_s.append(time.perf_counter() - t0)
                break
            call_s.append(time.perf_counter() - t0)
        record: Dict[str, Any] = {
            "step": "run",
            "batch_size": batch_size,
            "calls": int(rows.shape[0]),
            "calls_done": len(outputs),
            "first_call_s": call_s[0] if call_s else None,
            "total_s": float(sum(call_s)),
        }
        if error is not None:
            record.update(ok=False, error=error)
        else:
            stem = base.stem + ".b%d" % batch_size
            record.update(
                ok=True,
                shape=list(outputs[0].shape),
                outputs=save_npy(base.with_name(stem + ".logits.npy"), np.concatenate(outputs).astype(np.float32)),
                rows=save_npy(base.with_name(stem + ".rows.npy"), rows.reshape(-1).astype(np.int64)),
            )
        report.step(**record)
    return 0


MODES = {"ckpt": load_ckpt, "mindir": load_mindir, "lite-probe": lite_probe, "lite": load_lite}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The loader's command line."""
    p = argparse.ArgumentParser(prog="python -m jobs.export.loader")
    p.add_argument("what", choices=sorted(MODES), help="what to load")
    p.add_argument("--out", required=True, help="report JSON; outputs go beside it")
    p.add_argument("--inputs", help="reference inputs .npy (float32 [N, 1, 28, 28])")
    p.add_argument("--ckpt")
    p.add_argument("--model", default="mlp")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--mindir")
    p.add_argument("--batch-sizes", default="64")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--backend", default="cpu", help="Lite backend: cpu, ascend or gpu")
    p.add_argument("--target", default="CPU")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--ms-mode", default="graph", choices=("graph", "pynative"))
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    """Run one load and write its report; exit 0 when the loader itself completed."""
    args = parse_args(argv)
    report = Report(Path(args.out), args.what)
    try:
        code = MODES[args.what](args, report)
    except Exception as exc:  # anything unforeseen still ends up in the report
        traceback.print_exc()
        report.fail(short_error(exc), type(exc).__name__)
        code = 1
    report.finish()
    return code


if __name__ == "__main__":
    sys.exit(main())
