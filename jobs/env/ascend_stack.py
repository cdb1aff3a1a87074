"""The Ascend side of the inventory: CANN toolkit, set_env.sh, driver, firmware, and the MindSpore ↔ CANN pairing."""

from __future__ import annotations

import os
from typing import Any, Dict, Tuple

from workbench.ascend import pairing
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext

VERSION_KEYS = ("found", "version", "package_version", "path")


# -- CANN and set_env.sh ---------------------------------------------------------------------------


def cann_summary(cann: Dict[str, Any], set_env: Dict[str, Any]) -> Dict[str, Any]:
    """The CANN facts for the summary."""
    return {
        "found": cann["found"],
        "home": cann["home"],
        "source": cann["source"],
        "version": cann["version"],
        "version_from": cann["version_from"],
        "internal_version": cann["internal_version"],
        "set_env": {"sourced": set_env["sourced"], "missing": set_env["missing"]},
        "looked_at": [e["path"] for e in cann["looked_at"]],
    }


def cann_checks(ctx: JobContext, target: str, cann: Dict[str, Any], set_env: Dict[str, Any]) -> None:
    """`cann-toolkit` (found, its version), `cann-set-env` (set_env.sh sourced) and `driver-library` (libascend_hal.so reachable)."""
    needed = target == "Ascend"
    if cann["found"] and cann["version"]:
        detail = "CANN %s (from %s) at %s, found via %s; internal version %s" % (
            cann["version"],
            cann["version_from"],
            cann["home"],
            cann["source"],
            cann["internal_version"],
        )
        ctx.check("cann-toolkit", "CANN toolkit", Evidence.PASS, detail, evidence=cann, group="cann")
    elif cann["found"]:
        ctx.check(
            "cann-toolkit",
            "CANN toolkit",
            Evidence.FAIL,
            "a toolkit directory at %s but no version file: %s" % (cann["home"], "; ".join(cann["missing"])),
            evidence=cann,
            hint="a partial or broken CANN install: reinstall the toolkit package",
            group="cann",
        )
    elif needed:
        ctx.check(
            "cann-toolkit",
            "CANN toolkit",
            Evidence.FAIL,
            "no CANN toolkit: looked at %s" % ", ".join(e["path"] for e in cann["looked_at"]),
            evidence=cann,
            hint="install the CANN toolkit that pairs with this MindSpore, or set ASCEND_HOME_PATH to it",
            group="cann",
        )
    else:
        ctx.check(
            "cann-toolkit",
            "CANN toolkit",
            Evidence.NOT_RUN,
            "no CANN toolkit found; not needed for target %s (looked at %d places)" % (target, len(cann["looked_at"])),
            evidence=cann,
            group="cann",
        )
    if not cann["found"] and not needed and not set_env.get("home"):
        ctx.check(
            "cann-set-env",
            "set_env.sh sourced",
            Evidence.NOT_RUN,
            "no CANN here and target %s: nothing to source" % target,
            evidence=set_env,
            group="cann",
        )
    else:
        hint = (
            None
            if set_env["status"] == Evidence.PASS
            else (
                "run `source %s` in the shell that starts ms-workbench (jobs inherit its environment); "
                "import mindspore may work without it, but execution fails" % set_env_script(cann)
            )
        )
        ctx.check(
            "cann-set-env",
            "set_env.sh sourced",
            set_env["status"],
            set_env["detail"],
            evidence=set_env,
            hint=hint,
            group="cann",
        )
    library = set_env["driver_library"]
    installed = bool(set_env["driver_libraries"]["installed_in"])
    if library["status"] == Evidence.FAIL and not needed:
        status, detail, hint = Evidence.NOT_RUN, "%s; not needed for target %s" % (library["detail"], target), None
    else:
        status, detail, hint = library["status"], library["detail"], None
        if status == Evidence.FAIL:
            hint = (
                "add the directory that holds it to LD_LIBRARY_PATH (set_env.sh does)"
                if installed
                else "install the Ascend driver (HDK), or mount /usr/local/Ascend/driver into the container"
            )
    ctx.check(
        "driver-library",
        "Driver library",
        status,
        detail,
        evidence=set_env["driver_libraries"],
        hint=hint,
        group="driver",
    )


def set_env_script(cann: Dict[str, Any]) -> str:
    """The set_env.sh to source: beside or inside the toolkit found, else the usual place."""
    home = cann.get("home")
    if home:
        for candidate in (os.path.join(os.path.dirname(home), "set_env.sh"), os.path.join(home, "set_env.sh")):
            if os.path.isfile(candidate):
                return candidate
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh"


# -- driver and firmware ---------------------------------------------------------------------------


