"""The NPU side of the inventory: `npu-smi info` (found, run, parsed), each device's health, visible devices."""

from __future__ import annotations

import functools
import os
import shutil
from typing import Any, Dict, List, Optional, Tuple

from jobs.env.common import tail
from workbench.ascend import chipstatus, npusmi, visible
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext
from workbench.system.atomic import write_text

NOT_RUN_NOTE = {"present": None, "note": "not run: env.only_probes is true"}


def find_npu_smi(command: str, root: str) -> Tuple[Dict[str, Any], bool]:
    """(npusmi.locate's answer, on_path): the configured command on PATH, else the usual places under root."""
    located = npusmi.locate(command, os.environ.get("PATH", ""), root)
    on_path = located["path"] is not None and os.sep not in command and located["path"] == shutil.which(command)
    return located, on_path


class SmiRun:
    """What the env job learnt from npu-smi: the parsed `info`, its facts, and how to run it again."""

    def __init__(
        self,
        facts: Dict[str, Any],
        info: Optional[npusmi.NpuSmiInfo] = None,
        run: Optional[chipstatus.RunNpuSmi] = None,
    ):
        self.facts = facts
        self.info = info
        self.run = run

    @property
    def listed(self) -> bool:
        """npu-smi ran without a failure and listed at least one device."""
        return self.info is not None and bool(self.info.devices) and self.facts.get("failure") is None


def npu_smi(ctx: JobContext, env_cfg: Any, target: str) -> SmiRun:
    """Run `npu-smi info` under the single-poller lock; keep its output; parse or explain it.

    npu-smi belongs to the driver package: the returned facts go into the driver's summary.
    """
    located, on_path = find_npu_smi(env_cfg.npu_smi, env_cfg.root)
    path = located["path"]
    npu = {
        "present": path is not None,
        "path": path,
        "on_path": on_path,
        "looked_at": located["looked_at"],
        "unusable": located["unusable"],
    }
    if path is None:
        ctx.check(
            "npu-smi",
            "npu-smi",
            Evidence.NOT_RUN,
            npusmi.missing_text(located),
            evidence=npu,
            hint="install the Ascend driver, or mount npu-smi into the container" if target == "Ascend" else None,
            group="npu",
        )
        return SmiRun(npu)
    if os.path.basename(path) != "npu-smi":
        ctx.check(
            "npu-smi",
            "npu-smi",
            Evidence.BLOCKED,
            "env.npu_smi=%r: its basename must be npu-smi" % path,
            evidence=npu,
            hint="set env.npu_smi to npu-smi or a path ending in /npu-smi",
            group="npu",
        )
        return SmiRun(npu)
    lock = smi_lock(ctx)
    timeout_s = env_cfg.npu_smi_timeout_s
    run = functools.partial(npusmi.run_npu_smi, timeout_s=timeout_s, lock_path=lock, command=path)
    rc, out, err, elapsed_s = run(["info"])
    raw = out + (("\n# stderr:\n" + err) if err.strip() else "")
    artifact = ctx.artifacts / "npu-smi-info.txt"
    write_text(artifact, raw)
    ctx.artifact(artifact, "npu-smi-info")
    info = npusmi.parse_info(out)
    failure = npusmi.classify_failure(rc, out, err)
    npu.update(
        returncode=rc,
        elapsed_s=round(elapsed_s, 3),
        timeout_s=timeout_s,
        lock=lock,
        version=info.version,
        layout=info.layout,
        failure=failure,
    )
    evidence = dict(
        npu,
        devices=len(info.devices),
        processes=info.processes,
        idle_npus=info.idle_npus,
        unparsed=info.unparsed,
        raw=tail(raw, 8000),
        note=None if on_path else "npu-smi is not on PATH; ran %s" % path,
    )
    if failure is not None:  # a device layer that cannot answer: blocked, never a pass
        verdict = npusmi.failure_verdict(failure, out, err)
        evidence["error_text"] = verdict["error_text"]
        ctx.check(
            "npu-smi",
            "npu-smi",
            verdict["status"],
            verdict["detail"],
            evidence=evidence,
            hint=verdict["hint"],
            group="npu",
        )
        return SmiRun(npu, info if info.devices else None, run)
    if not info.devices:
        ctx.check(
            "npu-smi",
            "npu-smi",
            Evidence.FAIL,
            "npu-smi info printed no device table this parser knows (layout %s): %s"
            % (info.layout, npusmi.what_it_printed(out, err)),
            evidence=evidence,
            hint="keep artifacts/npu-smi-info.txt and compare it with the known layouts",
            group="npu",
        )
        return SmiRun(npu, None, run)
    detail = "%d device(s), %d process(es), npu-smi %s, layout %s" % (
        len(info.devices),
        len(info.processes),
        info.version or "version not printed",
        info.layout,
    )
    if not on_path:
        detail += "; not on PATH, ran %s" % path
    ctx.check("npu-smi", "npu-smi", Evidence.PASS, detail, evidence=evidence, group="npu")
    return SmiRun(npu, info, run)


