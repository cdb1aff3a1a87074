"""A folder of import roots holding only MindSpore, numpy and what they require: a colleague's bare runtime."""

from __future__ import annotations

import importlib.metadata as metadata
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Set

from packaging.markers import Marker

RUNTIME = ("mindspore", "numpy")


def _closure(names: List[str]) -> Set[str]:
    """The distributions `names` need, themselves included (extras and other platforms' needs left out)."""
    seen: Set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for req in metadata.distribution(name).requires or []:
            spec, _, marker = req.partition(";")
            if marker and not Marker(marker).evaluate({"extra": ""}):
                continue
            todo.append(re.split(r"[ <>=!~\[(]", spec.strip(), maxsplit=1)[0])
    return seen


def runtime_path(folder: Path) -> Path:
    """Symlink the top-level modules of MindSpore, numpy and their requirements into `folder`; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(_closure(list(RUNTIME))):
        dist = metadata.distribution(name)
        for top in sorted({Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}):
            src = Path(str(dist.locate_file(top)))
            if top != "__pycache__" and src.exists() and not (folder / top).exists():
                (folder / top).symlink_to(src)
    return folder


def run_bare(lib: Path, script: Path, cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    """Run `script` as __main__ in an isolated interpreter (-I -S: no site-packages, no PYTHONPATH) importing
    only from `lib` and the standard library; it then prints whether the workbench was importable."""
    code = (
        "import importlib.util, runpy, sys\n"
        "sys.path.insert(0, %r)\n"
        "sys.argv = [%r]\n"
        "try:\n"
        "    runpy.run_path(%r, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "else:\n"
        "    code = 0\n"
        "print('workbench importable:', importlib.util.find_spec('workbench') is not None)\n"
        "print('jobs importable:', importlib.util.find_spec('jobs') is not None)\n"
        "sys.exit(code)\n"
    ) % (str(lib), str(script), str(script))
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )
