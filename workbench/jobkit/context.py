"""What every job program uses: its config, its event writer, artifacts, cancel and exit."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from workbench import __version__
from workbench.events.protocol import EventWriter
from workbench.jobkit.config import JobConfig, load_job_config
from workbench.session.candidate import RECIPE_JOBS, recipe_subject
from workbench.system.atomic import read_json, sha256_file


class JobFailed(Exception):
    """A job stops with a clear error and a hint."""

    def __init__(self, message: str, hint: Optional[str] = None, type_: str = "JobFailed"):
        super().__init__(message)
        self.hint = hint
        self.type_ = type_


class Cancelled(Exception):
    """The job was asked to stop (SIGTERM)."""


class JobContext:
    """A running job: config, meta, events and the artifacts folder."""

    def __init__(self, job_dir: Path, extra: Optional[Dict[str, Any]] = None, events_name: str = "events.jsonl"):
        self.dir = Path(job_dir)
        self.cfg: JobConfig = load_job_config(self.dir)
        self.meta: Dict[str, Any] = read_json(self.dir / "job.json")
        self.artifacts = self.dir / "artifacts"
        self.artifacts.mkdir(exist_ok=True)
        self.events = EventWriter(str(self.dir / events_name), extra=extra)
        self.cancel_requested = False
        self.finished_sent = False
        # What this job's checks are about (a checkpoint, initial weights, a recipe); every check carries it.
        self.subject: Optional[str] = recipe_subject(self.cfg) if self.meta.get("kind") in RECIPE_JOBS else None

    @property
    def device(self) -> Dict[str, Any]:
        """The runner's device decision as job.json records it: {target, id, requested, resolved, why}.

        `target` (= `resolved`) is what the job runs on; the config's `device` section holds the
        same decision, so a job may read either.
        """
        return self.meta["device"]

    def emit(self, type_: str, **fields: Any) -> Dict[str, Any]:
        """Write one event."""
        return self.events.emit(type_, **fields)

    def started(self, **fields: Any) -> None:
        """Emit the `started` event with the common fields."""
        self.emit(
            "started",
            kind=self.meta["kind"],
            pid=os.getpid(),
            python=sys.executable,
            argv=sys.argv,
            version=__version__,
            device=dict(self.device),
            **fields,
        )

    def log(self, message: str, level: str = "info") -> None:
        """Emit a log line."""
        self.emit("log", level=level, message=message)

    def check(
        self,
        id_: str,
        title: str,
        status: str,
        detail: str = "",
        evidence: Any = None,
        hint: Optional[str] = None,
        **extra: Any,
    ) -> Dict[str, Any]:
        """Emit a check with its evidence level and, once the job knows it, its subject."""
        if self.subject is not None and "subject" not in extra:
            extra["subject"] = self.subject
        return self.emit(
            "check",
            id=id_,
            title=title,
            status=status,
            detail=detail,
            evidence=evidence if evidence is not None else {},
            hint=hint,
            **extra,
        )

    def progress(self, done: int, total: int, unit: str, phase: str = "") -> None:
        """Emit a progress event."""
        self.emit("progress", done=done, total=total, unit=unit, phase=phase)

    def artifact(self, path: Path, kind: str, **extra: Any) -> Dict[str, Any]:
        """Hash a written file and emit its `artifact` event (path relative to the job dir)."""
        path = Path(path)
        rel = os.path.relpath(str(path), str(self.dir))
        return self.emit("artifact", path=rel, kind=kind, bytes=path.stat().st_size, sha256=sha256_file(path), **extra)

    def result(self, summary: Any, **extra: Any) -> None:
        """Emit the job's machine-readable summary."""
        self.events.emit("result", fsync=True, summary=summary, **extra)

    def finished(self, status: str, error: Optional[Dict[str, Any]] = None) -> None:
        """Emit the final event and fsync."""
        if self.finished_sent:
            return
        self.finished_sent = True
        self.events.emit("finished", fsync=True, status=status, error=error)

    def raise_if_cancelled(self) -> None:
        """Stop at a safe point when SIGTERM arrived."""
        if self.cancel_requested:
            raise Cancelled("cancelled by SIGTERM")


def run(main: Callable[[JobContext], Optional[str]], argv=None) -> int:
    """Parse --job-dir, run `main(ctx)`, and always end with a `finished` event."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", required=True)
    args, _ = parser.parse_known_args(argv)
    job_dir = Path(args.job_dir).resolve()
    os.chdir(str(job_dir))
    ctx = JobContext(job_dir)

    def on_term(signum, frame):
        ctx.cancel_requested = True

    signal.signal(signal.SIGTERM, on_term)
    try:
        status = main(ctx) or "ok"
        ctx.finished(status)
        return 0 if status == "ok" else (3 if status == "cancelled" else 1)
    except Cancelled as exc:
        ctx.finished("cancelled", {"type": "Cancelled", "message": str(exc), "hint": None})
        return 3
    except JobFailed as exc:
        ctx.finished("failed", {"type": exc.type_, "message": str(exc), "hint": exc.hint})
        return 1
    except Exception as exc:  # the job reports any error as its final event
        traceback.print_exc()
        ctx.finished("failed", {"type": type(exc).__name__, "message": str(exc), "hint": None})
        return 1
    finally:
        ctx.events.close()
