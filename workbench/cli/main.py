"""The command line: `ms-workbench run|watch|sessions|export|import|compare|accept|freeze|reproduce|attach|serve|data`, or the TUI.

The entry point is the one part of `workbench` that may reach the UI side: it starts the app
(`screens.app`), asks `screens.screenshots` for the record's pictures, and draws rich bars
(`screens.progress`). The rest of the core never imports textual, rich or screens.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, NoReturn, Optional, Tuple

from workbench import __version__
from workbench.cli.numbers import number
from workbench.config.layers import ConfigError, load
from workbench.events.protocol import EventReader, decode_line
from workbench.events.text import damage, format_event
from workbench.run.runner import JOB_KINDS, JobRunner, RunnerError
from workbench.session.imported import imported_label, imported_summary
from workbench.session.refs import BadReference
from workbench.session.store import CannotWrite, SessionStore, job_status, sessions_root

USAGE_ERROR = 2


def _config(args) -> Optional[dict]:
    """The config from --config, --set and --python; None after printing why it is invalid."""
    extra = [("--python", {"python": args.python})] if getattr(args, "python", None) else []
    try:
        return load(args.config, args.set or [], extra=extra)
    except ConfigError as exc:
        print("config error: %s" % exc, file=sys.stderr)
        return None


FOLLOW_BLOCK_BYTES = 1 << 20  # what `watch` and `run` read of an events file at a time


def follow(job_dir: Path, out_json: bool, stream=None, poll_s: float = 0.1, verbose_steps: int = 0) -> int:
    """Print a job's events until it ends; return the CLI exit code (0 ok, 1 otherwise)."""
    stream = stream or sys.stdout
    reader = EventReader(str(job_dir / "events.jsonl"))
    bar = None
    if not out_json and stream.isatty():
        from screens.progress import LiveBar

        bar = LiveBar()
    try:
        while True:
            ended = (job_dir / "exit.json").exists() or job_status(job_dir).done
            while True:  # a block at a time: a long file's replay holds one block, not the file
                for raw in reader.read_lines(FOLLOW_BLOCK_BYTES):
                    if not raw.strip():
                        continue
                    if out_json:
                        stream.write(raw.decode("utf-8", "replace") + "\n")
                        continue
                    ev = decode_line(raw)
                    if bar is not None and damage(ev) is None:
                        bar.update(ev)
                    line = format_event(ev, verbose_steps=verbose_steps if bar is None else 0)
                    if line:
                        (bar.print if bar is not None else lambda s: stream.write(s + "\n"))(line)
                if not reader.capped:
                    break
            stream.flush()
            if ended:
                break
            time.sleep(poll_s)
    finally:
        if bar is not None:
            bar.stop()
    status = job_status(job_dir)
    if not out_json:
        stream.write("%s: %s (%s)\n" % (job_dir.name, status.label(), job_dir))
    return 0 if status.state == "ok" else 1


def cmd_run(args) -> int:
    """Run one job under the supervisor, in the foreground or detached."""
    cfg = _config(args)
    if cfg is None:
        return USAGE_ERROR
    store = SessionStore(sessions_root(args.sessions))
    if args.session:
        try:  # before anything is created: a bad reference leaves no trace
            store.session_dir(args.session)
        except (BadReference, FileNotFoundError) as exc:
            print("error: --session %s" % exc, file=sys.stderr)
            return USAGE_ERROR
    if args.job == "test" and args.session and not args.test_set_again:
        spent = test_set_spent(store, args.session)
        if spent:
            print(spent, file=sys.stderr)
            return USAGE_ERROR
    try:
        sid = args.session or store.create(sys.argv)
    except CannotWrite as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 1
    try:
        job_dir = JobRunner(store).start(sid, args.job, cfg, command=sys.argv)
    except (RunnerError, FileNotFoundError, CannotWrite) as exc:
        print("error: %s" % exc, file=sys.stderr)
        if not args.session:
            _remove_if_empty(store, sid)
        return 1 if isinstance(exc, CannotWrite) else USAGE_ERROR
    if args.detach:
        print(job_dir)
        return _detached_start(job_dir)
    if not args.json:
        print("job %s in session %s: %s" % (job_dir.name, sid, job_dir), file=sys.stderr)
    try:
        return follow(job_dir, args.json, verbose_steps=args.every)
    except KeyboardInterrupt:
        return _interrupted(job_dir, sid)
    except BrokenPipeError:
        # A Ctrl+C on `run … | cat` kills the reader too: its SIGINT may land just after our write failed.
        try:
            time.sleep(0.3)
        except KeyboardInterrupt:
            return _interrupted(job_dir, sid)
        raise


