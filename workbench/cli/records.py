"""`ms-workbench import RECORD` and `ms-workbench compare A B`: records from elsewhere, runs side by side."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from workbench.session.store import SessionStore, sessions_root

USAGE_ERROR = 2


def cmd_import(args) -> int:
    """Verify a record against its manifest and add it as a read-only session; exit 1 when refused."""
    from workbench.record.importing import RecordRefused, import_record  # here: every other command starts without it

    root = sessions_root(args.sessions)
    try:
        done = import_record(root, Path(args.record))
    except RecordRefused as exc:
        print("import refused: %s; nothing was added to %s" % (exc, root), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(done, indent=2, sort_keys=True))
        return 0
    where = "host %s%s" % (done.get("host") or "?", ", revision %s" % done["revision"] if done.get("revision") else "")
    if done["status"] == "already imported":
        print("already imported: %s (%s) is in %s; nothing changed" % (done["id"], where, done["dir"]))
    else:
        print(
            "imported %s (%s): %d files verified against its manifest -> %s"
            % (done["id"], where, done["files_verified"], done["dir"])
        )
    return 0


def cmd_compare(args) -> int:
    """Compare two training runs; exit 0 on observed-pass, 1 on observed-fail or not-run, 2 on bad input."""
    from workbench.compare.inputs import CompareInputError, compare_refs, write_compare_outputs
    from workbench.config.layers import ConfigError, load

    try:
        cfg = load(args.config, args.set or [])
    except ConfigError as exc:
        print("config error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    if args.out and os.path.lexists(args.out) and not os.path.isdir(args.out):
        print(
            "error: --out %s exists and is not a folder: compare writes compare.json, compare.md and loss.svg "
            "into a folder (an existing one has those three replaced, each atomically); nothing written" % args.out,
            file=sys.stderr,
        )
        return USAGE_ERROR
    store = SessionStore(sessions_root(args.sessions))
    try:
        result = compare_refs(store, args.a, args.b, cfg["compare"])
    except CompareInputError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    if args.out:
        try:
            result["files"] = write_compare_outputs(result, Path(args.out))
        except OSError as exc:  # a full disk, a read-only folder, a folder where compare.json goes
            print(
                "error: compare could not write %s: %s; files already written were replaced whole, none is partial"
                % (exc.filename2 or exc.filename or args.out, exc.strerror or exc),  # filename2: a rename's target
                file=sys.stderr,
            )
            return 1
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        from workbench.compare.text import render_text

        print(render_text(result))
    from workbench.events.protocol import Evidence

    return 0 if result["verdict"]["status"] == Evidence.PASS else 1


def add_record_commands(sub: Any, common: Any, cfg: Any) -> None:
    """Register `import` and `compare` on the subcommand parser."""
    p = sub.add_parser("import", parents=[common], help="add a record from `export` (tar.gz or folder), read-only")
    p.add_argument("record", help="the <sid>.tar.gz written by `ms-workbench export`, or its unpacked folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("compare", parents=[common, cfg], help="compare two training runs, with a verdict")
    p.add_argument("a", help="SID/train-003, a job folder, or a run of an imported record")
    p.add_argument("b")
    p.add_argument("--json", action="store_true", help="the whole comparison as JSON")
    p.add_argument("--out", help="folder for compare.json, compare.md and the loss-curve SVG")
    p.set_defaults(func=cmd_compare)
