"""What every loader process shares: its report file, error text, .npy output and batch rows.

The report is rewritten atomically after every step, so a loader that crashes leaves the steps
it finished; it never writes events (the export job owns events.jsonl).
"""

from __future__ import annotations

import io
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from workbench.system.atomic import write_bytes, write_json

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


def npy_bytes(array: np.ndarray) -> bytes:
    """An array as .npy file bytes (no pickle)."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def save_npy(path: Path, array: np.ndarray) -> str:
    """Write an .npy atomically; return the file name."""
    write_bytes(path, npy_bytes(array))
    return path.name


class Report:
    """The loader's report file: who ran, what each step did, rewritten after each step."""

    def __init__(self, path: Path, what: str):
        self.path = Path(path)
        self.data: Dict[str, Any] = {
            "format": REPORT_FORMAT,
            "what": what,
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "python": sys.executable,
            "python_version": "%d.%d.%d" % sys.version_info[:3],
            "started_at": time.time(),
            "steps": [],
            "done": False,
            "error": None,
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


def set_device(report: Report, target: str, device_id: int, mode: str) -> Optional[Any]:
    """Select the device first (never a fallback); the report says how, or why not. Returns mindspore or None."""
    import mindspore as ms

    from jobs.common import msdevice
    from workbench.jobkit.context import JobFailed

    report.set(mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)})
    try:
        how = msdevice.set_device(target, device_id, mode)
    except JobFailed as exc:
        report.fail(str(exc), "DeviceError", hint=exc.hint)
        return None
    report.set(
        device={
            "target": target,
            "device_id": device_id,
            "mode": mode,
            "set_with": how,
            "effective": msdevice.effective_device(),
        }
    )
    return ms
