"""What msrun starts once per rank, and once as the scheduler, for a data-parallel `train` job.

msrun runs `python msrun_rank.py --job-dir DIR` with MS_ROLE=MS_WORKER and RANK_ID (a rank)
or MS_ROLE=MS_SCHED (the scheduler). This launcher keeps MindSpore out of its own process:
it starts the rank (`python -m jobs.train`) or the scheduler as its child and waits, so it
sees how the child ended — an exit code or the signal that killed it — and can say so in
the job's events, where msrun's own log only names a pid and a number.

- Every process of the job dies with msrun (PR_SET_PDEATHSIG): msrun starts each rank in a
  session of its own, out of reach of the supervisor's process-group kill, so a cancel or a
  time limit that stops msrun has to take the ranks down with it.
- A rank that ends badly (a signal, or an exit code other than 0) is reported as a job-level
  `finished` event (one without `rank`) naming the rank, its pid and the signal. The first
  such report is the root cause; a later one from another rank (a knock-on failure) restates
  it, so the last job-level `finished` always names the first failure.
- After a rank failure the scheduler would wait for the dead rank's heartbeat to time out
  (about half a minute) before msrun can return; once the failure is reported and the
  ranks of this node are gone, the scheduler's launcher stops it.
- A rank on another node that goes away (its machine, or its whole job, killed) is seen only by
  the scheduler, which logs it as a timed-out node (msrun numbers nodes by rank). The
  scheduler's launcher reads that from msrun_logs/scheduler.log, reports "rank N lost" as the
  root cause (it outranks the knock-on failures of this node's ranks, whose collectives fail)
  and stops this node's ranks, so the job ends instead of waiting in a dead collective.
- On a node without rank 0 the node's first rank ends the job with a job-level `finished ok`
  when it ends well: rank 0's job, elsewhere, holds the run's validation and summary.
"""

from __future__ import annotations

import os
import sys

# Run as a script, sys.path[0] is jobs/train/, whose modules (job, loop, state ...) would shadow
# top-level names; the project root is imported as on PYTHONPATH instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import argparse  # noqa: E402
import fcntl  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Dict, List, Optional  # noqa: E402

from workbench.events.protocol import EventReader, EventWriter, read_all  # noqa: E402
from workbench.events.steps import expand_steps  # noqa: E402
from workbench.jobkit.config import load_job_config  # noqa: E402
from workbench.system.atomic import read_json, write_json  # noqa: E402
from workbench.system.childproc import die_with_parent, signal_name  # noqa: E402
from workbench.system.childproc import pid_running as alive  # noqa: E402

RANKS_DIR = "ranks"  # rank<k>.json (pids, how it ended), scheduler.json, failed.json
FAILED = "failed.json"  # the first rank failure of the job
NODE_SUMMARY = "node.json"  # a node without rank 0: what its first rank leaves for the job-level result
CRASH_AFTER_STEPS = 2  # train.parallel.crash_rank: the rank is killed after this many steps
SCHEDULER_CODE = "from mindspore.communication import init; init()"  # blocks until the cluster ends
SCHEDULER_STOP_GRACE_S = 2.0
RANK_STOP_GRACE_S = 2.0
SCHEDULER_LOG = os.path.join("msrun_logs", "scheduler.log")  # workbench.run.msrun.LOG_DIR, msrun's --log_dir
# MindSpore's scheduler names a node whose heartbeat stopped; msrun's node id is the rank.
LOST_PATTERNS = (re.compile(r"The node: (\d+) is timed out"), re.compile(r"worker (\d+) is the first one timed out"))
ROOT_CAUSE = "RankLost"  # a report of this type replaces an earlier knock-on failure as the one named
POLL_S = 0.2


def _child_setup(parent_pid: int) -> None:
    """Runs in the forked child before exec: die with the launcher, even if it is already gone."""
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


def start_child(argv: List[str], job_dir: Path) -> subprocess.Popen:
    """Start the rank or scheduler process; it dies with this launcher."""
    parent = os.getpid()
    return subprocess.Popen(argv, cwd=str(job_dir), stdin=subprocess.DEVNULL, preexec_fn=lambda: _child_setup(parent))