def smi_lock(ctx: JobContext) -> str:
    """The single-poller npu-smi lock of this sessions root."""
    return str(ctx.dir.parents[2] / ".locks" / "npu-smi.lock")


def board_firmware(smi: SmiRun) -> Optional[str]:
    """The firmware version `npu-smi info -t board` prints for the first NPU (stands in for a missing version.info)."""
    if not smi.listed or smi.run is None or smi.info is None:  # listed means info is there
        return None
    npu = min(d["npu"] for d in smi.info.devices)
    rc, out, err, _ = smi.run(["info", "-t", "board", "-i", str(npu)])
    if npusmi.classify_failure(rc, out, err) is not None:
        return None
    value = npusmi.parse_board(out).card.get("Firmware Version")
    return str(value) if value not in (None, "", "NA") else None


def card_status(smi: SmiRun) -> List[Dict[str, Any]]:
    """Per-chip health, temperature, power, AI Core and memory of every NPU npu-smi listed (one record per chip)."""
    if not smi.listed or smi.run is None or smi.info is None:
        return []
    return [chipstatus.read_card_status(smi.run, n) for n in sorted({d["npu"] for d in smi.info.devices})]


def process_row(row: Dict[str, Any]) -> Dict[str, Any]:
    """One process npu-smi lists, as the summary keeps it."""
    # chip: two dies under one NPU id (A3, 310P Duo) are told apart by it; None when the table has none
    out = {
        "npu": row["npu"],
        "chip": row.get("chip"),
        "pid": row["pid"],
        "name": row["name"],
        "memory_mb": row["memory_mb"],
    }
    if "container_pid" in row:
        out["container_pid"] = row["container_pid"]
    return out


def npu_health(ctx: JobContext, info: Optional[npusmi.NpuSmiInfo]) -> None:
    """`npu-health`: every device's Health column; anything but OK fails."""
    if info is None or not info.devices:
        ctx.check("npu-health", "NPU health", Evidence.NOT_RUN, "no device list from npu-smi", evidence={}, group="npu")
        return
    bad = [d for d in info.devices if str(d.get("health")).upper() != "OK"]
    rows = ["NPU %s chip %s %s: %s" % (d["npu"], d["chip"], d["name"], d["health"]) for d in info.devices]
    if bad:
        ctx.check(
            "npu-health",
            "NPU health",
            Evidence.FAIL,
            "; ".join("NPU %s chip %s (%s) health %s" % (d["npu"], d["chip"], d["name"], d["health"]) for d in bad),
            evidence={"devices": info.devices},
            hint="read the alarm: `npu-smi info -t health -i <NPU>`; check temperature and power, and "
            "/var/log/npu/slog; a Warning device may still run, but its results need a second look",
            group="npu",
        )
    else:
        ctx.check(
            "npu-health", "NPU health", Evidence.PASS, "; ".join(rows), evidence={"devices": info.devices}, group="npu"
        )


def visible_devices(ctx: JobContext, info: Optional[npusmi.NpuSmiInfo]) -> None:
    """`visible-devices`: ASCEND_RT_VISIBLE_DEVICES well-formed, ascending, within the devices seen."""
    value = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    seen = None
    if info is not None and info.devices:
        npus = [d["npu"] for d in info.devices]
        seen = npus if len(set(npus)) == len(npus) else list(range(len(info.devices)))
    verdict = visible.check_visible_devices(value, seen)
    hint = None
    if verdict["status"] == Evidence.FAIL:
        hint = "list device indexes in ascending order, each below the number of devices this container sees"
    ctx.check(
        "visible-devices",
        "Visible devices",
        verdict["status"],
        verdict["detail"],
        evidence=dict(verdict, value=value, seen=seen),
        hint=hint,
        group="settings",
    )
