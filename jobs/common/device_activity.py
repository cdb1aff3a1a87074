"""The `device-activity` check: is this job's own pid on the NPU it asked for, while it trains?

On Ascend, `npu-smi info` runs once (after warm-up, while steps run) through the single-poller
lock shared with the env job (<sessions root>/.locks/npu-smi.lock); its raw output is kept as an
artifact and the verdict comes from workbench.ascend.activity. On CPU or GPU, or without
npu-smi, the check is not-run with the reason: a finished run is never taken as device evidence.

`observe` (runs npu-smi, writes the raw file, emits nothing) and `report` (emits the events) are
split so the sampling can run in a helper thread while the training loop goes on: the events
are then written from the main thread, keeping seq in order.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench.ascend import activity, npusmi
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext
from workbench.system.atomic import write_text

CHECK_ID = "device-activity"
CHECK_TITLE = "device activity"
DEFAULT_ARTIFACT = "npu-smi-during-train.txt"
RAW_EVIDENCE_CHARS = 6000


INIT_PID_NS = "pid:[4026531836]"  # the kernel's initial pid namespace (PROC_PID_INIT_INO)


def _readlink(path: str) -> Optional[str]:
    """os.readlink, None when it cannot be read."""
    try:
        return os.readlink(path)
    except OSError:
        return None


def _nspid(status_path: str) -> List[int]:
    """The NSpid line of a /proc/<pid>/status: this process's pid in each namespace, outermost first."""
    try:
        with open(status_path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return [int(tok) for tok in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def open_device_nodes(pid: int, proc: str = "/proc") -> Optional[List[str]]:
    """The /dev/davinciN nodes process `pid` holds open (davinci_manager is not a device); None when unreadable."""
    fd_dir = os.path.join(proc, str(int(pid)), "fd")
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    nodes = set()
    for name in names:
        target = _readlink(os.path.join(fd_dir, name))
        if target and re.match(r"^/dev/davinci\d+$", target):
            nodes.add(target)
    return sorted(nodes)


def pid_namespace(pid: Optional[int] = None, proc: str = "/proc") -> Dict[str, Any]:
    """Which pid namespace this process is in, and its host pid when /proc can say (activity.pid_space).

    /proc/self/ns/pid names our namespace: the initial one means our pids are host pids (also in
    a --pid=host container). Otherwise NSpid lists our pid in the namespace of the /proc we read
    first; that is the host pid only when that /proc's pid 1 is in the initial namespace.
    """
    pid = os.getpid() if pid is None else int(pid)
    own = _readlink(os.path.join(proc, "self", "ns", "pid"))
    if own is None:
        return activity.pid_space(None, pid, why="%s/self/ns/pid cannot be read" % proc)
    if own == INIT_PID_NS:
        return activity.pid_space(activity.HOST, pid, why="%s/self/ns/pid is the initial namespace %s" % (proc, own))
    nspid = _nspid(os.path.join(proc, "self", "status"))
    outer = _readlink(os.path.join(proc, "1", "ns", "pid"))
    if len(nspid) > 1 and outer == INIT_PID_NS:
        return activity.pid_space(
            activity.CONTAINER,
            nspid[-1],
            nspid[0],
            why="own namespace %s; NSpid %s read from the host's /proc" % (own, nspid),
        )
    return activity.pid_space(
        activity.CONTAINER,
        pid,
        why="own pid namespace %s (not the initial %s); host pid not visible" % (own, INIT_PID_NS),
    )


def find_npu_smi(cmd: str) -> Dict[str, Any]:
    """npusmi.locate: `cmd` on PATH, else the usual install places when its name is npu-smi."""
    return npusmi.locate(cmd, os.environ.get("PATH", ""))


def lock_path(ctx: JobContext) -> str:
    """The session store's npu-smi lock (the env job's): <sessions root>/.locks/npu-smi.lock."""
    return str(ctx.dir.parents[2] / ".locks" / "npu-smi.lock")


def _target_and_id(device: Dict[str, Any]) -> Tuple[str, int]:
    """Target and id from a runner device record ({resolved, id}) or a plain {target, id}."""
    target = device.get("resolved") or device.get("target")
    return str(target), int(device.get("id", device.get("device_id", 0)) or 0)


def observe(
    ctx: JobContext,
    device: Dict[str, Any],
    npu_smi: str = "npu-smi",
    pid: Optional[int] = None,
    timeout_s: float = 20.0,
    artifact_name: str = DEFAULT_ARTIFACT,
    when: Optional[Dict[str, Any]] = None,
    space: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Run npu-smi once (Ascend only) and decide; writes the raw output file but emits no event.

    `space` (activity.pid_space) None means read this process's (pid_namespace()), with `pid`
    as its pid. Returns {status, detail, hint, evidence, artifact}: `artifact` is the raw file's
    path or None.
    """
    target, device_id = _target_and_id(device)
    if space is None:
        space = pid_namespace(pid)
    if space["space"] == activity.CONTAINER and space.get("device_fds") is None:
        space = dict(space, device_fds=open_device_nodes(space["pid"]))
    pid = space["pid"]
    base: Dict[str, Any] = {"target": target, "device_id": device_id, "pid": pid, "when": when or {}}
    if target != "Ascend":
        return {
            "status": Evidence.NOT_RUN,
            "artifact": None,
            "evidence": base,
            "hint": None,
            "detail": "target %s: npu-smi process evidence exists for Ascend only; what MindSpore runs on is "
            "in the effective-config check" % target,
        }
    located = find_npu_smi(npu_smi)
    path = located["path"]
    base.update(npu_smi=path, looked_at=located["looked_at"], unusable=located["unusable"])
    if path is None:
        return {
            "status": Evidence.NOT_RUN,
            "artifact": None,
            "evidence": base,
            "detail": "%s: no process evidence for the NPU" % npusmi.missing_text(located),
            "hint": "install the Ascend driver's npu-smi, or mount it into the container",
        }
    lock = lock_path(ctx)
    started = time.time()
    # The full path, not a PATH edit: this may run in a helper thread while the job runs.
    rc, out, err, elapsed_s = npusmi.run_npu_smi(["info"], timeout_s=timeout_s, lock_path=lock, command=path)
    raw = out + (("\n# stderr:\n" + err) if err.strip() else "")
    artifact = write_text(ctx.artifacts / artifact_name, raw)
    base.update(
        returncode=rc,
        elapsed_s=round(elapsed_s, 3),
        sampled_at=started,
        lock=lock,
        timeout_s=timeout_s,
        raw=raw[-RAW_EVIDENCE_CHARS:],
    )
    failure = npusmi.classify_failure(rc, out, err)
    if failure is not None:
        verdict = npusmi.failure_verdict(failure, out, err)
        base["failure"] = failure
        return {
            "status": verdict["status"],
            "artifact": artifact,
            "evidence": base,
            "hint": verdict["hint"],
            "detail": verdict["detail"] + "; no process evidence",
        }
    info = npusmi.parse_info(out)
    if not info.devices:
        return {
            "status": Evidence.BLOCKED,
            "artifact": artifact,
            "evidence": dict(base, unparsed=info.unparsed),
            "detail": "npu-smi info printed no device table this parser knows (layout %s): %s"
            % (info.layout, npusmi.what_it_printed(out, err)),
            "hint": "keep artifacts/%s and compare it with the known layouts" % artifact_name,
        }
    mapping = activity.npu_for_device(device_id, os.environ.get("ASCEND_RT_VISIBLE_DEVICES"), info.devices)
    verdict = activity.activity_verdict(info, space, mapping)
    evidence = dict(base, **verdict["evidence"])
    detail = verdict["detail"]
    if mapping.get("visible_devices") is not None and mapping.get("npu") is not None:
        detail += "; device id %d -> NPU %s chip %s via ASCEND_RT_VISIBLE_DEVICES=%s" % (
            device_id,
            mapping["npu"],
            mapping["chip"],
            mapping["visible_devices"],
        )
    return {
        "status": verdict["status"],
        "detail": detail,
        "hint": verdict["hint"],
        "evidence": evidence,
        "artifact": artifact,
    }


def report(ctx: JobContext, observation: Dict[str, Any]) -> Dict[str, Any]:
    """Emit the raw output's artifact event (when there is one) and the check; returns the check event."""
    if observation.get("artifact") is not None:
        ctx.artifact(Path(observation["artifact"]), "npu-smi-info", purpose="device activity during the job")
    return ctx.check(
        CHECK_ID,
        CHECK_TITLE,
        observation["status"],
        observation["detail"],
        evidence=observation["evidence"],
        hint=observation.get("hint"),
    )


def sample_device_activity(
    ctx: JobContext,
    device: Dict[str, Any],
    npu_smi: str = "npu-smi",
    pid: Optional[int] = None,
    timeout_s: float = 20.0,
    artifact_name: str = DEFAULT_ARTIFACT,
    space: Optional[Dict[str, Any]] = None,
    when: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Observe once and emit the `device-activity` check (never a pass off Ascend)."""
    return report(ctx, observe(ctx, device, npu_smi, pid, timeout_s, artifact_name, when, space))


class BackgroundSample:
    """One observation in a helper thread (so npu-smi sees the device while steps run); report() from the main thread."""

    def __init__(
        self,
        ctx: JobContext,
        device: Dict[str, Any],
        npu_smi: str = "npu-smi",
        pid: Optional[int] = None,
        timeout_s: float = 20.0,
        when: Optional[Dict[str, Any]] = None,
        space: Optional[Dict[str, Any]] = None,
    ):
        self.ctx = ctx
        self.result: Optional[Dict[str, Any]] = None
        self.reported = False
        args = (ctx, device, npu_smi, pid, timeout_s, DEFAULT_ARTIFACT, when, space)
        self.thread = threading.Thread(target=self._run, args=args, name="device-activity", daemon=True)

    def start(self) -> BackgroundSample:
        """Start sampling."""
        self.thread.start()
        return self

    def _run(self, *args: Any) -> None:
        try:
            self.result = observe(*args)
        except Exception as exc:  # the check must say the sampling broke, not vanish
            self.result = {
                "status": Evidence.BLOCKED,
                "artifact": None,
                "hint": None,
                "evidence": {"error": repr(exc)},
                "detail": "sampling npu-smi raised %s: %s" % (type(exc).__name__, exc),
            }

    def done(self) -> bool:
        """Has the observation finished (cheap: call it between steps)?"""
        return self.result is not None

    def report(self, wait_s: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """Emit the check once the observation is in (waiting up to wait_s); None when still running."""
        if self.reported:
            return None
        self.thread.join(wait_s)
        if self.result is None:
            return None
        self.reported = True
        return report(self.ctx, self.result)