def own_finished(job_dir: Path, rank: int) -> Optional[Dict[str, Any]]:
    """The rank's own last `finished` event, if it wrote one."""
    found = None
    for ev in read_all(str(job_dir / "events.jsonl")):
        if ev.get("type") == "finished" and ev.get("rank") == rank:
            found = ev
    return found


def describe_exit(job_dir: Path, rank: int, pid: int, returncode: int, duration_s: float) -> Dict[str, Any]:
    """{status, error} of a rank that ended with a non-zero exit code or a signal."""
    log = "see msrun_logs/worker_%d.log" % rank
    error: Dict[str, Any] = {"rank": rank, "pid": pid, "returncode": returncode, "signal": None}
    status = "failed"
    if returncode < 0:
        error["signal"] = signal_name(-returncode)
        error.update(
            type="RankCrashed",
            hint="msrun stopped the other ranks; " + log,
            message="rank %d (pid %d) died with %s after %.1f s" % (rank, pid, error["signal"], duration_s),
        )
        return {"status": status, "error": error}
    own = own_finished(job_dir, rank)
    own_error = (own or {}).get("error") or {}
    if returncode == 3 and (own or {}).get("status") == "cancelled":
        status = "cancelled"
    if own_error.get("message"):
        # MindSpore's RuntimeError texts start with a rule of dashes: name the first lines that say something.
        lines = [ln.strip() for ln in str(own_error["message"]).splitlines() if ln.strip().strip("-")]
        error.update(
            type=own_error.get("type") or "RankFailed",
            hint=own_error.get("hint") or log,
            message="rank %d failed: %s" % (rank, " / ".join(lines[:2]) or own_error["message"]),
        )
    else:
        error.update(
            type="RankCrashed",
            hint="msrun stopped the other ranks; " + log,
            message="rank %d (pid %d) exited with code %d after %.1f s without a finished event"
            % (rank, pid, returncode, duration_s),
        )
    return {"status": status, "error": error}


def outranks(new: Dict[str, Any], first: Dict[str, Any]) -> bool:
    """A lost rank replaces an earlier report of another rank (a knock-on: its collective failed)."""
    return (
        new.get("type") == ROOT_CAUSE
        and first.get("type") != ROOT_CAUSE
        and first.get("rank") not in (new.get("lost_ranks") or [])
    )


