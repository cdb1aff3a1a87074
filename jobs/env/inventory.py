"""The env inventory: what this machine has, gathered and checked in a fixed order, or gathered only."""

from __future__ import annotations

from typing import Any, Dict

from jobs.env import ascend_stack, npu, python_stack, settings
from workbench.ascend import cann as cannmod
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext


def gather(cfg: JobConfig, cann: Dict[str, Any], set_env: Dict[str, Any]) -> Dict[str, Any]:
    """The facts of every area (interpreter, packages, CANN, driver, pairing, variables) without a check.

    npu-smi is not run: it is a check of its own, and the probes-only run leaves the NPUs alone.
    """
    interpreter = python_stack.interpreter_facts()
    packages = python_stack.package_facts()
    driver, firmware = ascend_stack.driver_summary(cannmod.driver_status(cfg.env.root))
    driver["npu_smi"] = dict(npu.NOT_RUN_NOTE)
    return {
        "python": python_stack.interpreter_summary(interpreter),
        "packages": python_stack.package_summary(packages),
        "cann": ascend_stack.cann_summary(cann, set_env),
        "driver": driver,
        "firmware": firmware,
        "pairing": ascend_stack.pairing_facts(packages["mindspore"]["version"], cann["version"]),
        "devices": [],
        "processes": [],
        "cards": [],
        "environment": settings.environment_facts()[0],
    }


def check(ctx: JobContext, cfg: JobConfig, cann: Dict[str, Any], set_env: Dict[str, Any]) -> Dict[str, Any]:
    """Every inventory check in the job's order; returns the same facts `gather` does, plus npu-smi's."""
    target = ctx.device["resolved"]
    interpreter = python_stack.interpreter_facts()
    python_stack.interpreter_checks(ctx, interpreter)
    packages = python_stack.package_facts()
    python_stack.package_checks(ctx, packages)
    ascend_stack.cann_checks(ctx, target, cann, set_env)
    # npu-smi first: its title line and `-t board` stand in for a missing driver or firmware version.info
    smi = npu.npu_smi(ctx, cfg.env, target)
    info = smi.info
    status = cannmod.driver_status(
        cfg.env.root,
        driver_version=info.version if info is not None else None,
        firmware_version=npu.board_firmware(smi),
    )
    ascend_stack.driver_checks(ctx, target, status)
    driver, firmware = ascend_stack.driver_summary(status)
    driver["npu_smi"] = smi.facts
    pairing = ascend_stack.pairing_facts(packages["mindspore"]["version"], cann["version"])
    ascend_stack.pairing_check(ctx, pairing)
    npu.npu_health(ctx, info)
    cards = npu.card_status(smi)
    npu.visible_devices(ctx, info)
    settings.role_and_log_checks(ctx)
    settings.device_setting(ctx, cfg.env.root, cfg.env.npu_smi_timeout_s)
    recorded, masked = settings.environment_facts()
    settings.environment_check(ctx, recorded, masked)
    return {
        "python": python_stack.interpreter_summary(interpreter),
        "packages": python_stack.package_summary(packages),
        "cann": ascend_stack.cann_summary(cann, set_env),
        "driver": driver,
        "firmware": firmware,
        "pairing": pairing,
        "devices": list(info.devices) if info is not None else [],
        "processes": [npu.process_row(p) for p in info.processes] if info is not None else [],
        "cards": cards,
        "environment": recorded,
    }