def test_set_spent(store: SessionStore, sid: str) -> Optional[str]:
    """Why a test evaluation is refused in a session whose test set was already evaluated (None when it was not)."""
    import shlex

    from workbench.acceptance.testset import COST, describe, session_evaluations

    done = session_evaluations(store.session_dir(sid))
    if not done:
        return None
    again = ["ms-workbench"] + sys.argv[1:] + ["--test-set-again"]
    return "error: the test set of session %s is spent: %s.\n%s.\nTo evaluate it anyway: %s" % (
        sid,
        ", ".join(describe(e) for e in done),
        COST[0].upper() + COST[1:],
        " ".join(shlex.quote(w) for w in again),
    )


def _detached_start(job_dir: Path, within_s: float = 10.0) -> int:
    """1 when the supervisor refused the job (known as soon as it tried the lock), else 0."""
    deadline = time.time() + within_s
    while not (job_dir / "pids.json").exists() and not (job_dir / "exit.json").exists():
        if time.time() > deadline:
            return 0  # still starting: `sessions` will tell
        time.sleep(0.05)
    status = job_status(job_dir)
    if status.reason.startswith("refused:"):
        print("%s: %s" % (job_dir.name, status.label()), file=sys.stderr)
        return 1
    return 0


def _say(text: str, stream=None, fallback=None) -> None:
    """Print a line that must not fail: a closed pipe (the reader died with the same Ctrl+C) is silenced."""
    for out in (stream or sys.stderr, fallback):
        if out is None:
            continue
        try:
            out.write(text + "\n")
            out.flush()
            return
        except (OSError, ValueError):
            try:  # the exit flush would fail on it again: point the descriptor at /dev/null
                os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
            except (OSError, ValueError):
                pass


