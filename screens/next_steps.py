"""What the acceptance says to run next, as steps the TUI runs itself: a screen's key, or a job with its settings."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from workbench.acceptance.about import RECIPE_JOBS_NEEDING_CONFIG
from workbench.config.layers import ConfigError, merge, parse_set

SCREEN_MODES = {
    "environment": "environment",
    "data": "data",
    "training": "training",
    "alignment": "alignment",
    "export": "export",
    "session": "session",
}
KEY_ON_SCREEN = re.compile(r"^(\S+) on the (\w+) screen$")


@dataclass
class Step:
    """One runnable next step: on a screen (its key's action) or a job started with overrides."""

    layer: str
    label: str
    mode: Optional[str] = None  # the screen whose action runs it
    key: Optional[str] = None
    kind: Optional[str] = None  # else the job to start
    overrides: Dict[str, Any] = field(default_factory=dict)


def job_of(command: str) -> Optional[Dict[str, Any]]:
    """`ms-workbench run KIND --set k=v ...` as {kind, overrides}; None for any other command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words[:2] != ["ms-workbench", "run"] or len(words) < 3:
        return None
    overrides: Dict[str, Any] = {}
    rest = words[3:]
    while rest:
        if rest[0] in ("--session", "--sessions") and len(rest) >= 2:  # this session: the TUI runs it here
            rest = rest[2:]
            continue
        if rest[0] == "--config" and len(rest) >= 2 and words[2] in RECIPE_JOBS_NEEDING_CONFIG:
            rest = rest[2:]  # the candidate run's config: the app adds the candidate's recipe itself (start_job)
            continue
        if rest[0] != "--set" or len(rest) < 2:
            return None  # an option the TUI does not pass on: leave it to the shell
        try:
            merge(overrides, parse_set(rest[1]), "the next step")
        except ConfigError:
            return None
        rest = rest[2:]
    return {"kind": words[2], "overrides": overrides}


def steps_of(acc: Optional[Dict[str, Any]]) -> List[Step]:
    """Every missing check's way to produce it, once per key or command, in the layers' order."""
    out: List[Step] = []
    seen = set()
    for layer in (acc or {}).get("layers") or []:
        for need in layer.get("missing") or []:
            key, command = need.get("key"), str(need.get("command") or "")
            how = key or command
            if not how or how in seen:
                continue
            seen.add(how)
            found = KEY_ON_SCREEN.match(str(key or ""))
            if found and found.group(2).lower() in SCREEN_MODES:
                out.append(
                    Step(layer["layer"], str(key), mode=SCREEN_MODES[found.group(2).lower()], key=found.group(1))
                )
                continue
            job = job_of(command)
            if job is not None:
                label = "run %s%s" % (job["kind"], " " + " ".join(_sets(job["overrides"])) if job["overrides"] else "")
                out.append(Step(layer["layer"], label, kind=job["kind"], overrides=job["overrides"]))
    return out


def _sets(overrides: Dict[str, Any], prefix: str = "") -> List[str]:
    out = []
    for key, value in overrides.items():
        if isinstance(value, dict):
            out += _sets(value, prefix + key + ".")
        else:
            out.append("%s%s=%s" % (prefix, key, value))
    return out


def action_of(screen_cls: Any, key: str) -> Optional[str]:
    """The action a screen class binds to a key, None when it binds none."""
    for binding in screen_cls.BINDINGS:
        if key in binding.key.split(","):
            return binding.action
    return None
