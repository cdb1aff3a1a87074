"""Load an exported artefact in a fresh process and record what it computes.

The export job starts this with exec (subprocess.run([sys.executable, "-m", "jobs.export_load", ...])),
never with fork: a process forked after MindSpore ran an op hangs, and a fresh process is
the point — parameters still in the export job's memory cannot hide a wrong or stale file.

What it loads (first argument):
  ckpt        build the network, load_checkpoint + load_param_into_net, set_train(False), run the inputs
  mindir      mindspore.load + nn.GraphCell, run the inputs at each batch size
  lite-probe  does mindspore_lite import here? (never in the same process as MindSpore)
  lite        mindspore_lite build_from_file on one backend, then predict

It writes one JSON report (atomically; rewritten after every step, so a crash leaves the steps
done) and the outputs as .npy beside it. It never writes events: the export job owns events.jsonl.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from workbench.atomic import write_bytes, write_json

REPORT_FORMAT = "ms-workbench export load v1"


def batch_rows(n_rows: int, batch_size: int) -> np.ndarray:
    """Row numbers [calls, batch_size] that cover all n_rows at a fixed batch size, wrapping around.

    Every call has exactly batch_size rows (a fixed-signature graph is asked for exactly that
    shape); rows repeat when n_rows is not a multiple, and every repeat is compared too.
    """
    if n_rows < 1 or batch_size < 1:
        raise ValueError("batch_rows: n_rows=%r and batch_size=%r must both be >= 1" % (n_rows, batch_size))
    calls = max(1, int(math.ceil(n_rows / float(batch_size))))
    return (np.arange(calls * batch_size) % n_rows).reshape(calls, batch_size)


def short_error(exc: BaseException, limit: int = 2000) -> str:
    """'Type: message' without MindSpore's C++ call stack section, bounded in length."""
    text = "%s: %s" % (type(exc).__name__, exc)
    cut = text.find("- C++ Call Stack")
    if cut > 0:
        text = text[:cut].rstrip("- \n")
    return text if len(text) <= limit else text[:limit] + " ..."


def save_npy(path: Path, array: np.ndarray) -> str:
    """Write an .npy atomically; return the file name."""
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    write_bytes(path, buffer.getvalue())
    return path.name


class Report:
    """The loader's report file: who ran, what each step did, rewritten after each step."""

    def __init__(self, path: Path, what: str):
        self.path = Path(path)
        self.data: Dict[str, Any] = {
            "format": REPORT_FORMAT, "what": what, "pid": os.getpid(), "ppid": os.getppid(),
            "python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3],
            "started_at": time.time(), "steps": [], "done": False, "error": None,
        }
        self.save()

    def set(self, **fields: Any) -> None:
        """Record top-level fields."""
        self.data.update(fields)
        self.save()

    def step(self, **fields: Any) -> Dict[str, Any]:
        """Record one finished step."""
        self.data["steps"].append(fields)
        self.save()
        return fields

    def fail(self, message: str, type_: str = "Error", **fields: Any) -> None:
        """Record the error that stopped the loader."""
        self.data["error"] = dict({"type": type_, "message": message}, **fields)
        self.save()

    def finish(self) -> None:
        """Mark the report complete."""
        self.data["done"] = True
        self.data["ended_at"] = time.time()
        self.save()

    def save(self) -> None:
        """Write the report atomically."""
        write_json(self.path, self.data)


def _set_device(report: Report, target: str, device_id: int, mode: str) -> Any:
    """Select the device first (never a fallback); the report says how, or why not."""
    import mindspore as ms

    from jobs import msdevice
    from workbench.jobkit import JobFailed

    report.set(mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)})
    try:
        how = msdevice.set_device(target, device_id, mode)
    except JobFailed as exc:
        report.fail(str(exc), "DeviceError", hint=exc.hint)
        return None
    report.set(device={"target": target, "device_id": device_id, "mode": mode, "set_with": how,
                       "effective": msdevice.effective_device()})
    return ms


