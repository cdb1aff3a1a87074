"""The interpreter the job tests' jobs run under, and what its MindSpore offers (asked once, in a subprocess).

`make test-compat` sets MS_WORKBENCH_PYTHON to an older MindSpore's venv: the test process keeps
its own MindSpore (2.10) and every job runs under that interpreter, so a test that checks a
version-dependent path asks this module which path the job's MindSpore takes.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import Any, Dict

JOB_PYTHON = os.environ.get("MS_WORKBENCH_PYTHON") or sys.executable
COMPAT = JOB_PYTHON != sys.executable

PROBE = """
import json, mindspore as ms
from importlib import metadata
def dist(*names):
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
try:
    import mindspore.profiler as prof
except ImportError:
    prof = None
names = ("profile", "schedule", "tensorboard_trace_handler", "ProfilerActivity")
print(json.dumps({"version": ms.__version__, "dist_version": dist("mindspore", "mindspore-dev"),
                  "set_device": hasattr(ms, "set_device"),
                  "get_current_device": hasattr(ms, "get_current_device"),
                  "profile_api": "mindspore.profiler.profile" if prof is not None and all(hasattr(prof, n) for n in names)
                  else ("mindspore.Profiler" if hasattr(ms, "Profiler") else None)}))
"""


@functools.cache
def job_mindspore() -> Dict[str, Any]:
    """{version, dist_version, set_device, get_current_device, profile_api} of the job interpreter's MindSpore."""
    out = subprocess.run([JOB_PYTHON, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def expected_set_with() -> str:
    """How msdevice.set_device selects the device under the job interpreter (the start of its `api`)."""
    return "mindspore.set_device(" if job_mindspore()["set_device"] else "mindspore.set_context(device_target="


def expected_read_back() -> str:
    """Where msdevice.effective_device reads the device back from under the job interpreter."""
    return (
        "mindspore.get_current_device()"
        if job_mindspore()["get_current_device"]
        else "mindspore.get_context('device_target'/'device_id')"
    )
