"""The env job's order: the device probes first, then the inventory (or, for env.only_probes, its facts)."""

from __future__ import annotations

import os

from jobs.env import inventory
from jobs.env.probes import DeviceProbes
from jobs.env.settings import device_setting
from workbench.ascend import cann as cannmod
from workbench.events.protocol import Evidence
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext, JobFailed
from workbench.system.atomic import write_json

SUMMARY_KEYS = (
    "python",
    "packages",
    "cann",
    "driver",
    "firmware",
    "pairing",
    "devices",
    "processes",
    "cards",
    "probes",
    "environment",
)


def main(ctx: JobContext) -> str:
    """Probes first (before anything else touches the device), then everything else."""
    cfg = JobConfig(ctx.cfg)
    only = cfg.env.only_probes
    ctx.started(scope="probes" if only else "all", root=cfg.env.root)
    cann = cannmod.find_toolkit(os.environ, cfg.env.root)  # file reads only: no device yet
    set_env = cannmod.set_env_status(os.environ, cfg.env.root)
    probes = DeviceProbes(ctx, cfg).run(cann, set_env)
    ctx.raise_if_cancelled()
    if only:
        facts = inventory.gather(cfg, cann, set_env)
        device_setting(ctx, cfg.env.root, cfg.env.npu_smi_timeout_s)
    else:
        facts = inventory.check(ctx, cfg, cann, set_env)
    facts["probes"] = probes
    summary = {key: facts[key] for key in SUMMARY_KEYS}
    report = ctx.artifacts / "env-report.json"
    write_json(report, summary)
    ctx.artifact(report, "env-report")
    ctx.result(summary)
    bad = [p for p in probes if p["verdict"] in (Evidence.FAIL, Evidence.BLOCKED)]
    if bad:
        first = bad[0]
        raise JobFailed(
            "device probe %s on %s:%d %s: %s"
            % (first["op"], first["target"], first["id"], first["verdict"], first["detail"]),
            hint=first.get("hint"),
            type_="DeviceProbeFailed",
        )
    return "ok"
