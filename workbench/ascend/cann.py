"""Find the CANN toolkit, read its version files, tell whether set_env.sh was sourced.

Every function takes the environment as a mapping and a filesystem `root` (default "/"),
so a test can point it at a temporary tree. Fixed locations such as /usr/local/Ascend are
looked up under `root`; paths taken from environment variables are used as given, unless
they are absolute paths outside `root`, which are then looked up under `root` as well.
Results are plain dicts that list every path looked at.
"""

from __future__ import annotations

import glob
import os
import platform
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from workbench.ascend.fwcompat import (  # noqa: F401  (re-exported: callers read them from cann)
    compatibility_verdict,
    driver_in_firmware_range,
    firmware_in_driver_range,
    in_ranges,
)
from workbench.ascend.libpath import (  # noqa: F401
    DRIVER_LIBRARY,
    driver_libraries,
    libraries_in_error,
    same_dir,
    under_root,
)
from workbench.events.protocol import Evidence

ASCEND_ROOT = "/usr/local/Ascend"
USUAL_HOMES = (
    "/usr/local/Ascend/ascend-toolkit/latest",
    "/usr/local/Ascend/cann",  # CANN 8.5+ sources ${LOCAL_ASCEND}/cann/set_env.sh
    "/usr/local/Ascend/nnae/latest",
    "/usr/local/Ascend/latest",
)
VERSIONED_HOME_GLOB = "/usr/local/Ascend/cann-*"  # CANN 8.5+: /usr/local/Ascend/cann-<version>
DRIVER_INFOS = ("/usr/local/Ascend/driver/version.info", "/var/davinci/driver/version.info")  # second: 310B boards
FIRMWARE_INFOS = ("/usr/local/Ascend/firmware/version.info",)
SEARCH_PATH_VARIABLES = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")
COMPONENT_INFOS = ("toolkit", "compiler", "runtime", "opp", "opp_kernel")
_CFG_RE = re.compile(r"^(\w+?)_(running|upgrade|installed)_version=(.*)$")
_CFG_PAIR_RE = re.compile(r"\[([^\]:]+):([^\]]+)\]")


def parse_key_values(text: str) -> Dict[str, str]:
    """`key=value` lines (also `key : value`); comments, prompts and blank lines are skipped."""
    found: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=" if "=" in line else ":")
        if sep and key.strip():
            found[key.strip()] = value.strip().strip('"')
    return found


def parse_install_info(text: str) -> Dict[str, str]:
    """Parse ascend_toolkit_install.info (package_name, version, innerversion, arch, os, path)."""
    return parse_key_values(text)


def parse_version_info(text: str) -> Dict[str, Any]:
    """Parse a driver/firmware/component version.info; adds `version` from `Version=`."""
    fields = parse_key_values(text)
    return {
        "version": fields.get("Version"),
        "package_version": fields.get("package_version"),
        "version_dir": fields.get("version_dir"),
        "fields": fields,
    }


def parse_version_cfg(text: str) -> Dict[str, Any]:
    """Parse version.cfg: `<part>_<state>_version=[internal:cann]` lines.

    Returns {entries: {part: {state: [[internal, cann], ...]}}, cann_version, internal_version}
    where the two versions come from the toolkit's running entry (else the first running one).
    """
    entries: Dict[str, Dict[str, List[List[str]]]] = {}
    for line in text.splitlines():
        m = _CFG_RE.match(line.strip())
        if m:
            pairs = [[a.strip(), b.strip()] for a, b in _CFG_PAIR_RE.findall(m.group(3))]
            entries.setdefault(m.group(1), {})[m.group(2)] = pairs
    running = entries.get("toolkit", {}).get("running") or next(
        (states["running"] for states in entries.values() if states.get("running")), None
    )
    return {
        "entries": entries,
        "internal_version": running[0][0] if running else None,
        "cann_version": running[0][1] if running else None,
    }


def _read(path: str) -> Optional[str]:
    """File text, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _version_key(name: str) -> Tuple:
    """Sort key for versions such as 8.5.0 or 8.0.RC3 (numbers compare as numbers)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-]", name))


