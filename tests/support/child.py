"""Running a measurement in a fresh Python process (memory peaks are per process) and reading its JSON answer."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Dict

from tests.support.cli import PROJECT_ROOT

# The child's own peak RSS in MB: VmHWM starts afresh at exec, while resource's ru_maxrss carries the forking
# parent's peak across exec (a pytest process that ran a thousand tests first would be measured).
PEAK_MB = """
import resource
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
peak_mb = hwm_kb / 1024.0 if hwm_kb else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
"""


def json_from_child(code: str, *args: str, timeout_s: float = 900) -> Dict[str, Any]:
    """Run `code` with `args` in a fresh interpreter at the project root; the JSON object it printed last."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=str(PROJECT_ROOT),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
