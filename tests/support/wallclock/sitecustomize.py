"""Test-only: with MS_WORKBENCH_TEST_WALL_JUMP_S=<s> (and _AFTER_S=<s>) set, this process's wall clock jumps.

Put this folder on PYTHONPATH of a process (and its children inherit it): `time.time()` then reads
the true time for the first _AFTER_S seconds of the process's life, and the true time plus JUMP_S
after, as when an administrator or NTP steps the clock. The monotonic clock is left alone.
"""

import os
import time

_jump = float(os.environ.get("MS_WORKBENCH_TEST_WALL_JUMP_S") or 0)
if _jump:
    _after = float(os.environ.get("MS_WORKBENCH_TEST_WALL_JUMP_AFTER_S") or 0)
    _true_time, _born = time.time, time.monotonic()

    def _stepped_time() -> float:
        return _true_time() + (_jump if time.monotonic() - _born >= _after else 0.0)

    time.time = _stepped_time
