"""The last finite state: an epoch-start copy of the step cell's parameters, and on a non-finite step the case that broke.

Copying every parameter before every step would cost each step; a copy at the start of each epoch
costs once, and on failure the epoch's steps are re-run in this process from it (the same compiled
cell on the same batches is bit-for-bit deterministic) until the first step whose loss, or whose
updated parameters, are non-finite. The parameters before that step and its batch are the failing
case (jobs/common/failcase.py); a fresh PyNative process then replays it (jobs/numerics/replay.py).
"""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any, Dict, List, Optional

import numpy as np

from jobs.common import datafeed, stepcell
from jobs.common import failcase as cases
from workbench.analysis import overflow
from workbench.system.atomic import read_json

REPLAY_TIMEOUT_S = 900.0


def _params(cell: Any) -> List[Any]:
    return list(cell.get_parameters())


def _copy(cell: Any) -> List[np.ndarray]:
    return [p.asnumpy().copy() for p in _params(cell)]


def _restore(cell: Any, arrays: List[np.ndarray]) -> None:
    from mindspore import Tensor

    for param, arr in zip(_params(cell), arrays):
        param.set_data(Tensor(arr))


class LastFinite:
    """Holds the epoch-start copy and the losses since; `locate` finds and saves the failing case."""

    def __init__(self, run: Any):
        self.run = run
        self.enabled = run.par is None  # data-parallel ranks: not localised (said in the check)
        self.start: Optional[Dict[str, Any]] = None
        self.arrays: List[np.ndarray] = []
        self.losses: List[float] = []

    def snapshot(self, epoch: int, first_step: int, global_step: int, order: np.ndarray) -> None:
        """Copy the parameters (network + optimizer) before step `first_step` of `epoch`."""
        if not self.enabled:
            return
        self.arrays = _copy(self.run.train_step)
        self.start = {"epoch": epoch, "first_step": first_step, "global_step": global_step, "order": order}
        self.losses = []

    def note(self, loss: float) -> None:
        """The loss of a step run since the snapshot."""
        if self.enabled:
            self.losses.append(loss)

    def locate(self, fail_step: int) -> Dict[str, Any]:
        """Re-run from the snapshot to the first step that breaks (at most `fail_step`); save its case.

        Returns {found, at, trigger, replayed, losses_identical, case} (found False: no step broke again).
        """
        run, start = self.run, self.start
        assert start is not None
        _restore(run.train_step, self.arrays)
        t = run.cfg.train
        feed = datafeed.NumpyFeed(run.data.train_x, run.data.train_y, t.batch_size)
        from mindspore import Tensor

        before = self.arrays
        identical = True
        for i, (xb, yb) in enumerate(feed.numpy_batches(start["order"], start["first_step"], fail_step + 1)):
            loss = float(stepcell.loss_of(run.train_step(Tensor(xb), Tensor(yb))).asnumpy())
            if i < len(self.losses) and not (
                loss == self.losses[i] or (math.isnan(loss) and math.isnan(self.losses[i]))
            ):
                identical = False
            after = _copy(run.train_step)
            trigger = None
            if not math.isfinite(loss):
                trigger = "loss"
            elif not all(np.isfinite(a).all() for a in after if a.dtype.kind == "f"):
                trigger = "update"
            if trigger is not None:
                step = start["first_step"] + i
                at = {"epoch": start["epoch"], "step": step + 1, "global_step": start["global_step"] + i + 1}
                _restore(run.train_step, before)
                folder = run.ctx.artifacts / cases.CASE_DIR
                meta = cases.save_case(
                    folder, run.train_step, xb, yb, {"at": at, "trigger": trigger, "loss": _json_float(loss)}
                )
                run.ctx.artifact(meta, "numerics-case", **at)
                return {
                    "found": True,
                    "at": at,
                    "trigger": trigger,
                    "replayed": i + 1,
                    "losses_identical": identical,
                    "case": folder,
                }
            before = after
        return {"found": False, "replayed": fail_step + 1 - start["first_step"], "losses_identical": identical}


def _json_float(value: float) -> Any:
    return value if math.isfinite(value) else str(value)


def replay_in_fresh_process(ctx: Any, case_dir: Any) -> Dict[str, Any]:
    """Run jobs.numerics.replay on the case in a new interpreter; its finding, or {"error": why}."""
    out = case_dir / "finding.json"
    argv = [sys.executable, "-m", "jobs.numerics.replay", "--job-dir", str(ctx.dir), "--case", str(case_dir)]
    argv += ["--out", str(out)]
    try:
        proc = subprocess.run(
            argv, cwd=str(ctx.dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=REPLAY_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return {"error": "the replay process did not finish in %.0f s" % REPLAY_TIMEOUT_S}
    if not out.is_file():
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        return {"error": "the replay process exited %d without a finding: %s" % (proc.returncode, " | ".join(tail))}
    found = read_json(out)
    if "error" not in found:
        ctx.artifact(out, "numerics-finding")
    return found


def emit_check(ctx: Any, finding: Dict[str, Any], run_device: Dict[str, Any], located: Dict[str, Any]) -> str:
    """The `overflow-origin` check from a replay's finding; returns its detail sentence."""
    evidence = overflow.origin_evidence(finding, run_device)
    evidence["in_process"] = {k: located.get(k) for k in ("replayed", "losses_identical", "trigger")}
    status, detail, hint = overflow.origin_verdict(finding, run_device)
    ctx.check("overflow-origin", "first non-finite value", status, detail, evidence=evidence, hint=hint)
    return detail
