"""One export run's shared state: its config, device, and the checks and artefacts it emitted."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from workbench.events.protocol import Evidence
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext

PHASES = 6  # source, reference, checkpoint reload, MindIR, MindIR load, Lite


class ExportRun:
    """The export job's context, typed config and device, plus every check and artefact it emitted."""

    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.cfg = JobConfig(ctx.cfg)
        self.export = self.cfg.export
        self.target: str = ctx.device["resolved"]
        self.device_id: int = ctx.device["id"]
        self.formats: List[str] = list(self.export.formats)
        # The config checked every item and that MindIR has a signature size; a size given twice is still
        # one check and one run.
        self.batch_sizes: List[int] = list(dict.fromkeys(self.export.batch_sizes))
        self.loads = ctx.dir / "loads"
        self.checks: List[Dict[str, Any]] = []
        self.artifacts: List[Dict[str, Any]] = []
        self.loaders: Dict[str, Dict[str, Any]] = {}  # per loader process: pid, return code, wall time
        self.timing_s: Dict[str, float] = {}

    def check(
        self,
        id_: str,
        title: str,
        status: str,
        detail: str,
        evidence: Optional[Dict[str, Any]] = None,
        hint: Optional[str] = None,
        **extra: Any,
    ) -> Dict[str, Any]:
        """Emit a check and keep it for the summary."""
        ev = self.ctx.check(id_, title, status, detail, evidence=evidence or {}, hint=hint, **extra)
        self.checks.append(ev)
        return ev

    def artifact(self, path: Path, kind: str, **extra: Any) -> Dict[str, Any]:
        """Emit an artifact event (bytes and SHA-256 of the written file) and keep it for the summary."""
        ev = self.ctx.artifact(path, kind, **extra)
        self.artifacts.append({k: ev[k] for k in ("kind", "path", "bytes", "sha256")})
        return ev

    def phase(self, done: int, name: str) -> None:
        """Progress between phases (also keeps the stall watchdog fed)."""
        self.ctx.raise_if_cancelled()
        self.ctx.progress(done, PHASES, "phase", name)

    def not_run(self, ids_titles: Sequence[Tuple[str, str, Dict[str, Any]]], why: str) -> None:
        """Say plainly which checks were skipped and why."""
        for id_, title, extra in ids_titles:
            self.check(id_, title, Evidence.NOT_RUN, why, {}, **extra)

    def failed_checks(self) -> List[Dict[str, Any]]:
        """The checks that failed or were blocked, in the order they were emitted."""
        return [ev for ev in self.checks if ev["status"] in (Evidence.FAIL, Evidence.BLOCKED)]
