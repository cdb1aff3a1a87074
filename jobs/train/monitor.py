"""The training-state monitor in the train job: every N-th step is sampled, its rows go out as `monitor` events.

A sampled step is a training step like the others that also yields the gradients it applied: with
Adam (no loss scale, no weight decay: stepcell.first_moment) the plain step itself runs and the
gradients are read back from the optimizer's first moment before and after it; otherwise a
monitored cell (jobs/common/stepcell.py), sharing the network, the optimizer and a dynamic loss
scale with the plain one, hands them back (unscaled), at the cost of a second compiled graph that
MindSpore switches to and back (about 0.2 ms each way, measured). No second forward or backward pass
either way. The weights (and the moment) are copied before the step into buffers kept for the run
(each half a page from its parameter: spaced_like), read after it, and everything is reduced to
norms on the host (float32 dot products): reductions inside the CPU graph cost more than the step
itself (about 10 ms against 5 ms, measured). A step the loss scale skipped is marked and never
judged. Between two steps only numbers are taken (Batch): the five-digit rounding, the rows and the
folding of the flags wait for the flush, about every second, where Python runs them warm for a batch
at once (right after a step each cost about four times as much, and a gap over about 0.25 ms lets
MindSpore's threads fall asleep, which the next step pays: measured). In a data-parallel run every
rank samples the same steps (the same averaged gradients) and rank 0 reports.
"""

from __future__ import annotations

import math
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jobs.common import stepcell
from workbench.analysis import trainstate
from workbench.events.protocol import Evidence

FLUSH_EVERY_S = 1.0
FLUSH_SAMPLES = 50
PAGE = 4096  # a load is matched against earlier stores by its address modulo this (4K aliasing)


def rows_from(
    before: List[np.ndarray], after: List[np.ndarray], grads: List[np.ndarray], grad_scale: float = 1.0
) -> Dict[str, Any]:
    """Per parameter: weight norm (after the step), gradient norm, update ratio |after - before|/|after|, non-finite share.

    The values are the float32 arithmetic's, unrounded (Batch rounds them to five digits). The gradients
    are `grads` times `grad_scale` (a positive number: the monitor's moment differences are passed
    unscaled). A float32 array of `before` is overwritten with the update (the monitor's own buffers: no
    allocation).
    """
    flat = [[_flat32(v) for v in arrays] for arrays in (before, after, grads)]
    return _rows_flat(flat[0], flat[1], flat[2], grad_scale)


def _rows_flat(
    before: List[np.ndarray], after: List[np.ndarray], grads: List[np.ndarray], grad_scale: float
) -> Dict[str, Any]:
    """rows_from of flat float32 arrays (what Held keeps: no conversion, no reshape per sample)."""
    w, g, ratio, share = [], [], [], []
    dot, sqrt, isfinite, subtract = np.dot, math.sqrt, math.isfinite, np.subtract
    for b32, a32, g32 in zip(before, after, grads):
        # np.dot is BLAS's sdot, no squared temporary
        d32 = subtract(a32, b32, out=b32) if b32.flags.writeable else a32 - b32
        wn, dn = sqrt(float(dot(a32, a32))), sqrt(float(dot(d32, d32)))
        gsq = float(dot(g32, g32))
        if not isfinite(gsq):  # past float32's range, or a NaN/Inf under it: again in float64
            g64 = g32.astype(np.float64)
            gsq = float(dot(g64, g64))
        finite = isfinite(gsq)
        # a finite sum of squares has no NaN or Inf under it: count them only when it is not finite
        bad = 0 if finite else int(g32.size - int(np.isfinite(g32).sum()))
        w.append(wn)
        g.append(sqrt(gsq) * grad_scale if finite else float("inf"))
        ratio.append(dn / wn if wn > 0 else (float("inf") if dn > 0 else 0.0))
        share.append(bad / float(g32.size) if g32.size else 0.0)
    return {"weight_norm": w, "grad_norm": g, "update_ratio": ratio, "nonfinite": share}


def _flat32(v: Any) -> np.ndarray:
    """`v` as a flat float32 array: a view when it already is float32 (no conversion call), else a converted copy."""
    if isinstance(v, np.ndarray) and v.dtype == np.float32:
        return v.reshape(-1)
    return np.asarray(v, dtype=np.float32).reshape(-1)


