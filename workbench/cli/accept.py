"""`ms-workbench accept [SID] [--json]`: the acceptance verdict of a session, per layer."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional

from workbench.acceptance.about import about_session
from workbench.config.layers import ConfigError, load
from workbench.session.refs import BadReference
from workbench.session.store import SessionStore, sessions_root

USAGE_ERROR = 2


def acceptance_config(config_file: Optional[str] = None, sets: Any = ()) -> Dict[str, Any]:
    """The effective config's `acceptance` and `compare` (None when absent) sections: defaults < user file <
    --config < --set (ConfigError if invalid)."""
    cfg = load(config_file, sets or [])
    return {"acceptance": cfg["acceptance"], "compare": cfg.get("compare")}


def _value(row: Dict[str, Any]) -> str:
    """'0.8671 against >= 0.85' for a row with a number and its threshold, else ''."""
    value = row.get("value")
    if value is None:
        return ""
    shown = "%.4g" % value if isinstance(value, float) else str(value)
    return "%s against %s  " % (shown, row["threshold"]) if row.get("threshold") is not None else ""


def render(acc: Dict[str, Any]) -> str:
    """The verdict for people: target, one line per layer, every deciding check with its measured value against its
    threshold (a passing one too), the performance figure even when not required, and what to run."""
    target = acc["target"]
    lines = candidate_lines(acc)
    lines += ["target %s (requested %s: %s)" % (target["device"], target.get("requested"), target.get("why")), ""]
    for lay in acc["layers"]:
        lines.append("%-11s %-14s %s" % (lay["layer"], lay["verdict"], lay["summary"]))
        for row in lay["deciding"]:
            shown = (
                row["level"] != "observed-pass"
                or "does not count" in (row["detail"] or "")
                or row.get("value") is not None
            )
            if shown:
                lines.append(
                    "    %-28s %-14s on %-7s %s%s"
                    % (row["check"], row["level"], row["device"] or "-", _value(row), wrap(row["detail"] or "", 160))
                )
        for need in lay["missing"]:
            key = " (TUI: %s)" % need["key"] if need["key"] else ""
            lines.append("    missing: %s\n      run: %s%s" % (need["what"], need["command"], key))
    lines += [
        "",
        "overall %s" % acc["overall"],
        "(a CPU target's device layer is not required: it makes no device claim; a not-required layer has no "
        "threshold set and does not count)"
        if acc["target"]["device"] == "CPU"
        else "(a not-required layer has no threshold set and does not count)",
    ]
    return "\n".join(lines).rstrip() + "\n"


def candidate_lines(acc: Dict[str, Any]) -> List[str]:
    """What the verdict is about, first: the candidate and its lineage, or that none is frozen; then the evidence
    about other models, which does not count."""
    cand = acc.get("candidate")
    if cand is None:
        lines = ["candidate  none frozen: the verdict is about one model (see missing below)"]
    else:
        lines = [
            "candidate  #%d %s epoch %s, checkpoint sha256 %s"
            % (cand["n"], cand["run"], cand["epoch"], cand["sha256"]),
            "           split %s, recipe %s, frozen because: %s"
            % ((cand["split_sha256"] or "not recorded")[:12], cand["recipe_sha256"][:12], cand["reason"]),
        ]
    for other in acc.get("about_other") or []:
        lines.append(
            "  about another model (does not count): %s about %s (%d checks)"
            % (other["job"], other["subject"], len(other["checks"]))
        )
    return lines + [""]


def wrap(text: str, width: int) -> str:
    """Text cut at a word boundary when longer than `width`, ending '…' (never mid-word)."""
    if len(text) <= width:
        return text
    cut = text[:width].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + " …"


def cmd_accept(args) -> int:
    """Print the verdict per layer; 0 when every required layer passes, 1 otherwise, 2 on usage errors."""
    from workbench.acceptance.verdict import evaluate, exit_code  # here: the TUI's start builds this parser too
    from workbench.fold.stream import fold_session

    store = SessionStore(sessions_root(args.sessions))
    try:
        session_dir = store.session_dir(store.named_or_newest(args.sid))
        cfg = acceptance_config(args.config, args.set)
    except (BadReference, FileNotFoundError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    except ConfigError as exc:
        print("config error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    acc = evaluate(fold_session(session_dir), cfg["acceptance"], cfg["compare"], about=about_session(session_dir))
    if args.json:
        sys.stdout.write(json.dumps(acc, indent=2, sort_keys=False, default=str) + "\n")
    else:
        sys.stdout.write("session %s\n%s" % (session_dir.name, render(acc)))
    return exit_code(acc)


def add_parser(sub: Any, parents: list) -> None:
    """Register `accept` on the CLI's subparsers."""
    p = sub.add_parser("accept", parents=parents, help="the acceptance verdict of a session, per layer")
    p.add_argument("sid", nargs="?", help="session id (default: the newest)")
    p.add_argument("--json", action="store_true", help="the acceptance as JSON (the same as report.json's)")
    p.set_defaults(func=cmd_accept)
