"""One device probe in its own process: select the device, run one op, fetch it back, compare.

    python -m jobs.probe --target CPU --id 0 --op matmul-fp16 --out probe.json

A printed shape proves nothing (the course's board "passed" fp32 matmul 2/2 times on shape
alone and failed 2/2 once the values were fetched), so the result is always fetched with
`.asnumpy()` and compared with numpy. The verdict goes to --out as JSON:
{status, max_abs_diff, shape, dtype, device, elapsed_s, error, ...}; the exit code is 0 once
that file is written, whatever the verdict.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from typing import Any, Dict, Optional

from jobs.common.msdevice import cut_cpp_stack
from workbench.events.protocol import Evidence
from workbench.system.atomic import write_json

# op -> (MindSpore dtype name, numpy dtype name, atol, rtol). Tolerances cover the rounding of
# the dtype over a 64-term dot product of N(0, 1) values; a wrong kernel misses them by far.
OPS = {
    "add-fp32": ("float32", "float32", 1e-5, 1e-6),
    "matmul-fp16": ("float16", "float16", 2e-2, 1e-2),
    "matmul-fp32": ("float32", "float32", 1e-4, 1e-5),
}
SIZE = 64
SEED = 20240607


def _hint(text: str) -> Optional[str]:
    """The known-error table's cause and next check for an error text."""
    try:
        from jobs.common.msdevice import explain_error

        return explain_error(text)
    except Exception:  # a hint is a help, never a reason to lose the error itself
        return None


def _error(stage: str, exc: BaseException) -> Dict[str, Any]:
    text = cut_cpp_stack("%s: %s" % (type(exc).__name__, exc))
    return {"stage": stage, "type": type(exc).__name__, "message": text[:4000], "hint": _hint(text)}


def run_probe(target: str, device_id: int, op: str) -> Dict[str, Any]:
    """Run one probe in this process and return its verdict (never raises for device errors)."""
    t0 = time.monotonic()
    ms_dtype, np_dtype, atol, rtol = OPS[op]
    out: Dict[str, Any] = {
        "op": op,
        "target": target,
        "id": device_id,
        "status": Evidence.FAIL,
        "stage": "import",
        "max_abs_diff": None,
        "atol": atol,
        "rtol": rtol,
        "shape": None,
        "dtype": None,
        "device": None,
        "elapsed_s": None,
        "error": None,
        "mindspore": None,
        "numpy": None,
        "timings_s": {},
    }
    try:
        import mindspore as ms
        import numpy as np
        from mindspore import Tensor, ops

        out["numpy"] = np.__version__
        out["mindspore"] = {"version": getattr(ms, "__version__", None), "file": getattr(ms, "__file__", None)}
        out["timings_s"]["import"] = round(time.monotonic() - t0, 3)

        out["stage"] = "set-device"
        from jobs.common import msdevice
        from workbench.jobkit.context import JobFailed

        t1 = time.monotonic()
        try:
            how = msdevice.set_device(target, device_id, "pynative")
        except JobFailed as exc:  # MindSpore's own message, with the known-error hint
            out["error"] = {"stage": "set-device", "type": exc.type_, "message": str(exc), "hint": exc.hint}
            return out
        out["set_device"] = how
        out["device"] = msdevice.effective_device()
        out["timings_s"]["set_device"] = round(time.monotonic() - t1, 3)

        out["stage"] = "op"
        rng = np.random.default_rng(SEED)
        a = rng.standard_normal((SIZE, SIZE)).astype(np_dtype)
        b = rng.standard_normal((SIZE, SIZE)).astype(np_dtype)
        t2 = time.monotonic()
        ta, tb = Tensor(a, getattr(ms, ms_dtype)), Tensor(b, getattr(ms, ms_dtype))
        result = ops.add(ta, tb) if op.startswith("add") else ops.matmul(ta, tb)
        out["stage"] = "fetch"
        got = result.asnumpy()  # the sync: only a fetched value is evidence
        out["timings_s"]["op_and_fetch"] = round(time.monotonic() - t2, 4)

        out["stage"] = "compare"
        ref = (
            (a.astype(np.float64) + b.astype(np.float64))
            if op.startswith("add")
            else a.astype(np.float64) @ b.astype(np.float64)
        )
        out["shape"] = list(got.shape)
        out["dtype"] = str(result.dtype)
        out["numpy_dtype"] = str(got.dtype)
        if got.shape != ref.shape:
            out["error"] = {
                "stage": "compare",
                "type": "ShapeMismatch",
                "hint": None,
                "message": "result shape %s, numpy says %s" % (list(got.shape), list(ref.shape)),
            }
            return out
        diff = np.abs(got.astype(np.float64) - ref)
        finite = bool(np.all(np.isfinite(got)))
        out["max_abs_diff"] = float(np.max(diff)) if finite else None
        worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
        out["worst"] = {"index": [int(i) for i in worst], "got": float(got[worst]), "ref": float(ref[worst])}
        out["sample"] = {"got": got[:2, :2].astype(np.float64).tolist(), "ref": ref[:2, :2].tolist()}
        within = finite and bool(np.all(diff <= atol + rtol * np.abs(ref)))
        if within:
            out["status"] = Evidence.PASS
        else:
            out["error"] = {
                "stage": "compare",
                "type": "ValueMismatch",
                "hint": None,
                "message": "fetched values differ from numpy beyond atol %g + rtol %g·|ref|: "
                "max abs diff %s%s" % (atol, rtol, out["max_abs_diff"], "" if finite else " (non-finite values)"),
            }
        out["stage"] = "done"
        return out
    except Exception as exc:  # MindSpore raises RuntimeError/ValueError/TypeError/SystemError here
        out["error"] = _error(out["stage"], exc)
        traceback.print_exc()
        return out
    finally:
        out["elapsed_s"] = round(time.monotonic() - t0, 3)


def main(argv=None) -> int:
    """Parse the arguments, run the probe, write its JSON; 0 once written."""
    parser = argparse.ArgumentParser(prog="python -m jobs.probe")
    parser.add_argument("--target", required=True)
    parser.add_argument("--id", type=int, default=0)
    parser.add_argument("--op", required=True, choices=sorted(OPS))
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    verdict = run_probe(args.target, args.id, args.op)
    write_json(args.out, verdict)
    print(
        "probe %s on %s:%d: %s (max abs diff %s)"
        % (args.op, args.target, args.id, verdict["status"], verdict["max_abs_diff"])
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
