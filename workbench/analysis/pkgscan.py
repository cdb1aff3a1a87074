"""Find every copy of a Python package on a search path and name the one that wins.

Two MindSpore copies on one board (a user-site wheel over a conda one, or a stale
dist-info left behind) are the most common false fault: a version without its path says
nothing. This module looks at files only — it never imports the packages it reports on.
Pure code for Python 3.9.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

try:  # Python 3.8+
    from importlib import metadata as _metadata
except ImportError:  # pragma: no cover - older interpreters are not supported by the jobs anyway
    _metadata = None  # type: ignore[assignment]  # the module or None: callers check for None

WATCHED = ("mindspore", "numpy", "mindspore_lite", "mindnlp", "textual")
# MindSpore releases whose C extension is built against NumPy 1.x, up to the newest one measured:
# 2.10.0 fails its first op with a Python scalar under NumPy 2 ("A module that was compiled using
# NumPy 1.x cannot be run in NumPy 2..."), see MINDSPORE-NOTES.md.
NUMPY1_MINDSPORE_UP_TO = (2, 10, 0)
_VERSION_LINE = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)
_DUNDER_VERSION = re.compile(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)


# Distributions that install a package under another name: MindSpore's nightly/dev builds
# (mindspore-dev, e.g. 2.5.0.dev20250202) install the same `mindspore` package.
DIST_ALIASES = {"mindspore": ("mindspore_dev",)}


def normalize(name: str) -> str:
    """Distribution/import name compared as text: 'MindSpore-Lite' -> 'mindspore_lite'."""
    return re.sub(r"[-_.]+", "_", name).lower()


def version_tuple(text: Optional[str], width: int = 3) -> Optional[Tuple[int, ...]]:
    """Leading numbers of a version: '2.6.0rc1' -> (2, 6, 0); None when it has none."""
    if not text:
        return None
    numbers = []
    for piece in str(text).split(".")[:width]:
        m = re.match(r"\d+", piece)
        if not m:
            break
        numbers.append(int(m.group(0)))
    return tuple(numbers) if numbers else None


def _read(path: str, limit: int = 65536) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return None


def dist_version(path: str) -> Optional[str]:
    """Version of a .dist-info/.egg-info (dir or file): its METADATA/PKG-INFO, else its name."""
    if os.path.isdir(path):
        text = _read(os.path.join(path, "METADATA")) or _read(os.path.join(path, "PKG-INFO"))
    else:
        text = _read(path)
    m = _VERSION_LINE.search(text or "")
    if m:
        return m.group(1)
    base = os.path.basename(path).rsplit(".", 1)[0]  # name-1.2.3(-py3.9)
    parts = base.split("-")
    return parts[1] if len(parts) > 1 else None


def dist_requires(path: str) -> List[str]:
    """`Requires-Dist:` lines of a .dist-info's METADATA."""
    text = _read(os.path.join(path, "METADATA")) if os.path.isdir(path) else None
    return [line.split(":", 1)[1].strip() for line in (text or "").splitlines() if line.startswith("Requires-Dist:")]


def scan_entry(entry: str, name: str) -> Dict[str, Any]:
    """What one search-path entry holds for `name`: the importable module and every distribution."""
    found: Dict[str, Any] = {"entry": entry, "module": None, "dists": []}
    try:
        names = sorted(os.listdir(entry or "."))
    except OSError:
        return found
    want = {normalize(name)} | set(DIST_ALIASES.get(normalize(name), ()))
    for item in names:
        path = os.path.join(entry, item)
        stem, dot, suffix = item.partition(".")
        if item == name and os.path.isdir(path):
            found["module"] = path
        elif stem == name and dot and (suffix == "py" or suffix.endswith(("so", "pyd"))) and found["module"] is None:
            found["module"] = path
        elif item.endswith((".dist-info", ".egg-info")) and normalize(item.split("-", 1)[0]) in want:
            kind = "dist-info" if item.endswith(".dist-info") else "egg-info"
            found["dists"].append({"path": path, "kind": kind, "version": dist_version(path)})
    return found


def module_version(module_path: Optional[str]) -> Optional[str]:
    """`__version__` written literally in <pkg>/version.py or <pkg>/__init__.py (read, not imported)."""
    if not module_path or not os.path.isdir(module_path):
        return None
    for filename in ("version.py", "_version.py", "__init__.py"):
        m = _DUNDER_VERSION.search(_read(os.path.join(module_path, filename)) or "")
        if m:
            return m.group(1)
    return None


def find_origin(name: str, paths: Optional[Sequence[str]] = None) -> Optional[str]:
    """Where `import name` would load from, without importing it (paths None: this process's sys.path)."""
    try:
        if paths is None:
            spec = importlib.util.find_spec(name)
        else:
            spec = importlib.machinery.PathFinder.find_spec(name, list(paths))
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        return locations[0] if locations else None
    return spec.origin