def spaced_like(shape: Any, source: int) -> np.ndarray:
    """An empty float32 array of `shape` whose address lies half a page past `source` modulo PAGE.

    A copy whose destination lies a few bytes past its source modulo 4096 runs about 15 times slower
    (each load waits on the store before it: 4K aliasing); the buffers numpy allocated lay 16 bytes past
    MindSpore's parameters every time (the 784x128 weight's copy 0.23 ms against 0.017 ms, measured).
    """
    size = int(np.prod(shape)) if len(shape) else 1
    raw = np.empty(size + PAGE // 4, dtype=np.float32)
    shift = ((source + PAGE // 2 - raw.ctypes.data) % PAGE) // 4
    return raw[shift : shift + size].reshape(shape)


def _short(values: List[float]) -> List[float]:
    """Five significant digits (the event stays small; a flag rule never hinges on the sixth): float("%.5g" % v)."""
    return list(map(float, (("%.5g " * len(values)) % tuple(values)).split()))


class Held:
    """Parameters read as numpy arrays, and a buffer per parameter that keeps (a multiple of) each value before a step.

    On CPU `asnumpy` gives a view of the parameter's own memory, which the step updates in place; such a
    view is kept while the parameter's address (`data_ptr`, about a tenth of `asnumpy`'s cost) is
    unchanged, and taken again when it moved (a resume's load), with a new buffer spaced from it
    (spaced_like); a copy, or a Tensor without `data_ptr`, is read again each time. `flat_now` and
    `flat_before` are the same arrays as flat views (what the rows are computed from). The buffers are
    made at the first read and kept for the run, none made before and dropped: freeing a block this
    large raises glibc's mmap threshold in the monitored process alone, which changes where every later
    allocation of the job goes (with the threshold pinned in both jobs, the monitored job's other steps
    no longer ran slower than the unmonitored job's: docs/PERFORMANCE.md).
    """

    def __init__(self, params: List[Any]):
        self.params = list(params)
        none = np.empty(0, dtype=np.float32)  # no buffer yet: now() makes each one (reused: no allocation per sample)
        self.before = [none] * len(self.params)
        self.views: List[Any] = [None] * len(self.params)  # each parameter's asnumpy view, with its address
        self.flat_before = [none] * len(self.params)
        self._ptrs: Optional[List[int]] = None  # every parameter's address, when every view is kept
        self._now: List[Any] = []
        self._flat_now: List[np.ndarray] = []

    def keep(self, factor: float = 1.0) -> None:
        """Copy each value (times `factor`) into its buffer."""
        views = self.now()
        if factor == 1.0:
            for buf, view in zip(self.before, views):
                np.copyto(buf, view)
        else:
            scale = np.float32(factor)
            for buf, view in zip(self.before, views):
                np.multiply(view, scale, out=buf)

    def flat_now(self) -> List[np.ndarray]:
        """now(), each a flat float32 array."""
        views = self.now()
        if len(self._flat_now) != len(views):  # emptied whenever now() read the parameters again
            self._flat_now = [_flat32(v) for v in views]
        return self._flat_now

    def now(self) -> List[Any]:
        """The parameters' values, read after the last step's output was (the loop reads its loss)."""
        if self._ptrs is not None and [p.data_ptr() for p in self.params] == self._ptrs:
            return self._now  # no parameter moved: the kept views (one address check each)
        out = []
        for i, p in enumerate(self.params):
            kept = self.views[i]
            ptr = p.data_ptr() if hasattr(p, "data_ptr") else None
            if kept is not None and kept[0] == ptr:
                out.append(kept[1])
                continue
            view = p.asnumpy()
            # only a view of the parameter's own memory stays right after the next step
            self.views[i] = (ptr, view) if ptr is not None and view.ctypes.data == ptr else None
            if self.views[i] is not None:
                self.before[i] = spaced_like(p.shape, view.ctypes.data)  # its copy's buffer, half a page away
            elif self.before[i].shape != tuple(p.shape):
                self.before[i] = np.empty(p.shape, dtype=np.float32)
            self.flat_before[i] = self.before[i].reshape(-1)
            out.append(view)
        kept_all = all(v is not None for v in self.views)
        self._ptrs = [v[0] for v in self.views] if kept_all else None
        self._now, self._flat_now = out, []
        return out


class Batch:
    """The samples taken since the last flush, as fetched (unrounded), turned into one event's fields at the flush.

    Between two steps only a tuple is appended; `take` rounds every value to five significant digits
    in one go (the event stays small; a flag rule never hinges on the sixth), folds each sample into
    the run's TrainState in step order (so a flag carries the step where its rule first held, whenever
    the batch is taken) and returns the columns of a `monitor` event.
    """

    def __init__(self) -> None:
        self.samples: List[Tuple[int, int, Dict[str, Any]]] = []  # (global_step, epoch, rows)

    def __len__(self) -> int:
        return len(self.samples)

    def add(self, global_step: int, epoch: int, rows: Dict[str, Any]) -> None:
        """Keep one sample's rows (the lists fetch made) until the flush."""
        self.samples.append((global_step, epoch, rows))

    def take(self, names: List[str], state: trainstate.TrainState) -> Dict[str, List[Any]]:
        """The batch as event columns (five digits), each sample folded into `state`; the batch is emptied."""
        samples, self.samples = self.samples, []
        n = len(names)
        fields = trainstate.FIELDS
        flat = _short([v for _, _, rows in samples for field in fields for v in rows[field]])
        out: Dict[str, List[Any]] = {"global_step": [], "epoch": [], "skipped": [], **{f: [] for f in fields}}
        width = n * len(fields)
        for i, (global_step, epoch, rows) in enumerate(samples):
            values = flat[i * width : (i + 1) * width]
            skipped = bool(rows.get("skipped"))
            out["global_step"].append(global_step)
            out["epoch"].append(epoch)
            out["skipped"].append(skipped)
            per_field = [values[j * n : (j + 1) * n] for j in range(len(fields))]
            for field, row in zip(fields, per_field):
                out[field].append(row)
            by_param = zip(names, zip(*per_field))  # each parameter's values, in FIELDS order
            rows_now = {name: dict(zip(fields, row)) for name, row in by_param}
            state.add({"global_step": global_step, "epoch": epoch, "rows": rows_now, "skipped": skipped})
        return out


class Monitor:
    """Decides which steps are sampled, runs them, batches their rows, folds the flags for the end-of-run check."""

    def __init__(self, run: Any, every: int, reports: bool = True, from_moment: Optional[bool] = None):
        self.run, self.every = run, int(every)
        self.reports = reports  # False on data-parallel ranks other than 0: they sample (same steps), rank 0 tells
        moment = stepcell.first_moment(run.train_step, run.opt) if from_moment is not False else None
        if from_moment and moment is None:
            raise ValueError("the gradients cannot be read from this optimizer's first moment")
        self.moment = Held(moment[0]) if moment is not None else None
        self.beta1 = moment[1] if moment is not None else 0.0
        if self.moment is None:
            self.cell = stepcell.monitored_step(run.train_step, run.loss_cell, run.opt)
            self.cell.set_train(True)
        else:
            self.cell = run.train_step  # the plain step: no second graph
        self.names = stepcell.param_names(run.opt)
        self.sizes = stepcell.param_sizes(run.opt)
        self.state = trainstate.TrainState()
        self.batch = Batch()
        self.flushed_at = time.monotonic()
        self.weights = Held(list(run.opt.parameters))
        self.grads: Any = None
        self.overflow: Any = None

    @property
    def gradients_from(self) -> str:
        """How a sampled step's gradients are read (said in the check's evidence)."""
        if self.moment is not None:
            return "Adam's first moment before and after the plain step: (m_t - beta1 m_(t-1)) / (1 - beta1)"
        return "the monitored step cell, which returns the gradients it applied"

    def precompile(self, x: Any, y: Any) -> None:
        """Compile the monitored graph before the first step (Cell.compile where it exists), so no step pays it."""
        if self.moment is None and hasattr(self.cell, "compile"):
            self.cell.compile(x, y)

    def due(self, global_step: int) -> bool:
        """True when global step `global_step` (1-based) is sampled."""
        return global_step % self.every == 0

    def step(self, x: Any, y: Any) -> Any:
        """Copy the weights (and beta1 x the moment), run one sampled step; what the plain cell returns."""
        self.weights.keep()
        if self.moment is not None:
            self.moment.keep(self.beta1)
            return self.cell(x, y)
        out = self.cell(x, y)
        self.grads = out[-1]
        self.overflow = out[1] if len(out) == 4 else None  # a loss-scaled cell: (loss, overflow, scale, grads)
        return out[0] if len(out) == 2 else out[:3]

    def fetch(self) -> Dict[str, Any]:
        """The sampled step's rows from the weights before and after it and its gradients; `skipped` too."""
        weights = self.weights
        if self.moment is not None:
            # m_t - beta1 m_(t-1), in the buffer that held beta1 m_(t-1); the 1 / (1 - beta1) goes into the norm
            held = self.moment
            grads = [np.subtract(m, kept, out=kept) for m, kept in zip(held.flat_now(), held.flat_before)]
            rows = _rows_flat(weights.flat_before, weights.flat_now(), grads, 1.0 / (1.0 - self.beta1))
        else:
            grads = [_flat32(g.asnumpy()) for g in self.grads]
            rows = _rows_flat(weights.flat_before, weights.flat_now(), grads, 1.0)
        rows["skipped"] = self.overflow is not None and bool(self.overflow.asnumpy())
        return rows

    def record(self, pipe: Any, rows: Dict[str, Any], epoch: int, global_step: int) -> None:
        """Keep one sample (its flags are folded at the flush); flush when the batch is old or large enough."""
        self.batch.add(global_step, epoch, rows)
        if len(self.batch) >= FLUSH_SAMPLES or time.monotonic() - self.flushed_at >= FLUSH_EVERY_S:
            self.flush(pipe)

    def flush(self, pipe: Any) -> None:
        """Fold the batched samples' flags and queue them as one `monitor` event (only where this rank reports)."""
        if not len(self.batch):
            return
        fields = self.batch.take(self.names, self.state)
        if not any(fields["skipped"]):
            del fields["skipped"]  # a run without a loss scale writes the same events as before
        if self.reports:
            pipe.put("monitor", names=self.names, every=self.every, **fields)
        self.flushed_at = time.monotonic()

    def check(self, ctx: Any) -> None:
        """The `train-state` check: the flags raised over the run, each with its rule, or none in N samples.

        The loop flushes before (every epoch's end): a sample still in the batch would be judged by no rule.
        """
        if len(self.batch):
            raise RuntimeError("%d monitor samples were never flushed" % len(self.batch))
        st = self.state
        evidence = {
            "samples": st.count,
            "skipped": st.skipped,
            "every": self.every,
            "flags": st.flags,
            "flag_samples": st.flag_counts,
            "rules": trainstate.RULES,
            "ratio_rule": trainstate.RATIO_RULE,
            "params": self.names,
            "gradients_from": self.gradients_from,
        }
        if not st.count:
            ctx.check("train-state", "training state", Evidence.NOT_RUN, "no step was sampled", evidence=evidence)
            return
        if st.count == st.skipped:
            detail = "all %d sampled steps were skipped by the loss scale (overflow): none judged" % st.count
            ctx.check("train-state", "training state", Evidence.NOT_RUN, detail, evidence=evidence)
            return
        if not st.flags:
            detail = "no flag in %d samples (every %d steps) of %d parameters" % (st.count, self.every, len(self.names))
            if st.skipped:
                detail += "; %d sampled steps skipped by the loss scale (overflow) not judged" % st.skipped
            ctx.check("train-state", "training state", Evidence.PASS, detail, evidence=evidence)
            return
        first = sorted(st.flags, key=lambda f: f["global_step"])[:3]
        detail = "; ".join(trainstate.describe(f) for f in first)
        more = len(st.flags) - len(first)
        ctx.check(
            "train-state",
            "training state",
            Evidence.FAIL,
            detail + ("; %d more" % more if more > 0 else ""),
            evidence=evidence,
            hint="see the Training screen's layer table; lower train.lr for exploding gradients",
        )


def nonfinite_grads(rows: Dict[str, Any]) -> bool:
    """True when any parameter's gradient held a NaN or Inf on a step that was not skipped by a loss scale."""
    return not rows.get("skipped") and any(
        (v is not None and (not math.isfinite(v) or v > 0)) for v in rows["nonfinite"]
    )
