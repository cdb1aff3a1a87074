"""Data parallelism inside one rank of the `train` job: which rank, which samples, and did all ranks end equal.

A rank is a `python -m jobs.train` process started by msrun (through jobs/train/msrun_rank.py) with
MS_ROLE=MS_WORKER, RANK_ID and DEVICE_ID. MindSpore averages the gradients over the ranks
(DATA_PARALLEL, gradients_mean=True), so ranks that start from the same seed and see
equal parts of one global batch end every step with the same weights; the check at the
end hashes each rank's parameters and compares them.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, JobFailed
from workbench.system.atomic import write_text

HASH_RULE = "SHA-256 over the network parameters sorted by name (name, dtype, shape, bytes of .asnumpy())"


def rank_env(cfg: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, Any]]:
    """{rank, size, local_rank, node_rank} from msrun's environment, or None for a single-process run."""
    par = cfg["train"]["parallel"]
    if par["workers"] <= 1:
        return None
    env = os.environ if env is None else env
    if env.get("MS_ROLE") != "MS_WORKER" or "RANK_ID" not in env:
        raise JobFailed(
            "train.parallel.workers is %d but this process was not started by msrun as a worker "
            "(MS_ROLE=%r, RANK_ID=%r)" % (par["workers"], env.get("MS_ROLE"), env.get("RANK_ID")),
            hint="start it with `ms-workbench run train`, which runs msrun",
            type_="ParallelError",
        )
    return {
        "rank": int(env["RANK_ID"]),
        "size": par["workers"],
        "local_rank": int(env.get("DEVICE_ID", "0")),
        "node_rank": par["node_rank"],
    }


def tag_events(ctx: JobContext, info: Optional[Dict[str, Any]]) -> None:
    """Every event this process writes from now on carries its rank (seq counts per rank)."""
    if info is not None:
        ctx.events.extra["rank"] = info["rank"]


def parallel_mode_constant(ms) -> Any:
    """ParallelMode.DATA_PARALLEL wherever this MindSpore keeps it."""
    holder = getattr(ms, "ParallelMode", None)
    if holder is None:
        from mindspore import context  # older releases keep it in mindspore.context

        holder = context.ParallelMode
    return holder.DATA_PARALLEL


def init_collective(ms, info: Dict[str, Any]) -> Dict[str, Any]:
    """Join the cluster (after the device is set) and switch to data parallelism; check rank and size."""
    from mindspore.communication import get_group_size, get_rank, init

    init()
    rank, size = int(get_rank()), int(get_group_size())
    if rank != info["rank"] or size != info["size"]:
        raise JobFailed(
            "MindSpore reports rank %d of %d, but msrun started this process as rank %d of %d "
            "(train.parallel.workers)" % (rank, size, info["rank"], info["size"]),
            hint="all nodes must run the same train.parallel.workers and local_workers",
            type_="ParallelError",
        )
    ms.set_auto_parallel_context(parallel_mode=parallel_mode_constant(ms), gradients_mean=True)
    return {
        "api": "mindspore.communication.init(); set_auto_parallel_context(parallel_mode=DATA_PARALLEL, "
        "gradients_mean=True)",
        "rank": rank,
        "size": size,
    }


def usable_samples(n: int, size: int) -> int:
    """Samples of an n-sample split one epoch uses: a multiple of `size`, so every rank gets as many."""
    usable = int(n) - int(n) % int(size)
    if usable < int(size):
        raise ValueError("%d training samples cannot give each of %d ranks one sample" % (n, size))
    return usable