def _interrupted(job_dir: Path, sid: str) -> int:
    """Ctrl+C on a foreground run: cancel, wait, print the final status and how to resume.

    From the first Ctrl+C on, SIGINT only counts (a second one stops the waiting, never raises), and
    the job is cancelled before anything is printed: a pipe that died with the same Ctrl+C cannot
    stop the cancel.
    """
    again: List[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: again.append(signum))  # not restored: the process ends
    JobRunner.cancel(job_dir)
    _say("\ncancelling %s ... (Ctrl+C again to stop waiting)" % job_dir.name)
    deadline = time.monotonic() + 60
    while not again and not job_status(job_dir).done and time.monotonic() < deadline:
        time.sleep(0.1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a handler is reset at exit; an ignored signal stays ignored
    status = job_status(job_dir)
    if again:
        _say(
            "stopped waiting: the supervisor is stopping %s, %s now (`ms-workbench watch %s/%s` shows how it ended)"
            % (job_dir.name, status.label(), sid, job_dir.name)
        )
        return 1
    _say("%s: %s (%s)" % (job_dir.name, status.label(), job_dir), sys.stdout, sys.stderr)
    resume = resume_command(job_dir, sid)
    if resume:
        _say("state saved; resume with: %s" % resume, sys.stdout, sys.stderr)
    return 1


def resume_command(job_dir: Path, sid: str) -> Optional[str]:
    """The exact command that resumes a train job from the state it saved, or None without one."""
    art = job_dir / "artifacts"
    if (
        not job_dir.name.startswith("train-")
        or not (art / "state.json").is_file()
        or not (art / "state.ckpt").is_file()
    ):
        return None
    import shlex

    # The job's own effective config keeps every key as it ran, so the resume check finds no difference.
    return "ms-workbench run train --session %s --config %s --set %s" % (
        shlex.quote(sid),
        shlex.quote(str(job_dir / "config.yaml")),
        shlex.quote("train.resume_from=%s" % job_dir),
    )


def _remove_if_empty(store: SessionStore, sid: str) -> None:
    """Remove a session this command just created when no job was started in it."""
    session_dir = store.session_dir(sid)
    jobs = session_dir / "jobs"
    try:
        if jobs.is_dir() and not any(jobs.iterdir()):
            jobs.rmdir()
            (session_dir / "session.json").unlink()
            session_dir.rmdir()
    except OSError:
        pass  # something else is in it now: leave it


def _latest_job(store: SessionStore, ref: Optional[str]) -> Path:
    if ref and "/" in ref:
        return store.find_job(ref)
    known = store.sessions()
    sid = ref or store.latest_with_running() or (known[-1] if known else None)
    if sid is None:
        raise FileNotFoundError("no sessions under %s" % store.root)
    jobs = store.jobs(sid)
    if not jobs:
        raise FileNotFoundError("session %s has no jobs" % sid)
    running = [j for j in jobs if job_status(j).state == "running"]
    return (running or jobs)[-1]


def cmd_watch(args) -> int:
    """Follow a job's events as plain lines (replaying what came before)."""
    store = SessionStore(sessions_root(args.sessions))
    try:
        job_dir = _latest_job(store, args.ref)
    except (BadReference, FileNotFoundError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    print("watching %s" % job_dir, file=sys.stderr)
    try:
        return follow(job_dir, args.json, verbose_steps=args.every)
    except KeyboardInterrupt:
        return 1


def cmd_sessions(args) -> int:
    """List sessions and their jobs with status and size."""
    store = SessionStore(sessions_root(args.sessions))
    if args.prune is not None:
        from workbench.session.prune import prune

        return prune(store, args.prune, assume_yes=args.yes)
    rows: List[Dict[str, Any]] = []
    for sid in store.sessions():
        jobs = [
            {
                "jid": j.name,
                "status": job_status(j).state,
                "reason": job_status(j).reason,
                "duration_s": job_status(j).duration_s,
            }
            for j in store.jobs(sid)
        ]
        rows.append(
            {
                "id": sid,
                "dir": str(store.root / sid),
                "bytes": store.size_bytes(sid),
                "jobs": jobs,
                "imported": imported_summary(store.root / sid),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no sessions under %s" % store.root)
    for row in rows:
        print("%s  %s  %d jobs%s" % (row["id"], _size(row["bytes"]), len(row["jobs"]), imported_label(row["imported"])))
        for job in row["jobs"]:
            label = job["status"] + (": " + job["reason"] if job["reason"] else "")
            print("  %-12s %s" % (job["jid"], label))
    return 0


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return str(n)


def cmd_export(args) -> int:
    """Write the session record (report, metrics, manifest, archive)."""
    from screens.screenshots import shooter  # the UI side draws the screens; the record takes the pictures

    store = SessionStore(sessions_root(args.sessions))
    try:
        sid = store.named_or_newest(args.sid)
    except (BadReference, FileNotFoundError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    if imported_summary(store.root / sid) is not None:
        print(
            "error: session %s is an imported record (read-only); its record is %s"
            % (sid, store.root / sid / "export"),
            file=sys.stderr,
        )
        return USAGE_ERROR
    shots = None if args.no_screenshots else shooter(store.root, sid)  # its child loads the app meanwhile
    from workbench.record.write import OutsideOwnFolder, export_session  # after the child started: it waits on none

    try:
        out = export_session(store, sid, Path(args.out) if args.out else None, screenshots=shots)
    except OutsideOwnFolder as exc:
        print("error: %s; nothing written" % exc, file=sys.stderr)
        return USAGE_ERROR
    except FileExistsError as exc:  # an --out holding someone's files: a usage error
        print("error: %s" % exc, file=sys.stderr)
        return USAGE_ERROR
    except OSError as exc:  # the disk, not the user: exit 1, naming the file
        where = exc.filename or (Path(args.out) if args.out else store.root / sid / "export")
        print(
            "error: export failed writing %s: %s; no partial record was left" % (where, exc.strerror or exc),
            file=sys.stderr,
        )
        return 1
    finally:
        if shots is not None:
            shots.close()  # a renderer the export never handed its fold to (it stopped before its pictures)
    print(out)
    return 0


def cmd_data(args) -> int:
    """`data fetch`: download and verify the official Fashion-MNIST files."""
    from workbench.data.fetch import fetch_cli

    if not sys.stdout.isatty():  # a live bar only for a person at a terminal; logs and pipes get plain lines
        return fetch_cli(args.dest)
    from screens.progress import FetchBar

    return fetch_cli(args.dest, make_display=FetchBar)


def open_app(args, sid: Optional[str]) -> int:
    """Open the TUI on a session (new one when sid is None)."""
    cfg = _config(args)
    if cfg is None:
        return USAGE_ERROR
    store = SessionStore(sessions_root(args.sessions))
    if sid is not None:
        try:
            store.session_dir(sid)
        except (BadReference, FileNotFoundError) as exc:
            print("error: %s" % exc, file=sys.stderr)
            return USAGE_ERROR
    backlog = None
    if sid is not None:  # its events are folded in a child (forked before any thread) while the app loads and paints
        from workbench.fold.backlog import Backlog
        from workbench.views.session import RECENT_EVENTS, listed

        backlog = Backlog.start(store, sid, listed, RECENT_EVENTS, nice=int(cfg["ui"]["nice"]))
    # No garbage collection until the first screen is drawn (the app turns it back on then): start-up makes
    # mostly objects that live as long as the app, and each pass over them only delayed the first frame.
    # After the fork: the child folding the backlog collects as usual.
    gc.disable()
    try:
        from screens.app import WorkbenchApp

        if getattr(args, "low_bandwidth", False):
            cfg["ui"]["low_bandwidth"] = True
        from workbench.system.priority import start_launcher

        # jobs keep the priority; the UI yields to them once its first screen is drawn (the app nices its threads)
        launcher = start_launcher(int(cfg["ui"]["nice"]))
        app = WorkbenchApp(store=store, sid=sid, cfg=cfg, argv=sys.argv, launcher=launcher, backlog=backlog)
        app.run()
    finally:
        gc.enable()  # an app that ended before its first frame
        if backlog is not None:
            backlog.close()  # a child still folding when the app ended
    return 0


def cmd_attach(args) -> int:
    """Open the TUI on an existing session."""
    return open_app(args, args.sid)


def cmd_tui(args) -> int:
    """No subcommand: offer the latest session with running jobs, else start a new one."""
    store = SessionStore(sessions_root(args.sessions))
    sid = store.latest_with_running()
    if sid and sys.stdin.isatty():
        answer = input("session %s has running jobs; attach to it? [Y/n] " % sid).strip().lower()
        if answer in ("n", "no"):
            sid = None
    return open_app(args, sid)


def cmd_serve(args) -> int:
    """Serve the TUI to a browser through textual-serve (loopback unless --host is given)."""
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            "warning: serving on %s:%d: the workbench has no authentication; anyone who can reach this "
            "address can start and cancel jobs (use the default 127.0.0.1 and an SSH tunnel)" % (args.host, args.port),
            file=sys.stderr,
        )
    problem = _cannot_listen(args.host, args.port)
    if problem:
        print("error: cannot serve on %s:%d: %s; nothing started" % (args.host, args.port, problem), file=sys.stderr)
        return USAGE_ERROR
    try:
        from textual_serve.server import Server
    except ImportError:
        print("error: textual-serve is not installed (pip install 'ms-workbench[serve]')", file=sys.stderr)
        return USAGE_ERROR
    parts = [sys.executable, "-m", "workbench"]
    if args.sessions:
        parts += ["--sessions", args.sessions]
    if args.sid:
        parts += ["attach", args.sid]
    import shlex

    from screens.serve_page import TEMPLATES  # says "starting…" until the app's first output replaces it

    Server(
        " ".join(shlex.quote(p) for p in parts),
        host=args.host,
        port=args.port,
        title="ms-workbench",
        templates_path=TEMPLATES,
    ).serve()
    return 0


def _cannot_listen(host: str, port: int) -> Optional[str]:
    """Why (host, port) cannot be listened on (unknown host, port in use, not allowed), or None."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def _top_parser(kind: type = argparse.ArgumentParser) -> Tuple[argparse.ArgumentParser, Any, Any, FrozenSet[str]]:
    """The parser without its subcommands, the option groups the subcommands share (common, cfg) and the
    spellings of their options that take a value."""
    # Options accepted before and after the subcommand; SUPPRESS keeps a later default from erasing them.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    cfg = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    shared = [
        common.add_argument("--sessions", help="sessions root (default ./sessions or $MS_WORKBENCH_SESSIONS)"),
        cfg.add_argument("--config", help="YAML config file"),
        cfg.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key (repeatable)"),
        cfg.add_argument("--python", help="interpreter that runs jobs (config key python)"),
    ]
    value_options = frozenset(s for action in shared if action.nargs != 0 for s in action.option_strings)

    parser = kind(
        prog="ms-workbench",
        parents=[common, cfg],
        description="MindSpore on Ascend, from laptop loss curve to hand-over.",
    )
    parser.add_argument("--version", action="version", version="ms-workbench " + __version__)
    parser.add_argument("--low-bandwidth", action="store_true", help="fewer colours, slower redraw (slow SSH)")
    parser.set_defaults(func=cmd_tui)
    return parser, common, cfg, value_options


class _NotPlain(Exception):
    """The command line is not a plain start of the TUI: the whole tree parses it (and says what is wrong)."""


class _PlainParser(argparse.ArgumentParser):
    """The parser without subcommands, for a plain start of the TUI; any error goes back to the whole tree."""

    def error(self, message: str) -> NoReturn:
        raise _NotPlain(message)


def _plain(argv: List[str], value_options: FrozenSet[str]) -> bool:
    """Only the options before a subcommand, each exactly as spelled in `value_options` when it takes a value."""
    value_next = False
    for token in argv:
        if value_next:
            value_next = False
            continue
        if not token.startswith("-") or token in ("-", "--", "-h", "--help", "--version"):
            return False
        value_next = token in value_options
    return True


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The command line parsed as build_parser() parses it. A plain start of the TUI (options only) is parsed
    without the subcommands' parsers and their modules; anything else, and any error, by the whole tree, so
    help, usage and error messages are its own."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser, _, _, value_options = _top_parser(_PlainParser)
    if _plain(words, value_options):
        parser.set_defaults(command=None)  # as the whole tree's subparsers set it when none is given
        try:
            return parser.parse_args(words)
        except _NotPlain:
            pass
    return build_parser().parse_args(words)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser, common, cfg, _ = _top_parser()
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("run", parents=[common, cfg], help="run a job headless")
    p.add_argument("job", choices=JOB_KINDS)
    p.add_argument("--session", help="add the job to this session (default: a new one)")
    p.add_argument("--json", action="store_true", help="stdout carries exactly the job's events")
    p.add_argument("--detach", action="store_true", help="return at once, printing the job dir")
    p.add_argument(
        "--every", type=number(0, integer=True), default=0, metavar="N", help="print every Nth step (plain output)"
    )
    p.add_argument(
        "--test-set-again",
        action="store_true",
        help="evaluate the test set although this session already did (test-evaluations then fails)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("watch", parents=[common], help="follow a job's events")
    p.add_argument("ref", nargs="?", help="SID or SID/JID (default: latest running)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--every", type=number(0, integer=True), default=0, metavar="N")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("sessions", parents=[common], help="list sessions and jobs")
    p.add_argument("--json", action="store_true")
    p.add_argument("--prune", type=number(0), metavar="KEEP_DAYS", help="delete finished sessions older than this")
    p.add_argument("--yes", action="store_true", help="do not ask before pruning")
    p.set_defaults(func=cmd_sessions)

    p = sub.add_parser("export", parents=[common], help="write the session record")
    p.add_argument("sid", nargs="?")
    p.add_argument("--out", help="folder for the export (default sessions/<sid>/export)")
    p.add_argument("--no-screenshots", action="store_true", help="skip the headless screen renderings")
    p.set_defaults(func=cmd_export)

    from workbench.cli.accept import add_parser as add_accept

    add_accept(sub, [common, cfg])

    from workbench.cli.freeze import add_parser as add_freeze

    add_freeze(sub, [common])

    from workbench.cli.reproduce import add_parser as add_reproduce

    add_reproduce(sub, [common])

    from workbench.cli.records import add_record_commands

    add_record_commands(sub, common, cfg)

    p = sub.add_parser("attach", parents=[common, cfg], help="open the workbench on a session")
    p.add_argument("sid")
    p.set_defaults(func=cmd_attach)

    p = sub.add_parser("serve", parents=[common], help="serve the workbench to a browser")
    p.add_argument("sid", nargs="?")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=number(1, 65535, integer=True), default=8000)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("data", parents=[common], help="data utilities")
    dsub = p.add_subparsers(dest="data_command", required=True)
    f = dsub.add_parser("fetch", help="download and verify the official Fashion-MNIST files")
    f.add_argument("--dest", default=os.path.expanduser("~/.cache/ms-workbench/fashion-mnist"))
    f.set_defaults(func=cmd_data)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the `ms-workbench` command."""
    args = parse_args(argv)
    for name in ("sessions", "config", "set", "python"):
        if not hasattr(args, name):
            setattr(args, name, None)
    try:
        return args.func(args)
    except KeyboardInterrupt:  # a command without its own Ctrl+C handling: one line, no traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _say("interrupted; nothing more was done")
        return 130
    except BrokenPipeError:
        # `run … | head`: the reader went away. A job runs under its own supervisor and goes on;
        # say so on stderr and leave quietly (stdout is pointed at /dev/null so the exit flush is silent).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _say("stdout was closed; any job started goes on under its supervisor (see `ms-workbench sessions`)")
        return 1