def report(job_dir: Path, outcome: Dict[str, Any], by: str) -> Dict[str, Any]:
    """Append the job-level `finished` for a rank's failure; the first failure stays the one named."""
    ranks = job_dir / RANKS_DIR
    ranks.mkdir(exist_ok=True)
    with open(str(ranks / ".report.lock"), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # job-level seq is shared by every launcher
        first = read_json(ranks / FAILED) if (ranks / FAILED).exists() else None
        events_path = job_dir / "events.jsonl"
        seqs = [ev.get("seq") for ev in read_all(str(events_path)) if "rank" not in ev and not ev.get("raw")]
        writer = EventWriter(str(events_path), extra={"by": by})
        writer.seq = max([s for s in seqs if isinstance(s, int)] + [-1]) + 1
        try:
            if first is None or outranks(outcome["error"], first["error"]):
                if first is not None:  # the earlier report was a knock-on of this one
                    outcome = dict(outcome, error=dict(outcome["error"], knock_on=first["error"]["message"]))
                write_json(ranks / FAILED, outcome)
                chosen = outcome
            else:
                writer.emit("log", level="warning", message="after the first failure: " + outcome["error"]["message"])
                chosen = dict(first, error=dict(first["error"], restated_by=by))
            writer.emit("finished", fsync=True, status=chosen["status"], error=chosen["error"])
        finally:
            writer.close()
    return chosen


def report_node_ok(job_dir: Path, rank: int) -> bool:
    """On a node without rank 0: its first rank ended well, so the node's job ends ok (unless a rank failed).

    The rank's summary of the node (ranks/node.json: which ranks ran here, where rank 0's job
    is) becomes the job's `result`, ahead of the `finished` event.
    """
    ranks = job_dir / RANKS_DIR
    ranks.mkdir(exist_ok=True)
    with open(str(ranks / ".report.lock"), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        if (ranks / FAILED).exists():
            return False
        events_path = job_dir / "events.jsonl"
        seqs = [ev.get("seq") for ev in read_all(str(events_path)) if "rank" not in ev and not ev.get("raw")]
        writer = EventWriter(str(events_path), extra={"by": "launcher of rank %d" % rank})
        writer.seq = max([s for s in seqs if isinstance(s, int)] + [-1]) + 1
        try:
            if (ranks / NODE_SUMMARY).exists():
                writer.emit("result", summary=read_json(ranks / NODE_SUMMARY))
            writer.emit(
                "finished",
                fsync=True,
                status="ok",
                error=None,
                note="rank %d, this node's first rank, finished ok; rank 0's job (node 0) holds the "
                "run's validation, checkpoints and weights check" % rank,
            )
        finally:
            writer.close()
    return True


def lost_ranks(text: str) -> List[int]:
    """Ranks msrun's scheduler log names as timed out, in the order it names them."""
    found: List[int] = []
    for pattern in LOST_PATTERNS:
        for match in pattern.finditer(text):
            if int(match.group(1)) not in found:
                found.append(int(match.group(1)))
    return found


def lost_outcome(job_dir: Path, lost: List[int], waited_s: float) -> Dict[str, Any]:
    """{status, error} naming the rank(s) the scheduler lost, and their nodes."""
    try:
        par = read_json(job_dir / "config.json")["train"]["parallel"]
        per_node = int(par.get("local_workers") or par["workers"])
    except (OSError, ValueError, KeyError, TypeError):
        per_node = 0
    where = ", ".join("rank %d (node %d)" % (r, r // per_node) if per_node else "rank %d" % r for r in lost)
    return {
        "status": "failed",
        "error": {
            "type": ROOT_CAUSE,
            "rank": lost[0],
            "lost_ranks": lost,
            "signal": None,
            "returncode": None,
            "message": "%s lost: msrun's scheduler stopped hearing from it (heartbeat timed out, %.0f s after the "
            "scheduler started); this node's ranks were stopped" % (where, waited_s),
            "hint": "look at the lost node's own job and machine; msrun_logs/scheduler.log has the scheduler's view",
        },
    }


def stop_local_ranks(job_dir: Path) -> None:
    """SIGTERM every rank of this node, then SIGKILL what is left after a short grace."""
    pids = []
    for path in sorted((job_dir / RANKS_DIR).glob("rank*.json")):
        try:
            pids.append(read_json(path).get("pid"))
        except (OSError, ValueError):
            continue
    pids = [p for p in pids if alive(p)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + RANK_STOP_GRACE_S
        while sig == signal.SIGTERM and any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)


class LogFollower:
    """New text of a growing log file, read from where the last call stopped (a short overlap kept)."""

    KEEP = 400  # characters carried over, so a line split across two reads still matches

    def __init__(self, path: Path):
        self.path, self.offset, self.carry = path, 0, ""

    def read_new(self) -> str:
        """The carried-over tail plus what was appended since the last call ("" when the file is missing)."""
        try:
            with open(str(self.path), "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return self.carry
        self.offset += len(data)
        text = self.carry + data.decode("utf-8", "replace")
        self.carry = text[-self.KEEP :]
        return text


def crash_after_steps(job_dir: Path, rank: int, child: subprocess.Popen, steps: int) -> None:
    """Test hook (train.parallel.crash_rank): SIGSEGV the rank once it has written `steps` step events."""
    reader = EventReader(str(job_dir / "events.jsonl"))
    seen = 0
    while child.returncode is None:
        seen += sum(
            len(expand_steps(ev))
            for ev in reader.read_new()
            if ev.get("type") in ("step", "steps") and ev.get("rank") == rank
        )
        if seen >= steps:
            if child.returncode is None:
                os.kill(child.pid, signal.SIGSEGV)
            return
        time.sleep(0.05)


def exit_code(returncode: int) -> int:
    """The launcher's own exit code: 128 + signal for a killed child, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def run_rank(job_dir: Path) -> int:
    """Run one rank as a child, record its pids and end, report a failure."""
    if "RANK_ID" not in os.environ:
        sys.stderr.write("msrun_rank: RANK_ID is not set; msrun sets it when --node_rank is given\n")
        return 2
    rank = int(os.environ["RANK_ID"])
    cfg = load_job_config(job_dir)
    record_path = job_dir / RANKS_DIR / ("rank%d.json" % rank)
    record_path.parent.mkdir(exist_ok=True)
    t0 = time.time()
    child = start_child([sys.executable, "-m", "jobs.train", "--job-dir", str(job_dir)], job_dir)
    record: Dict[str, Any] = {
        "rank": rank,
        "local_rank": int(os.environ.get("DEVICE_ID", "0")),
        "pid": child.pid,
        "launcher_pid": os.getpid(),
        "started": t0,
        "returncode": None,
        "signal": None,
        "ended": None,
    }
    write_json(record_path, record)
    if cfg.train.parallel.crash_rank == rank:
        threading.Thread(
            target=crash_after_steps, args=(job_dir, rank, child, CRASH_AFTER_STEPS), name="crash-hook", daemon=True
        ).start()
    rc = child.wait()
    record.update(returncode=rc, signal=signal_name(-rc) if rc < 0 else None, ended=time.time())
    write_json(record_path, record)
    if rc != 0:
        report(
            job_dir, describe_exit(job_dir, rank, child.pid, rc, record["ended"] - t0), by="launcher of rank %d" % rank
        )
    elif rank != 0 and record["local_rank"] == 0:
        report_node_ok(job_dir, rank)
    return exit_code(rc)


def local_ranks_alive(job_dir: Path) -> bool:
    """True while any rank of this node (or its launcher) still runs."""
    for path in sorted((job_dir / RANKS_DIR).glob("rank*.json")):
        try:
            rec = read_json(path)
        except (OSError, ValueError):
            return True  # being written: its rank has just started
        if alive(rec.get("pid")) or alive(rec.get("launcher_pid")):
            return True
    return False


def run_scheduler(job_dir: Path) -> int:
    """Run msrun's scheduler as a child; name a rank it loses; stop it once a failure has ended this node's ranks."""
    ranks = job_dir / RANKS_DIR
    ranks.mkdir(exist_ok=True)
    child = start_child([sys.executable, "-c", SCHEDULER_CODE], job_dir)
    t0 = time.time()
    write_json(ranks / "scheduler.json", {"pid": child.pid, "launcher_pid": os.getpid(), "started": t0})
    log = LogFollower(job_dir / SCHEDULER_LOG)
    lost_named = False
    while True:
        ended = child.poll() is not None  # read before the log, so a last line written at exit is seen
        if not lost_named:
            lost = lost_ranks(log.read_new())
            if lost:
                lost_named = True
                report(job_dir, lost_outcome(job_dir, lost, time.time() - t0), by="launcher of the scheduler")
                stop_local_ranks(job_dir)
        if ended:
            break
        if (ranks / FAILED).exists() and not local_ranks_alive(job_dir):
            child.terminate()
            try:
                child.wait(SCHEDULER_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
            break
        time.sleep(POLL_S)
    return exit_code(child.wait())


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point: scheduler or rank, by msrun's MS_ROLE."""
    parser = argparse.ArgumentParser(prog="msrun_rank.py")
    parser.add_argument("--job-dir", required=True)
    args = parser.parse_args(argv)
    parent = os.getppid()
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:  # msrun died before the request took effect
        return 1
    job_dir = Path(args.job_dir).resolve()
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return run_scheduler(job_dir)
    return run_rank(job_dir)


if __name__ == "__main__":
    sys.exit(main())