def driver_summary(status: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(driver, firmware) facts for the summary; the firmware with the two-way compatibility verdict."""
    driver, firmware, compat = status["driver"], status["firmware"], status["compatibility"]
    return (
        {k: driver[k] for k in VERSION_KEYS},
        dict(
            {k: firmware[k] for k in VERSION_KEYS},
            in_driver_range=status["firmware_in_driver_range"],
            driver_in_firmware_range=status["driver_in_firmware_range"],
            compatibility={"status": compat["status"], "checked": compat["checked"], "detail": compat["detail"]},
        ),
    )


def driver_checks(ctx: JobContext, target: str, status: Dict[str, Any]) -> None:
    """`driver` (version.info, incl. /var/davinci/driver on 310B, against npu-smi's), `firmware`, and each
    direction of their fit as its own check, so a one-way check never reads as the whole."""
    driver, firmware, compat, sources = status["driver"], status["firmware"], status["compatibility"], status["sources"]
    needed = target == "Ascend"
    if driver["found"] and sources["status"] == Evidence.FAIL:
        ctx.check(
            "driver",
            "Driver",
            Evidence.FAIL,
            sources["detail"],
            evidence=dict(driver, npu_smi_version=compat["driver"] if compat["driver"] != driver["version"] else None),
            hint="the driver files this process reads are not the running driver's: mount the host's "
            "/usr/local/Ascend/driver into the container, or finish the driver upgrade and reboot",
            group="driver",
        )
    elif driver["found"]:
        ctx.check(
            "driver",
            "Driver",
            Evidence.PASS,
            "driver %s (%s); %s" % (driver["version"], driver["path"], sources["detail"]),
            evidence=driver,
            group="driver",
        )
    else:
        ctx.check(
            "driver",
            "Driver",
            Evidence.FAIL if needed else Evidence.NOT_RUN,
            "no driver version.info: looked at %s%s"
            % (
                ", ".join(e["path"] for e in driver["looked_at"]),
                "" if needed else "; not needed for target %s" % target,
            ),
            evidence=driver,
            hint="install the Ascend driver (HDK) or mount /usr/local/Ascend/driver into the container"
            if needed
            else None,
            group="driver",
        )
    if firmware["found"] or compat["firmware"]:
        where = firmware["path"] if firmware["found"] else "from npu-smi -t board"
        ctx.check(
            "firmware",
            "Firmware",
            Evidence.PASS,
            "firmware %s (%s)" % (compat["firmware"], where),
            evidence=firmware,
            group="driver",
        )
    else:
        ctx.check(
            "firmware",
            "Firmware",
            Evidence.FAIL if needed else Evidence.NOT_RUN,
            "no firmware version.info: looked at %s" % ", ".join(e["path"] for e in firmware["looked_at"]),
            evidence=firmware,
            hint="install the firmware package released with the driver" if needed else None,
            group="driver",
        )
    titles = {
        "driver's compatible_version_fw": "Driver admits firmware",
        "firmware's compatible_version_drv": "Firmware admits driver",
    }
    ids = {
        "driver's compatible_version_fw": "firmware-in-driver-range",
        "firmware's compatible_version_drv": "driver-in-firmware-range",
    }
    for side in compat["sides"]:
        ctx.check(
            ids[side["side"]],
            titles[side["side"]],
            side["status"],
            side["detail"],
            evidence=dict(side, pair=compat["status"]),
            hint=compat["hint"] if side["status"] == Evidence.FAIL else None,
            group="driver",
        )


# -- pairing ---------------------------------------------------------------------------------------


def pairing_facts(ms_version: Any, cann_version: Any) -> Dict[str, Any]:
    """MindSpore vs CANN against the pairing table (official and secondary rows named)."""
    verdict = pairing.pairing_verdict(ms_version, cann_version)
    rows = [
        {"mindspore": r["mindspore"], "cann": r["cann"], "source": r["source"], "ref": r["ref"]}
        for r in (pairing.rows_for(ms_version) if ms_version else [])
    ]
    return dict(verdict, mindspore=ms_version, cann=cann_version, rows=rows)


def pairing_check(ctx: JobContext, facts: Dict[str, Any]) -> None:
    """`pairing`: the verdict, with the table rows it was read from."""
    hint = None
    if facts["status"] == Evidence.FAIL:
        hint = "install CANN %s for MindSpore %s, or the MindSpore release that pairs with CANN %s" % (
            " or ".join(facts["expected_cann"]),
            facts["mindspore"],
            facts["cann"],
        )
    detail = facts["detail"]
    if facts["rows"]:
        detail += " [rows: %s]" % ", ".join(
            "%s→%s %s" % (r["mindspore"], r["cann"], r["source"]) for r in facts["rows"]
        )
    ctx.check("pairing", "MindSpore ↔ CANN pairing", facts["status"], detail, evidence=facts, hint=hint, group="cann")