def load_ckpt(args: argparse.Namespace, report: Report) -> int:
    """Rebuild the network, load the checkpoint into it, run the inputs once at batch N."""
    ms = _set_device(report, args.target, args.device_id, args.ms_mode)
    if ms is None:
        return 1
    from mindspore import Tensor

    from jobs.models import build_net

    inputs = np.load(args.inputs, allow_pickle=False)
    net = build_net(args.model, args.hidden)
    names = [p.name for p in net.get_parameters()]
    report.set(network={"model": args.model, "hidden": args.hidden, "parameters": names})
    t0 = time.perf_counter()
    try:
        params = ms.load_checkpoint(args.ckpt)
    except Exception as exc:  # a damaged file raises ValueError; its text names the file
        report.step(step="load_checkpoint", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail("%s cannot be read by mindspore.load_checkpoint: %s" % (args.ckpt, short_error(exc)),
                    type(exc).__name__, file=args.ckpt)
        return 1
    report.step(step="load_checkpoint", ok=True, tensors=sorted(params), s=time.perf_counter() - t0)
    t0 = time.perf_counter()
    try:
        # strict_load=True: names must match exactly (without it MindSpore strips a shared name
        # prefix and loads anyway, while still listing the names as not loaded).
        not_in_net_loaded, not_from_ckpt = ms.load_param_into_net(net, params, strict_load=True)
    except Exception as exc:  # a shape mismatch raises
        report.step(step="load_param_into_net", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail("%s does not fit the network: %s" % (args.ckpt, short_error(exc)), type(exc).__name__,
                    file=args.ckpt)
        return 1
    param_not_load, ckpt_not_load = list(not_in_net_loaded or []), list(not_from_ckpt or [])
    report.step(step="load_param_into_net", ok=not param_not_load and not ckpt_not_load,
                param_not_load=param_not_load, ckpt_not_load=ckpt_not_load, strict_load=True,
                s=time.perf_counter() - t0)
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
    report.step(step="forward", ok=True, batch_size=int(inputs.shape[0]), shape=list(logits.shape),
                outputs=save_npy(out, logits.astype(np.float32)), s=time.perf_counter() - t0)
    return 0


def load_mindir(args: argparse.Namespace, report: Report) -> int:
    """mindspore.load + nn.GraphCell, then each batch size: outputs and row map per size."""
    ms = _set_device(report, args.target, args.device_id, args.ms_mode)
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
        report.fail("%s cannot be loaded (mindspore.load + nn.GraphCell): %s" % (args.mindir, short_error(exc)),
                    type(exc).__name__, file=args.mindir)
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
        record: Dict[str, Any] = {"step": "run", "batch_size": batch_size, "calls": int(rows.shape[0]),
                                  "calls_done": len(outputs), "first_call_s": call_s[0] if call_s else None,
                                  "total_s": float(sum(call_s))}
        if error is not None:
            record.update(ok=False, error=error)
        else:
            stem = base.stem + ".b%d" % batch_size
            record.update(ok=True, shape=list(outputs[0].shape),
                          outputs=save_npy(base.with_name(stem + ".logits.npy"),
                                           np.concatenate(outputs).astype(np.float32)),
                          rows=save_npy(base.with_name(stem + ".rows.npy"), rows.reshape(-1).astype(np.int64)))
        report.step(**record)
    return 0


def lite_probe(args: argparse.Namespace, report: Report) -> int:
    """Try `import mindspore_lite` (this process never imports MindSpore)."""
    try:
        import mindspore_lite as mslite  # noqa: F401  (optional, board-specific wheel)
    except Exception as exc:  # ImportError, or an undefined symbol from a mismatched build
        report.set(lite={"imported": False, "error": short_error(exc)})
        return 0
    report.set(lite={"imported": True, "version": getattr(mslite, "__version__", None),
                     "path": os.path.dirname(getattr(mslite, "__file__", "") or "")})
    return 0


def _lite_context(mslite: Any, backend: str, device_id: int) -> Any:
    """A Lite context for one backend: `Context.target` (Lite 2.x) or `append_device_info` (older)."""
    context = mslite.Context()
    if hasattr(context, "target"):
        context.target = [backend]
        if backend == "ascend":
            context.ascend.device_id = int(device_id)
        elif backend == "gpu":
            context.gpu.device_id = int(device_id)
        return context
    if backend == "ascend":
        context.append_device_info(mslite.AscendDeviceInfo(device_id=int(device_id)))
    elif backend == "gpu":
        context.append_device_info(mslite.GPUDeviceInfo(device_id=int(device_id)))
    context.append_device_info(mslite.CPUDeviceInfo())
    return context


def load_lite(args: argparse.Namespace, report: Report) -> int:
    """Build the MindIR with MindSpore Lite on one backend, then predict at one batch size."""
    try:
        import mindspore_lite as mslite
    except Exception as exc:
        report.fail("mindspore_lite does not import: %s" % short_error(exc), type(exc).__name__)
        return 1
    report.set(lite={"imported": True, "version": getattr(mslite, "__version__", None), "backend": args.backend})
    inputs = np.load(args.inputs, allow_pickle=False)
    t0 = time.perf_counter()
    try:
        context = _lite_context(mslite, args.backend, args.device_id)
        model = mslite.Model()
        model.build_from_file(args.mindir, mslite.ModelType.MINDIR, context)
    except Exception as exc:  # Lite's own log line (the version gate) goes to stderr as well
        report.step(step="build_from_file", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail("build_from_file(%s) on %s failed: %s" % (args.mindir, args.backend, short_error(exc)),
                    type(exc).__name__, file=args.mindir)
        return 1
    report.step(step="build_from_file", ok=True, backend=args.backend, s=time.perf_counter() - t0)
    rows = batch_rows(int(inputs.shape[0]), int(args.batch_size))
    outputs: List[np.ndarray] = []
    t0 = time.perf_counter()
    try:
        lite_inputs = model.get_inputs()
        shape = [int(args.batch_size)] + list(inputs.shape[1:])
        if list(lite_inputs[0].shape) != shape:
            model.resize(lite_inputs, [shape])
        for call_rows in rows:
            lite_inputs[0].set_data_from_numpy(np.ascontiguousarray(inputs[call_rows]))
            outputs.append(np.asarray(model.predict(lite_inputs)[0].get_data_to_numpy()))
    except Exception as exc:
        report.step(step="predict", ok=False, error=short_error(exc), s=time.perf_counter() - t0)
        report.fail("predict on %s failed: %s" % (args.backend, short_error(exc)), type(exc).__name__)
        return 1
    stem = Path(args.out).stem
    report.step(step="predict", ok=True, batch_size=int(args.batch_size), s=time.perf_counter() - t0,
                outputs=save_npy(Path(args.out).with_name(stem + ".logits.npy"),
                                 np.concatenate(outputs).astype(np.float32)),
                rows=save_npy(Path(args.out).with_name(stem + ".rows.npy"), rows.reshape(-1).astype(np.int64)))
    return 0


MODES = {"ckpt": load_ckpt, "mindir": load_mindir, "lite-probe": lite_probe, "lite": load_lite}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The loader's command line."""
    p = argparse.ArgumentParser(prog="python -m jobs.export_load")
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
