"""Where the Ascend libraries are, and whether the dynamic linker can reach them.

Whether "the driver is on LD_LIBRARY_PATH" is decided from where its libraries actually are,
never from one literal directory: set_env.sh adds driver/lib64, lib64/common and lib64/driver,
containers mount only lib64/common and lib64/driver, and libascend_hal.so (the library
MindSpore loads from <driver>/lib64/driver) is reachable when some search directory holds it.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, Dict, List, Mapping, Sequence, Tuple

DRIVER_LIBRARY = "libascend_hal.so"
DRIVER_LIB_DIRS = ("lib64", "lib64/driver", "lib64/common")
DEFAULT_LINKER_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
_NAMED_RE = re.compile(r"(lib[\w.+-]+?\.so(?:\.\d+)*): cannot open shared object file")


def under_root(path: str, root: str = "/") -> str:
    """`path` as seen from `root` (paths already inside root are kept)."""
    if root in ("", "/") or not os.path.isabs(path):
        return path
    root_abs = os.path.abspath(root)
    if os.path.abspath(path) == root_abs or os.path.abspath(path).startswith(root_abs + os.sep):
        return path
    return os.path.join(root_abs, path.lstrip("/"))


def dir_key(path: str) -> Tuple[Any, ...]:
    """What identifies a directory: its device and inode when it exists, else its resolved path."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def same_dir(a: str, b: str) -> bool:
    """Do two names reach one directory (ascend-toolkit/latest and the version it links to)?"""
    return dir_key(a) == dir_key(b)


def unique_dirs(dirs: Sequence[str]) -> List[str]:
    """`dirs` in order, each directory once whatever names it is reached under (the first name kept)."""
    seen, out = set(), []
    for d in dirs:
        key = dir_key(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _ld_so_conf_dirs(root: str) -> List[str]:
    """Directories /etc/ld.so.conf (and the files it includes) adds to the linker's search."""
    found: List[str] = []
    pending, seen = [under_root("/etc/ld.so.conf", root)], set()
    while pending:
        path = pending.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pending.extend(sorted(glob.glob(under_root(line.split(None, 1)[1], root))))
            elif line.startswith("/"):
                found.append(under_root(line, root))
    return found


def search_dirs(env: Mapping[str, str], root: str = "/") -> List[Tuple[str, str]]:
    """(directory, source) in the order the dynamic linker tries them: LD_LIBRARY_PATH, ld.so.conf, defaults."""
    out: List[Tuple[str, str]] = []
    for entry in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if entry:
            out.append((os.path.normpath(under_root(entry, root)), "LD_LIBRARY_PATH"))
    out += [(os.path.normpath(d), "ld.so.conf") for d in _ld_so_conf_dirs(root)]
    out += [(under_root(d, root), "default") for d in DEFAULT_LINKER_DIRS]
    return out


def install_dirs(env: Mapping[str, str], root: str = "/") -> List[str]:
    """Where Ascend libraries are installed: the driver's lib dirs and the toolkit home's lib64 dirs."""
    driver = under_root("/usr/local/Ascend/driver", root)
    dirs = [os.path.join(driver, d) for d in DRIVER_LIB_DIRS]
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if env.get(var):
            home = os.path.normpath(under_root(env[var], root))
            dirs += [os.path.join(home, "lib64"), os.path.join(home, "lib64", "plugin", "opskernel")]
    dirs.append(under_root("/usr/local/Ascend/ascend-toolkit/latest/lib64", root))
    return unique_dirs([os.path.normpath(d) for d in dirs])


def locate(name: str, env: Mapping[str, str], root: str = "/", extra: Sequence[str] = ()) -> Dict[str, Any]:
    """{name, reachable, reachable_in, via, installed_in}: the search dirs holding `name`, and where it is installed."""
    searched = search_dirs(env, root)
    hits, seen = [], set()
    for d, source in searched:
        if os.path.isfile(os.path.join(d, name)) and dir_key(d) not in seen:
            seen.add(dir_key(d))
            hits.append((d, source))
    installed = [
        d for d in unique_dirs(list(install_dirs(env, root)) + list(extra)) if os.path.isfile(os.path.join(d, name))
    ]
    return {
        "name": name,
        "reachable": bool(hits),
        "reachable_in": [d for d, _ in hits],
        "via": [source for _, source in hits],
        "installed_in": installed,
    }


def unreachable_text(found: Mapping[str, Any]) -> str:
    """'libX.so is in D, which no LD_LIBRARY_PATH entry names' or 'libX.so not found in ...'."""
    if found["installed_in"]:
        return "%s is in %s, which no LD_LIBRARY_PATH entry names" % (found["name"], ", ".join(found["installed_in"]))
    return "%s not found (not on the linker's search path, not in the Ascend install directories)" % found["name"]


def driver_libraries(env: Mapping[str, str], root: str = "/") -> Dict[str, Any]:
    """Is the driver's libascend_hal.so reachable? locate() plus a one-line `detail`."""
    found = locate(DRIVER_LIBRARY, env, root)
    if found["reachable"]:
        detail = "%s reachable in %s (%s)" % (DRIVER_LIBRARY, found["reachable_in"][0], found["via"][0])
    elif found["installed_in"]:
        detail = unreachable_text(found)
    else:
        detail = "%s not found under %s: the driver is not installed, or not mounted into this container" % (
            DRIVER_LIBRARY,
            under_root("/usr/local/Ascend/driver/lib64", root),
        )
    return dict(found, detail=detail)


def libraries_in_error(text: str, env: Mapping[str, str], root: str = "/") -> Dict[str, Any]:
    """The libraries an error says it could not open, each located: {named, libraries, unreachable, detail}.

    A named library that is reachable means the failure is not a missing search path (the
    library is broken or its own dependencies are missing), so it is no reason to blame set_env.sh.
    """
    named = list(dict.fromkeys(m.group(1) for m in _NAMED_RE.finditer(text or "")))
    libraries = [locate(name, env, root) for name in named]
    unreachable = [lib["name"] for lib in libraries if not lib["reachable"]]
    parts = [
        unreachable_text(lib)
        if not lib["reachable"]
        else "%s is reachable in %s: not a missing search path" % (lib["name"], lib["reachable_in"][0])
        for lib in libraries
    ]
    return {
        "named": named,
        "libraries": libraries,
        "unreachable": unreachable,
        "detail": "; ".join(parts) or "the error names no library",
    }
