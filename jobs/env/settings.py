"""The settings side of the inventory: MS_ROLE, log levels, the device setting, and the recorded variables."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

from jobs.common.msdevice import SERVER_ROLES, ms_role_warning
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext
from workbench.masking import envvars
from workbench.run.device import DETECT_TIMEOUT_S, detect, setting_verdict

GLOG_NAMES = (
    "GLOG_v",
    "GLOG_logtostderr",
    "GLOG_stderrthreshold",
    "GLOG_log_dir",
    "ASCEND_GLOBAL_LOG_LEVEL",
    "ASCEND_SLOG_PRINT_TO_STDOUT",
)
GLOG_MEANING = {
    "0": "DEBUG and up",
    "1": "INFO and up",
    "2": "WARNING and up",
    "3": "ERROR and up",
    "4": "CRITICAL only",
}


def role_and_log_checks(ctx: JobContext) -> None:
    """`ms-role` (a server role moves work to CPU silently) and `glog` (the log levels jobs inherit)."""
    role = os.environ.get("MS_ROLE")
    warning = ms_role_warning()
    evidence = {"MS_ROLE": role, "server_roles": list(SERVER_ROLES)}
    if warning:
        ctx.check(
            "ms-role",
            "MS_ROLE",
            Evidence.FAIL,
            warning + ": MindSpore then runs on CPU silently",
            evidence=evidence,
            hint="unset MS_ROLE for single-device jobs",
            group="settings",
        )
    else:
        ctx.check(
            "ms-role",
            "MS_ROLE",
            Evidence.PASS,
            "MS_ROLE unset" if role is None else "MS_ROLE=%s is not a server/scheduler role" % role,
            evidence=evidence,
            group="settings",
        )
    levels = {name: os.environ.get(name) for name in GLOG_NAMES}
    glog_v = levels["GLOG_v"]
    if glog_v is not None and glog_v not in GLOG_MEANING:
        ctx.check(
            "glog",
            "Log levels",
            Evidence.FAIL,
            "GLOG_v=%r is not one of 0..4" % glog_v,
            evidence=levels,
            hint="set GLOG_v to 0 (DEBUG) .. 4 (CRITICAL); the config key glog_v does it for jobs",
            group="settings",
        )
    else:
        parts = [
            "GLOG_v=%s (%s)" % (glog_v, GLOG_MEANING[glog_v]) if glog_v else "GLOG_v unset (MindSpore: WARNING and up)"
        ]
        parts += ["%s=%s" % (k, v) for k, v in levels.items() if v is not None and k != "GLOG_v"]
        ctx.check("glog", "Log levels", Evidence.PASS, "; ".join(parts), evidence=levels, group="settings")


def device_setting(ctx: JobContext, root: str = "/", timeout_s: float = DETECT_TIMEOUT_S) -> None:
    """`device-setting`: device.target/id, what auto would pick here and why, and whether the request can be met.

    Detection looks under `root` (env.root) for the device nodes, like the rest of the inventory.
    """
    dev = dict(ctx.device)
    found = detect(root=root, lock_path=str(ctx.dir.parents[2] / ".locks" / "npu-smi.lock"), timeout_s=timeout_s)
    verdict = setting_verdict(dev, found)
    evidence = {
        "requested": dev.get("requested"),
        "resolved": dev.get("resolved"),
        "id": dev.get("id"),
        "why": dev.get("why"),
        "detected": found,
    }
    ctx.check(
        "device-setting",
        "Device setting",
        verdict["status"],
        verdict["detail"],
        evidence=evidence,
        hint=verdict["hint"],
        group="settings",
    )


def environment_facts() -> Tuple[Dict[str, Any], List[str]]:
    """(allow-listed variables with secret-like values masked, the names masked)."""
    return envvars.record_env(os.environ), envvars.masked_names(os.environ)


def environment_check(ctx: JobContext, recorded: Dict[str, Any], masked: List[str]) -> None:
    """`env-vars`: what was recorded and which values were masked."""
    ctx.check(
        "env-vars",
        "Environment variables",
        Evidence.PASS,
        "%d allow-listed variables recorded (ASCEND_*, GLOG_*, MS_*, PATH, LD_LIBRARY_PATH, "
        "PYTHONPATH)%s" % (len(recorded), "; masked: " + ", ".join(masked) if masked else ""),
        evidence={"recorded": recorded, "masked": masked},
        group="settings",
    )