def label_entry(entry: str, user_site: Optional[str], site_dirs: Sequence[str], pythonpath: Sequence[str]) -> str:
    """Name a search-path entry: 'user site', 'PYTHONPATH', 'site-packages' or 'other'."""
    norm = os.path.normpath(os.path.abspath(entry or "."))

    def same(other: Optional[str]) -> bool:
        return bool(other) and os.path.normpath(os.path.abspath(str(other))) == norm

    if same(user_site):
        return "user site"
    if any(same(p) for p in pythonpath):
        return "PYTHONPATH"
    if any(same(p) for p in site_dirs):
        return "site-packages"
    return "other"


def package_report(
    name: str,
    paths: Sequence[str],
    labels: Optional[Dict[str, str]] = None,
    origin: Optional[str] = None,
    metadata_version: Optional[str] = None,
) -> Dict[str, Any]:
    """Every copy of `name` on `paths`, which one wins, its version and where that version came from.

    `origin` is where the import system would load `name` from (find_origin); the winning copy is
    the path entry that contains it, and its version comes from a distribution in that same entry
    (not from the first distribution anywhere on the path, which may belong to a stale copy).
    """
    labels = labels or {}
    copies = []
    for entry in paths:
        found = scan_entry(entry, name)
        if found["module"] or found["dists"]:
            found["label"] = labels.get(entry, "other")
            copies.append(found)
    win = None
    if origin:
        origin_norm = os.path.normpath(os.path.abspath(origin))
        for copy in copies:
            base = os.path.normpath(os.path.abspath(copy["entry"] or "."))
            if origin_norm == base or origin_norm.startswith(base + os.sep):
                win = copy
                break
    for copy in copies:
        copy["wins"] = copy is win
    version, version_from = None, None
    if win is not None and win["dists"]:
        version, version_from = win["dists"][-1]["version"], win["dists"][-1]["path"]
    module_dir = win["module"] if win is not None else (os.path.dirname(origin) if origin else None)
    if version is None and origin:
        version = module_version(module_dir if module_dir and os.path.isdir(module_dir) else None)
        version_from = os.path.join(module_dir, "version.py") if version and module_dir else None
    dist_count = sum(max(len(c["dists"]), 1 if c["module"] else 0) for c in copies)
    report = {
        "name": name,
        "found": origin is not None,
        "version": version,
        "version_from": version_from,
        "path": (win["module"] if win is not None and win["module"] else origin),
        "entry": win["entry"] if win is not None else None,
        "label": win["label"] if win is not None else None,
        "metadata_version": metadata_version,
        "copies": copies,
        "duplicates": dist_count > 1,
        "requires": dist_requires(version_from) if version_from and version_from.endswith(".dist-info") else [],
    }
    return report


def metadata_version(name: str) -> Optional[str]:
    """importlib.metadata's answer (the first distribution on sys.path, right or not)."""
    if _metadata is None:
        return None
    try:
        return _metadata.version(name)
    except Exception:  # PackageNotFoundError, or a broken METADATA
        return None


def duplicates_text(report: Dict[str, Any]) -> str:
    """One line naming the copy that wins and the ones that do not."""
    parts = []
    for copy in report["copies"]:
        versions = ", ".join(str(d["version"]) for d in copy["dists"]) or "no dist-info"
        what = "package" if copy["module"] else "metadata only"
        parts.append(
            "%s%s (%s, %s) in %s" % ("WINS: " if copy["wins"] else "", versions, what, copy["label"], copy["entry"])
        )
    return "; ".join(parts)


def numpy_abi_verdict(
    ms_version: Optional[str], numpy_version: Optional[str], python: str = "python"
) -> Dict[str, Any]:
    """{status, detail, hint}: NumPy 2 next to a MindSpore built for NumPy 1 is a failure with its fix."""
    if not numpy_version:
        return {
            "status": "observed-fail" if ms_version else "not-run",
            "detail": "numpy is not importable" + (" but MindSpore needs it" if ms_version else ""),
            "hint": "%s -m pip install 'numpy<2'" % python if ms_version else None,
        }
    if not ms_version:
        return {
            "status": "not-run",
            "detail": "numpy %s; MindSpore not found, nothing to pair with" % numpy_version,
            "hint": None,
        }
    np_v, ms_v = version_tuple(numpy_version), version_tuple(ms_version)
    if np_v is None or ms_v is None:
        return {
            "status": "not-run",
            "detail": "cannot read numpy %r / MindSpore %r as versions" % (numpy_version, ms_version),
            "hint": None,
        }
    if np_v[0] < 2:
        return {
            "status": "observed-pass",
            "hint": None,
            "detail": "numpy %s is a 1.x release, as MindSpore %s's extension expects" % (numpy_version, ms_version),
        }
    if ms_v <= NUMPY1_MINDSPORE_UP_TO:
        return {
            "status": "observed-fail",
            "detail": "numpy %s next to MindSpore %s, whose extension is built against NumPy 1.x: the first op "
            'with a Python scalar fails ("A module that was compiled using NumPy 1.x cannot be run '
            'in NumPy 2")' % (numpy_version, ms_version),
            "hint": "%s -m pip install 'numpy<2'" % python,
        }
    return {
        "status": "not-run",
        "hint": None,
        "detail": "numpy %s with MindSpore %s: not known whether this MindSpore is built for NumPy 2; "
        "the device probes run real ops and show it" % (numpy_version, ms_version),
    }