def rank_order(order: np.ndarray, batch_size: int, rank: int, size: int) -> np.ndarray:
    """This rank's part of the epoch's global order: its equal share of every global batch.

    Every rank draws the same permutation of the whole split (the run's generator, train.seed),
    the one a single process would draw. Global batch k is positions [k*B*size, (k+1)*B*size)
    of it; rank r takes the r-th of `size` equal parts, so the ranks together see exactly the
    batch one process with batch B*size sees, and with gradients averaged they take its step.
    The tail batch is split the same way (the order is first cut to a multiple of `size`, which
    leaves out the last n % size positions of this epoch's permutation).
    """
    if not 0 <= rank < size:
        raise ValueError("rank %d is outside 0..%d" % (rank, size - 1))
    order = np.asarray(order)[: usable_samples(len(order), size)]
    per_step = int(batch_size) * int(size)
    full = (len(order) // per_step) * per_step
    head = order[:full].reshape(-1, int(size), int(batch_size))[:, rank, :].reshape(-1)
    tail = order[full:]
    part = len(tail) // int(size)
    return np.concatenate([head, tail[rank * part : (rank + 1) * part]])


def shard(ctx: JobContext, n: int, info: Dict[str, Any], batch_size: int) -> Dict[str, Any]:
    """Check the split can feed every rank; describe (and log) how the ranks share each global batch."""
    try:
        usable = usable_samples(n, info["size"])
    except ValueError as exc:
        raise JobFailed(
            "train split: %s" % exc,
            hint="lower train.parallel.workers or raise train.train_limit",
            type_="ParallelError",
        )
    per_rank, dropped, per_step = usable // info["size"], n - usable, batch_size * info["size"]
    out = {
        "rule": "every epoch all ranks draw the same permutation of the whole training split from train.seed; "
        "global batch k is its next %d positions and rank r takes the r-th of %d equal parts of it"
        % (per_step, info["size"]),
        "split_samples": n,
        "per_rank": per_rank,
        "dropped": dropped,
        "dropped_rule": "the last n mod workers positions of each epoch's permutation",
        "global_batch": per_step,
        "rank": info["rank"],
        "size": info["size"],
    }
    ctx.log(
        "rank %d of %d takes part %d of every global batch of %d drawn from the %d-sample training split: "
        "%d each, %d dropped per epoch so every rank has the same number of batches"
        % (info["rank"], info["size"], info["rank"], per_step, n, per_rank, dropped)
    )
    return out


def weights_sha256(net) -> Tuple[str, int]:
    """SHA-256 of a network's parameters (sorted by name) and how many there are."""
    digest = hashlib.sha256()
    params = sorted(net.parameters_and_names(), key=lambda item: item[0])
    for name, param in params:
        array = np.ascontiguousarray(param.asnumpy())
        digest.update(("%s|%s|%s\n" % (name, array.dtype.str, array.shape)).encode())
        digest.update(array.tobytes())
    return digest.hexdigest(), len(params)


def gather_hex(hexdigest: str, size: int) -> List[str]:
    """Every rank's SHA-256, in rank order, through one AllGather (a collective: all ranks call it)."""
    from mindspore import Tensor, ops

    raw = np.frombuffer(bytes.fromhex(hexdigest), dtype=np.uint8).astype(np.int32).reshape(1, -1)
    gathered = ops.AllGather()(Tensor(raw)).asnumpy()
    if gathered.shape[0] != size:
        raise JobFailed(
            "AllGather of the weight hashes returned %d rows for %d ranks" % (gathered.shape[0], size),
            type_="ParallelError",
        )
    return [bytes(row.astype(np.uint8).tolist()).hex() for row in gathered]


def weights_check(ctx: JobContext, net, info: Dict[str, Any]) -> bool:
    """Each rank records the hash of its final weights; rank 0 checks that all are identical.

    Returns False on rank 0 when they differ (the caller fails the run), True otherwise.
    """
    digest, n_params = weights_sha256(net)
    path = write_text(
        ctx.artifacts / ("weights.rank%d.sha256" % info["rank"]),
        "%s  rank %d final weights (%s)\n" % (digest, info["rank"], HASH_RULE),
    )
    ctx.artifact(path, "weights-hash", weights_sha256=digest, parameters=n_params)
    hashes = gather_hex(digest, info["size"])
    if info["rank"] != 0:
        return True
    evidence = {
        "hashes": {str(r): h for r, h in enumerate(hashes)},
        "rule": HASH_RULE,
        "how": "each rank hashed its own parameters; the hashes were collected with AllGather",
        "parameters": n_params,
        "files": ["artifacts/weights.rank%d.sha256" % r for r in range(info["size"])],
    }
    if len(set(hashes)) == 1:
        ctx.check(
            "weights-identical",
            "weights identical across ranks",
            Evidence.PASS,
            "all %d ranks ended with weights SHA-256 %s" % (info["size"], hashes[0][:16]),
            evidence=evidence,
        )
        return True
    groups: Dict[str, List[int]] = {}
    for r, h in enumerate(hashes):
        groups.setdefault(h, []).append(r)
    ctx.check(
        "weights-identical",
        "weights identical across ranks",
        Evidence.FAIL,
        "ranks ended with %d different weights: %s"
        % (len(groups), "; ".join("ranks %s: %s" % (",".join(map(str, rs)), h[:16]) for h, rs in groups.items())),
        evidence=evidence,
        hint="gradients were not averaged the same way on every rank; see msrun_logs/",
    )
    return False
