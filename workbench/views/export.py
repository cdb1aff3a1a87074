"""The Export screen's model: the latest export job's artefacts, load checks and reference package."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from workbench.events.protocol import Evidence
from workbench.views.base import LatestJobView

BEST_CKPT = "best.ckpt"  # the train job's best checkpoint (jobs/common/checkpoint_files.py)
FRESH = "__fresh__"  # the run picker's value for "no training job: a freshly initialised net"
FORMAT_ORDER = {"ckpt": 0, "mindir": 1, "lite": 2}


class ExportView(LatestJobView):
    """Folds `export` job events into what the Export screen draws."""

    kinds = ("export",)

    @property
    def artifacts(self) -> Dict[str, Dict[str, Any]]:
        """Artefacts by path (a file written again keeps its first place, its latest event)."""
        out: Dict[str, Dict[str, Any]] = {}
        for ev in self.record.artifacts:
            out[str(ev.get("path"))] = ev
        return out

    @property
    def logs(self) -> List[str]:
        """Warning and error log lines."""
        return [str(ev.get("message")) for ev in self.record.notable_logs if ev.get("level") in ("warning", "error")]

    def load_checks(self) -> List[Dict[str, Any]]:
        """Checks that belong to a format (ckpt, mindir, lite), in format then batch order."""
        # Within a format the job's own order holds (export, load, then each batch size as configured).
        ordered = list(enumerate(ev for ev in self.checks.values() if ev.get("format") in FORMAT_ORDER))
        ordered.sort(key=lambda pair: (FORMAT_ORDER[pair[1]["format"]], pair[0]))
        return [ev for _, ev in ordered]

    def other_checks(self) -> List[Dict[str, Any]]:
        """Checks that are not about one format: device, source, metrics, reference package."""
        return [ev for ev in self.checks.values() if ev.get("format") not in FORMAT_ORDER]

    def artifact_rows(self) -> List[Dict[str, Any]]:
        """Artefacts in the order they were written: kind, path, bytes, sha256."""
        return [{k: ev.get(k) for k in ("kind", "path", "bytes", "sha256")} for ev in self.artifacts.values()]

    def hash_lines(self) -> List[str]:
        """One `sha256  path` line per artefact, the format `sha256sum -c` reads (paths from the job folder)."""
        return ["%s  %s" % (ev.get("sha256"), ev.get("path")) for ev in self.artifacts.values()]

    def reference(self) -> Optional[Dict[str, Any]]:
        """The reference package summary: from the result, else from the reference check while running."""
        if isinstance(self.result.get("reference"), dict) and self.result["reference"]:
            return self.result["reference"]
        check = self.checks.get("reference")
        if check and check.get("status") == Evidence.PASS:
            evidence = check.get("evidence") or {}
            covered, pairs = evidence.get("classes_covered"), evidence.get("pairs")
            return {
                "dir": "artifacts/reference",
                "samples": evidence.get("samples"),
                "classes_covered": len(covered) if isinstance(covered, list) else 0,
                "confused_pairs": pairs if isinstance(pairs, list) else [],
            }
        return None

    def counts(self) -> Dict[str, int]:
        """How many checks have each evidence level."""
        out: Dict[str, int] = {}
        for ev in self.checks.values():
            out[str(ev.get("status"))] = out.get(str(ev.get("status")), 0) + 1
        return out


def exportable(job: Any) -> bool:
    """A train job that has weights to export: it ended ok, or it wrote a best checkpoint (never a refused one)."""
    if getattr(job, "kind", None) != "train" or str(job.status.reason or "").startswith("refused:"):
        return False
    return job.status.state == "ok" or (Path(job.dir) / "artifacts" / BEST_CKPT).is_file()


def train_choices(jobs: Iterable[Any], candidate_run: Optional[str] = None) -> List[Tuple[str, str]]:
    """(label, value) for the run picker: train jobs with weights, newest first (the candidate's marked), then a fresh net."""
    out = []
    for job in reversed(list(jobs)):
        if exportable(job):
            mark = " · candidate" if job.jid == candidate_run else ""
            out.append(("%s · %s%s" % (job.jid, job.status.state, mark), job.jid))
    out.append(("initial weights (untrained net)", FRESH))
    return out


def default_choice(jobs: Iterable[Any], candidate_run: Optional[str] = None) -> str:
    """The frozen candidate's run when it is listed, else the latest train job that ended ok, else a fresh net."""
    listed = [job for job in jobs if exportable(job)]
    if candidate_run is not None and any(job.jid == candidate_run for job in listed):
        return candidate_run
    ok = [job.jid for job in listed if job.status.state == "ok"]
    return ok[-1] if ok else FRESH


def export_overrides(choice: Optional[str], initial: Optional[str] = None) -> Dict[str, Any]:
    """Config overrides that run the export from a picker value (`initial`: how the config names initial weights)."""
    return {"export": {"from": initial if choice in (None, FRESH) else str(choice)}}
