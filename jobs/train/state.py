"""What the `train` job's epoch loop changes as it runs, in one object the loop, the resume state and the result share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np


def no_best() -> Dict[str, Any]:
    """The best epoch before any epoch was validated."""
    return {"epoch": None, "macro_f1": None, "accuracy": None}


@dataclass
class RunState:
    """Where the run is (epoch, step, global step), this epoch's step losses so far, the best epoch, the artifacts."""

    rng: np.random.Generator  # draws each epoch's sample order
    epoch: int = 1  # the epoch running, or the next one to run
    step_in_epoch: int = 0  # steps of `epoch` already done (not 0 only when resuming mid-epoch)
    global_step: int = 0
    losses: List[float] = field(default_factory=list)  # this epoch's step losses so far
    sizes: List[int] = field(default_factory=list)  # and their batch sizes
    rng_epoch_start: Any = None  # the generator's state when this epoch's order was drawn
    best: Dict[str, Any] = field(default_factory=no_best)
    losses_seen: int = 0  # finite step losses this process fetched
    resumed_from: Optional[Dict[str, Any]] = None
    artifacts: Dict[str, str] = field(default_factory=dict)  # role -> path relative to the job folder
    first_result_s: Optional[float] = None  # job start -> this job's first validated epoch
