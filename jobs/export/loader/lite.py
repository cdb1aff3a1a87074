"""The MindSpore Lite loaders: does mindspore_lite import, and does it build and run the MindIR.

Both run in a process that never imports MindSpore itself (the two runtimes are separate wheels
and may not coexist in one process on a board).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, List

import numpy as np

from jobs.common.msdevice import short_error
from jobs.export.loader.report import Report, batch_rows, save_npy


def lite_probe(args: argparse.Namespace, report: Report) -> int:
    """Try `import mindspore_lite` (this process never imports MindSpore)."""
    try:
        import mindspore_lite as mslite  # noqa: F401  (optional, board-specific wheel)
    except Exception as exc:  # ImportError, or an undefined symbol from a mismatched build
        report.set(lite={"imported": False, "error": short_error(exc)})
        return 0
    report.set(
        lite={
            "imported": True,
            "version": getattr(mslite, "__version__", None),
            "path": os.path.dirname(getattr(mslite, "__file__", "") or ""),
        }
    )
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
        report.fail(
            "build_from_file(%s) on %s failed: %s" % (args.mindir, args.backend, short_error(exc)),
            type(exc).__name__,
            file=args.mindir,
        )
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
    report.step(
        step="predict",
        ok=True,
        batch_size=int(args.batch_size),
        s=time.perf_counter() - t0,
        outputs=save_npy(Path(args.out).with_name(stem + ".logits.npy"), np.concatenate(outputs).astype(np.float32)),
        rows=save_npy(Path(args.out).with_name(stem + ".rows.npy"), rows.reshape(-1).astype(np.int64)),
    )
    return 0