def _home_candidates(env: Mapping[str, str], root: str) -> List[Tuple[str, str]]:
    """(source, path) pairs to try, in order: env variables, usual homes, cann-<ver>, $HOME."""
    found = []
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if env.get(var):
            found.append((var, under_root(env[var], root)))
    for home in USUAL_HOMES:
        found.append(("usual", under_root(home, root)))
    versioned = glob.glob(under_root(VERSIONED_HOME_GLOB, root))
    for path in sorted(versioned, key=lambda p: _version_key(os.path.basename(p)[5:]), reverse=True):
        found.append(("usual", path))
    if env.get("HOME"):
        found.append(("usual", under_root(os.path.join(env["HOME"], "Ascend", "ascend-toolkit", "latest"), root)))
    return found


def find_toolkit(env: Optional[Mapping[str, str]] = None, root: str = "/") -> Dict[str, Any]:
    """Locate the CANN toolkit home and read its version files; says what was looked at."""
    env = os.environ if env is None else env
    result: Dict[str, Any] = {
        "found": False,
        "home": None,
        "source": None,
        "looked_at": [],
        "version": None,
        "version_from": None,
        "internal_version": None,
        "install_info": None,
        "version_cfg": None,
        "components": {},
        "missing": [],
    }
    for source, path in _home_candidates(env, root):
        exists = os.path.isdir(path)
        result["looked_at"].append({"path": path, "source": source, "exists": exists})
        if exists and not result["found"]:
            result.update(found=True, home=path, source=source)
    home = result["home"]
    if home is None:
        result["missing"] = [entry["path"] for entry in result["looked_at"]]
        return result
    machine = platform.machine()
    infos = sorted(
        glob.glob(os.path.join(home, "*-linux", "ascend_toolkit_install.info")),
        key=lambda p: not os.path.basename(os.path.dirname(p)).startswith(machine),
    )
    if infos:
        result["install_info"] = dict(parse_install_info(_read(infos[0]) or ""), file=infos[0])
    else:
        result["missing"].append(os.path.join(home, "<arch>-linux", "ascend_toolkit_install.info"))
    cfg_path = os.path.join(home, "version.cfg")
    cfg_text = _read(cfg_path)
    if cfg_text is not None:
        result["version_cfg"] = dict(parse_version_cfg(cfg_text), file=cfg_path)
    else:
        result["missing"].append(cfg_path)
    for part in COMPONENT_INFOS:
        text = _read(os.path.join(home, part, "version.info"))
        if text is not None:
            result["components"][part] = parse_version_info(text)
    _pick_version(result, home)
    return result


def _pick_version(result: Dict[str, Any], home: str) -> None:
    """Fill version/internal_version from the most direct source available."""
    info, cfg, parts = result["install_info"], result["version_cfg"], result["components"]
    real = os.path.basename(os.path.realpath(home))
    choices = [
        (info or {}).get("version"),
        "ascend_toolkit_install.info",
        (cfg or {}).get("cann_version"),
        "version.cfg",
        parts.get("toolkit", {}).get("version_dir"),
        "toolkit/version.info",
        real[5:] if real.startswith("cann-") else None,
        "directory name",
    ]
    for value, where in zip(choices[::2], choices[1::2]):
        if value:
            result["version"], result["version_from"] = value, where
            break
    result["internal_version"] = (
        (cfg or {}).get("internal_version")
        or parts.get("compiler", {}).get("version")
        or parts.get("toolkit", {}).get("version")
    )


def _set_env_expectations(home: str, driver: str, arch: str) -> List[Tuple[str, str, bool]]:
    """(variable, expected path, required) as CANN 8.0.0's ascend-toolkit/set_env.sh sets them.

    Required entries are the ones MindSpore's own version check looks for (ccec compiler on
    PATH, tbe on PYTHONPATH, ASCEND_OPP_PATH) plus lib64, where libge_runner.so lives. The
    driver's three directories are listed as set_env.sh writes them but none is required on
    its own: whether the driver libraries are reachable is decided from where they are
    (see set_env_status).
    """
    j = os.path.join
    return [
        ("ASCEND_HOME_PATH", home, True),
        ("ASCEND_TOOLKIT_HOME", home, False),
        ("ASCEND_OPP_PATH", j(home, "opp"), True),
        ("ASCEND_AICPU_PATH", home, False),
        ("TOOLCHAIN_HOME", j(home, "toolkit"), False),
        ("LD_LIBRARY_PATH", j(driver, "lib64"), False),
        ("LD_LIBRARY_PATH", j(driver, "lib64", "common"), False),
        ("LD_LIBRARY_PATH", j(driver, "lib64", "driver"), False),
        ("LD_LIBRARY_PATH", j(home, "lib64"), True),
        ("LD_LIBRARY_PATH", j(home, "lib64", "plugin", "opskernel"), False),
        ("LD_LIBRARY_PATH", j(home, "lib64", "plugin", "nnengine"), False),
        (
            "LD_LIBRARY_PATH",
            j(home, "opp", "built-in", "op_impl", "ai_core", "tbe", "op_tiling", "lib", "linux", arch),
            False,
        ),
        ("LD_LIBRARY_PATH", j(home, "tools", "aml", "lib64"), False),
        ("LD_LIBRARY_PATH", j(home, "tools", "aml", "lib64", "plugin"), False),
        ("PYTHONPATH", j(home, "python", "site-packages"), False),
        ("PYTHONPATH", j(home, "opp", "built-in", "op_impl", "ai_core", "tbe"), True),
        ("PATH", j(home, "bin"), False),
        ("PATH", j(home, "compiler", "ccec_compiler", "bin"), True),
        ("PATH", j(home, "tools", "ccec_compiler", "bin"), False),
    ]


