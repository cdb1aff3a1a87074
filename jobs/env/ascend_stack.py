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
    """`cann-toolkit` (found, its version) and `cann-set-env` (whether set_env.sh was sourced)."""
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
    """`driver` and `firmware` version.info (incl. /var/davinci/driver on 310B), and their fit both ways."""
    driver, firmware, compat = status["driver"], status["firmware"], status["compatibility"]
    needed = target == "Ascend"
    if driver["found"]:
        ctx.check(
            "driver",
            "Driver",
            Evidence.PASS,
            "driver %s (%s)" % (driver["version"], driver["path"]),
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
    evidence = dict(firmware, compatibility=compat)
    if firmware["found"] and compat["status"] == Evidence.NOT_RUN:  # present; neither side lists a range
        ctx.check(
            "firmware",
            "Firmware",
            Evidence.PASS,
            "firmware %s (%s); %s" % (firmware["version"], firmware["path"], compat["detail"]),
            evidence=evidence,
            group="driver",
        )
    elif firmware["found"] or compat["status"] != Evidence.NOT_RUN:
        # the verdict reads both files' ranges (driver's compatible_version_fw, firmware's
        # compatible_version_drv) and names the side it could not check
        where = " (%s)" % firmware["path"] if firmware["found"] else " (from npu-smi)"
        ctx.check(
            "firmware",
            "Firmware",
            compat["status"],
            "firmware %s%s: %s" % (compat["firmware"], where, compat["detail"]),
            evidence=evidence,
            hint=compat["hint"],
            group="driver",
        )
    else:
        ctx.check(
            "firmware",
            "Firmware",
            Evidence.FAIL if needed else Evidence.NOT_RUN,
            "no firmware version.info: looked at %s; %s"
            % (", ".join(e["path"] for e in firmware["looked_at"]), compat["detail"]),
            evidence=evidence,
            hint="install the firmware package released with the driver" if needed else None,
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
