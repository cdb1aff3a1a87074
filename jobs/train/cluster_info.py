"""What the ranks of a data-parallel run tell each other: where each one runs, and how fast it went.

On several nodes every node has its own job folder and sees only its own ranks' events. Two
AllGathers over the cluster (collectives: every rank calls them, in the same order) give every
rank the same picture: at the start each rank's host and job folder, at the end each rank's
steady throughput. Rank 0 records both in its result; the first rank of a node without rank 0
records, in its own job, which ranks ran there and where rank 0's job is.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Dict, List, Optional

import numpy as np

from workbench.jobkit.context import JobContext, JobFailed
from workbench.system.atomic import write_json

GATHER_BYTES = 2048  # room for one rank's JSON; a longer one is an error, never silently cut
NODE_SUMMARY = ("ranks", "node.json")  # jobs/train/msrun_rank.py turns it into the node job's job-level result


def gather_json(obj: Any, size: int) -> List[Any]:
    """Every rank's `obj` (JSON-able), in rank order, through one AllGather."""
    from mindspore import Tensor, ops

    raw = json.dumps(obj, sort_keys=True).encode("utf-8")
    if len(raw) > GATHER_BYTES - 4:
        raise JobFailed(
            "a rank's cluster message is %d bytes; at most %d fit" % (len(raw), GATHER_BYTES - 4), type_="ParallelError"
        )
    buf = np.zeros(GATHER_BYTES, dtype=np.int32)
    buf[:4] = list(len(raw).to_bytes(4, "big"))
    buf[4 : 4 + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    rows = ops.AllGather()(Tensor(buf.reshape(1, -1))).asnumpy()
    if rows.shape[0] != size:
        raise JobFailed("AllGather returned %d rows for %d ranks" % (rows.shape[0], size), type_="ParallelError")
    out = []
    for row in rows.astype(np.uint8):
        n = int.from_bytes(bytes(row[:4].tolist()), "big")
        out.append(json.loads(bytes(row[4 : 4 + n].tolist()).decode("utf-8")))
    return out


def exchange_places(ctx: JobContext, info: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Each rank's host, node, session, job id and job folder, in rank order (all ranks call this)."""
    mine = {
        "rank": info["rank"],
        "node_rank": info["node_rank"],
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "session": ctx.meta.get("session"),
        "jid": ctx.meta.get("jid"),
        "dir": str(ctx.dir),
    }
    places = gather_json(mine, info["size"])
    if info["rank"] != 0 and places[0]["dir"] != str(ctx.dir):
        ctx.log(
            "rank 0 runs on node %s (host %s): its job %s/%s in %s holds the validation, checkpoints and "
            "weights check"
            % (places[0]["node_rank"], places[0]["host"], places[0]["session"], places[0]["jid"], places[0]["dir"])
        )
    return places


def gather_throughput(info: Dict[str, Any], perf: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every rank's steady images/s, median step and step count of its whole run, in rank order."""
    steady = perf.get("steady") or {}
    mine = {
        "rank": info["rank"],
        "images_per_s": steady.get("images_per_s"),
        "median_ms": steady.get("median_ms"),
        "steps": steady.get("n"),
        "batch_size": perf.get("batch_size"),
    }
    return gather_json(mine, info["size"])


def ranks_of_node(cfg: Any, node_rank: int) -> List[int]:
    """The ranks msrun starts on node `node_rank` (node_rank * local_workers + local rank)."""
    par = cfg.train.parallel  # a JobConfig
    local = par.local_workers or par.workers
    return list(range(node_rank * local, (node_rank + 1) * local))


def leave_node_summary(
    ctx: JobContext, info: Dict[str, Any], places: List[Dict[str, Any]], ranks: Optional[List[Dict[str, Any]]]
) -> Optional[Dict[str, Any]]:
    """On the first rank of a node without rank 0: write the node's summary for its job-level result."""
    here = ranks_of_node(ctx.cfg, info["node_rank"])
    if 0 in here or info["rank"] != here[0]:
        return None
    summary = {
        "role": "node %d of a multi-node run: ranks %s trained here; rank 0's job holds the validation, "
        "checkpoints, weights check and the run's summary" % (info["node_rank"], here),
        "ranks_here": here,
        "parallel": dict(info),
        "rank0_job": places[0],
        "places": places,
        "ranks": [r for r in ranks or [] if r.get("rank") in here],
    }
    write_json(ctx.dir.joinpath(*NODE_SUMMARY), summary)
    return summary