def _norm(path: str) -> str:
    """Path compared as text: normalised, no trailing slash."""
    return os.path.normpath(path) if path else path


def set_env_status(
    env: Optional[Mapping[str, str]] = None, root: str = "/", arch: Optional[str] = None
) -> Dict[str, Any]:
    """Was set_env.sh sourced? Each variable and search-path entry it sets: present, existing.

    Returns {status, sourced, home, detail, checks: [{variable, expected, present, exists,
    required}], missing: [text], driver_libraries}; status is observed-pass only when every
    required entry is present and its directory exists. The driver entry is decided from where
    libascend_hal.so is (`driver_libraries`: reachable_in, installed_in, detail).
    """
    env = os.environ if env is None else env
    arch = arch or platform.machine()
    home_var = next((v for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME") if env.get(v)), None)
    if home_var is None:
        return {
            "status": Evidence.FAIL,
            "sourced": False,
            "home": None,
            "checks": [],
            "driver_libraries": driver_libraries(env, root),
            "missing": ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"],
            "driver_library": driver_library_verdict(driver_libraries(env, root)),
            "detail": "set_env.sh not sourced: ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME are unset",
        }
    home = _norm(under_root(env[home_var], root))
    driver = under_root(os.path.join(ASCEND_ROOT, "driver"), root)
    checks, missing = [], []
    for variable, expected, required in _set_env_expectations(home, driver, arch):
        value = env.get(variable, "")
        if variable in SEARCH_PATH_VARIABLES:
            # One directory under two names (ascend-toolkit/latest and the version it links to) is one entry.
            entries = [_norm(under_root(p, root)) for p in value.split(os.pathsep) if p]
            actual = next((p for p in entries if same_dir(p, expected)), expected)
            present = any(same_dir(p, expected) for p in entries)
        else:
            present = bool(value)
            actual = _norm(under_root(value, root)) if value else expected
        exists = os.path.isdir(actual)
        checks.append(
            {
                "variable": variable,
                "expected": expected,
                "actual": actual if present else None,
                "present": present,
                "exists": exists,
                "required": required,
            }
        )
        if required and not (present and exists):
            missing.append(
                "%s: %s %s" % (variable, actual if present else expected, "does not exist" if present else "not set")
            )
    libs = _driver_library_check(env, root, driver, checks)
    checks.append(libs["check"])
    if libs["missing"]:
        missing.append(libs["missing"])
    status = Evidence.PASS if not missing else Evidence.FAIL
    if missing:
        detail = "set_env.sh effects missing: " + "; ".join(missing)
    elif libs["found"]["reachable"]:
        detail = "set_env.sh effects present for %s (from %s); driver libraries: %s" % (home, home_var, libs["detail"])
    else:
        # Nothing to reach: the library's absence is the driver-library verdict, not a set_env.sh one.
        detail = (
            "set_env.sh effects present for %s (from %s), the driver's directories included; whether %s "
            "is there is the driver-library check" % (home, home_var, DRIVER_LIBRARY)
        )
    return {
        "status": status,
        "sourced": not missing,
        "home": home,
        "checks": checks,
        "missing": missing,
        "detail": detail,
        "driver_libraries": libs["found"],
        "driver_library": driver_library_verdict(libs["found"]),
    }


def driver_library_verdict(found: Mapping[str, Any]) -> Dict[str, Any]:
    """{status, detail}: is the driver's libascend_hal.so where the dynamic linker finds it?"""
    return {"status": Evidence.PASS if found["reachable"] else Evidence.FAIL, "detail": found["detail"]}


def _driver_library_check(
    env: Mapping[str, str], root: str, driver: str, checks: List[Dict[str, Any]]
) -> Dict[str, Any]:
    """The required LD_LIBRARY_PATH check, decided from where libascend_hal.so is.

    Reachable: pass, wherever it is. Installed but unreachable: name the directory. Not
    installed at all: a driver problem, not a set_env.sh one; the entry then counts as set
    when any of the driver directories set_env.sh adds is on the path.
    """
    found = driver_libraries(env, root)
    check = {
        "variable": "LD_LIBRARY_PATH",
        "expected": "a directory holding %s" % DRIVER_LIBRARY,
        "actual": found["reachable_in"][0] if found["reachable"] else None,
        "present": found["reachable"],
        "exists": bool(found["installed_in"]),
        "required": True,
        "rule": "driver-libraries",
    }
    missing = None
    if not found["reachable"] and found["installed_in"]:
        missing = "LD_LIBRARY_PATH: " + found["detail"]
    elif not found["reachable"]:
        driver_dirs = [c for c in checks if c["variable"] == "LD_LIBRARY_PATH" and c["expected"].startswith(driver)]
        check["present"] = any(c["present"] for c in driver_dirs)
        if not check["present"]:
            missing = "LD_LIBRARY_PATH: no driver library directory (%s) and %s" % (
                ", ".join(c["expected"] for c in driver_dirs),
                found["detail"],
            )
    return {"check": check, "missing": missing, "found": found, "detail": found["detail"]}


def _first_info(paths: Tuple[str, ...], root: str) -> Dict[str, Any]:
    """Read the first existing version.info of `paths`; list every path tried."""
    looked_at = []
    for logical in paths:
        path = under_root(logical, root)
        text = _read(path)
        looked_at.append({"path": path, "exists": text is not None})
        if text is not None:
            return dict(parse_version_info(text), found=True, path=path, looked_at=looked_at)
    return {
        "found": False,
        "path": None,
        "version": None,
        "package_version": None,
        "version_dir": None,
        "fields": {},
        "looked_at": looked_at,
    }


def driver_status(
    root: str = "/", driver_version: Optional[str] = None, firmware_version: Optional[str] = None
) -> Dict[str, Any]:
    """Driver and firmware version.info (incl. /var/davinci/driver on 310B boards) and their fit, both ways.

    `driver_version` / `firmware_version` stand in for a missing file (npu-smi's title line
    carries the driver version, `npu-smi info -t board` the firmware's).
    """
    driver = _first_info(DRIVER_INFOS, root)
    firmware = _first_info(FIRMWARE_INFOS, root)
    missing = [entry["path"] for part in (driver, firmware) if not part["found"] for entry in part["looked_at"]]
    verdict = compatibility_verdict(driver, firmware, driver_version, firmware_version)
    return {
        "sources": driver_sources_verdict(driver, driver_version),
        "driver": driver,
        "firmware": firmware,
        "firmware_in_driver_range": verdict["sides"][0]["fits"],
        "driver_in_firmware_range": verdict["sides"][1]["fits"],
        "compatibility": verdict,
        "missing": missing,
    }


def driver_sources_verdict(driver: Mapping[str, Any], smi_version: Optional[str]) -> Dict[str, Any]:
    """{status, detail}: do the driver's version.info and npu-smi's title name the same driver?

    not-run when either is missing; observed-fail naming both when they differ (a container's
    mounted driver files that are not the host's driver, or a half-upgraded driver).
    """
    file_version = driver.get("version") if driver.get("found") else None
    if file_version is None or smi_version is None:
        return {
            "status": Evidence.NOT_RUN,
            "detail": "not compared: %s"
            % ("npu-smi printed no driver version" if file_version else "no driver version.info version"),
        }
    if file_version.strip().lower() == smi_version.strip().lower():
        return {"status": Evidence.PASS, "detail": "npu-smi prints driver %s too" % smi_version}
    return {
        "status": Evidence.FAIL,
        "detail": "%s says driver %s but npu-smi prints %s" % (driver.get("path"), file_version, smi_version),
    }
