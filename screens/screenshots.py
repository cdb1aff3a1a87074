"""The record's screenshots, made on the UI side and handed to the export as a plain callable.

`export_session(..., screenshots=shooter(root, sid))`: the export (pure core) calls it with the
folder to fill. It runs `python -m screens.render_svgs` as a child process, so that a failure there
(no textual on a board's interpreter, a screen that raises) costs the record its pictures, never the
record itself, and the process that asked never loads the app for it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict

RENDER_TIMEOUT_S = 90.0


def render_in_child(root: Path, sid: str, out_dir: Path, timeout_s: float = RENDER_TIMEOUT_S) -> Dict[str, Any]:
    """Render the screens into out_dir in a child process; {"files": [names in out_dir], "error": ...}, never raises."""
    argv = [sys.executable, "-m", "screens.render_svgs", str(root), sid, str(out_dir)]
    env = dict(os.environ, TEXTUAL_ANIMATIONS="none")
    project = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (project, env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        return {"files": [], "error": "the screen renderer did not finish within %.0f s" % timeout_s}
    except OSError as exc:
        return {"files": [], "error": "could not start the screen renderer: %s" % exc}
    for line in reversed(proc.stdout.splitlines()):
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict):
            return result
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"files": [], "error": "screen renderer exited %s: %s" % (proc.returncode, tail[:300])}


def shooter(root: Path, sid: str, timeout_s: float = RENDER_TIMEOUT_S) -> Callable[[Path], Dict[str, Any]]:
    """The screenshots callable `export_session(..., screenshots=...)` takes, for one session."""
    return functools.partial(render_in_child, Path(root), sid, timeout_s=timeout_s)
