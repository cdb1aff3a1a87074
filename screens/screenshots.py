"""The record's screenshots, made on the UI side and handed to the export as a plain callable.

`export_session(..., screenshots=shooter(root, sid))`: the export (pure core) calls it with the
folder to fill and the session as it folded it. It runs `python -m screens.render_svgs` as a child
process, so that a failure there (no textual on a board's interpreter, a screen that raises) costs the
record its pictures, never the record itself, and the process that asked never loads the app for it.
The child is started when the shooter is made and builds the app and its screens while the export reads
the session; it then draws from the export's fold (workbench.fold.handoff), never reading the events files again.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from workbench.fold.handoff import FoldedSession

RENDER_TIMEOUT_S = 90.0


def _env() -> Dict[str, str]:
    env = dict(os.environ, TEXTUAL_ANIMATIONS="none")
    project = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (project, env.get("PYTHONPATH", "")) if p)
    return env


def _result(returncode: Optional[int], stdout: str, stderr: str) -> Dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict):
            return result
    tail = (stderr.strip().splitlines() or ["no output"])[-1]
    return {"files": [], "error": "screen renderer exited %s: %s" % (returncode, tail[:300])}


def render_in_child(root: Path, sid: str, out_dir: Path, timeout_s: float = RENDER_TIMEOUT_S) -> Dict[str, Any]:
    """Render the screens into out_dir in a child that reads the session itself; never raises."""
    argv = [sys.executable, "-m", "screens.render_svgs", str(root), sid, str(out_dir)]
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, env=_env()
        )
    except subprocess.TimeoutExpired:
        return {"files": [], "error": "the screen renderer did not finish within %.0f s" % timeout_s}
    except OSError as exc:
        return {"files": [], "error": "could not start the screen renderer: %s" % exc}
    return _result(proc.returncode, proc.stdout, proc.stderr)


class Shooter:
    """The screenshots callable for one session: a renderer child started at once, fed the export's fold."""

    def __init__(self, root: Path, sid: str, timeout_s: float = RENDER_TIMEOUT_S):
        self.root, self.sid, self.timeout_s = Path(root), sid, timeout_s
        self.proc: Optional[subprocess.Popen] = None
        self.start_error: Optional[str] = None
        argv = [sys.executable, "-m", "screens.render_svgs", str(self.root), sid, "-", "--folded"]
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()
            )
        except OSError as exc:
            self.start_error = "could not start the screen renderer: %s" % exc

    def __call__(self, out_dir: Path, folded: Optional[FoldedSession] = None) -> Dict[str, Any]:
        """Draw the screens into out_dir; {"files": [names in out_dir], "error": str or None}, never raises."""
        if folded is None:  # no fold to hand over: the child reads the session itself
            self.close()
            return render_in_child(self.root, self.sid, out_dir, self.timeout_s)
        if self.proc is None:
            return {"files": [], "error": self.start_error or "the screen renderer was already used"}
        proc, self.proc = self.proc, None
        payload = io.BytesIO()
        payload.write(str(out_dir).encode("utf-8") + b"\n")
        folded.dump(payload)
        try:
            out, err = proc.communicate(payload.getvalue(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return {"files": [], "error": "the screen renderer did not finish within %.0f s" % self.timeout_s}
        except OSError as exc:  # it died before reading its input (a broken pipe)
            proc.kill()
            out, err = proc.communicate()
            if proc.returncode is None:
                return {"files": [], "error": "the screen renderer stopped: %s" % exc}
        return _result(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def close(self) -> None:
        """Stop a child that was never used (the export failed or skipped its pictures)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.kill()
        proc.communicate()


def shooter(root: Path, sid: str, timeout_s: float = RENDER_TIMEOUT_S) -> Shooter:
    """The screenshots callable `export_session(..., screenshots=...)` takes, for one session (close() it after)."""
    return Shooter(root, sid, timeout_s=timeout_s)
