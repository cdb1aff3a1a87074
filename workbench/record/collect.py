"""Turns a session folder into one plain dict: the content of report.json, in the report's order."""

from __future__ import annotations

import datetime
import json
import posixpath
import shlex
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

import yaml

from workbench import __version__
from workbench.acceptance.about import about_session
from workbench.acceptance.verdict import evaluate
from workbench.config.layers import load
from workbench.data.fashion import CLASS_NAMES
from workbench.events.protocol import Evidence
from workbench.fold.record import JobRecord, SessionModel
from workbench.fold.spoolproc import SpoolProcess
from workbench.fold.steptable import StepTable
from workbench.fold.stream import event_files, fold_file, fold_job
from workbench.masking.envvars import record_env
from workbench.masking.scrub import Scrubber
from workbench.record.limitations import limitations
from workbench.record.manifest import SessionFiles
from workbench.record.performance import parallel_record, performance_rows
from workbench.session.imported import imported_mark
from workbench.session.store import SessionStore

FORMAT = "ms-workbench.record/1"
FORMULA = "|cand − ref| ≤ atol + rtol·|ref|"
SECTION_KINDS = {
    "env": "environment",
    "data": "data",
    "train": "training",
    "test": "training",
    "align": "alignment",
    "export": "export",
    "shift": "training",
}
NOT_PASSED = (Evidence.FAIL, Evidence.BLOCKED, Evidence.NOT_RUN)
MAX_LOG_LINES = 40


def iso(t: Optional[float]) -> Optional[str]:
    """Local time with its UTC offset, to the second, or None."""
    if not isinstance(t, (int, float)):
        return None
    try:
        return datetime.datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):  # a damaged `t` far outside any calendar
        return None


def _strip(ev: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in ev.items() if k not in ("v", "type")}


def _json(data: Optional[bytes]) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


class JobReader:
    """Reads one job folder of a snapshot into a record, event by event, by type."""

    def __init__(self, files: SessionFiles, job_dir: Path, scrub: Scrubber, spool_steps: bool = False):
        self.files = files
        self.dir = job_dir
        self.jid = job_dir.name
        self.prefix = "jobs/%s/" % self.jid
        self.scrub = scrub
        # every step to the CSV spool (a long run's batched lines formatted by a second process), a thinned table kept
        self.table = StepTable(spool=spool_steps, jid=self.jid, spool_process=SpoolProcess)
        self.fold: Optional[JobRecord] = None  # after read(): the job's fold, also what the acceptance evaluation reads

    def _read(self, name: str) -> Optional[bytes]:
        return self.files.read(self.prefix + name)

    def _chunks(self, name: str) -> Callable[[], Iterable[bytes]]:
        entry = self.files.get(self.prefix + name)
        return entry.chunks if entry is not None else lambda: iter(())

    def read(self) -> Dict[str, Any]:
        """The job's record: spec, status, config and what each event type said."""
        spec = self.scrub.report_obj(_json(self._read("job.json")) or {})
        exit_rec = _json(self._read("exit.json"))
        # The same fold as `ms-workbench accept` (workbench.fold.stream.fold_job): its config is the job
        # folder's own config.json, as accept reads it; the report's is masked below.
        names = [e.rel[len(self.prefix) :] for e in self.files.under(self.prefix.rstrip("/"))]
        fold = fold_job(
            self.dir,
            steps=self.table,
            spec=spec,
            files={n: self._chunks(n) for n in event_files(n for n in names if "/" not in n)},
            transform=self.scrub.report_obj,
        )
        self.fold = fold
        status = fold.status
        command = spec.get("command") or []
        fin = fold.finished
        rec: Dict[str, Any] = {
            "jid": self.jid,
            "kind": fold.kind,
            "state": status.state,
            "reason": status.reason,
            "label": status.label(),
            "created": spec.get("created"),
            "created_iso": iso(spec.get("created")),
            "ended": (exit_rec or {}).get("ended_at") or fold.last_t,
            "duration_s": status.duration_s,
            "command": command,
            "command_line": " ".join(shlex.quote(str(c)) for c in command),
            "python": spec.get("python"),
            "version": spec.get("version"),
            "device": spec.get("device") or {},
            "argv": spec.get("argv") or [],
            "env": record_env(spec.get("env") or {}),
            "exit": exit_rec,
            "config_yaml": None,
            "config": {},
            "events": fold.events,
            "event_types": dict(sorted(fold.type_counts.items())),
            "seq_problems": fold.seq_problems[:20],
            "torn_tail_bytes": fold.torn_tail_bytes,
            "damaged_lines": fold.damaged,
            "damaged_count": fold.damaged_count,
            "missing_seq": fold.missing_seq,
            "started": _strip(fold.started) if fold.started else None,
            "checks": [
                {
                    "jid": self.jid,
                    "id": ev.get("id"),
                    "title": ev.get("title"),
                    "status": ev.get("status"),
                    "detail": ev.get("detail") or "",
                    "hint": ev.get("hint"),
                    "evidence": ev.get("evidence") or {},
                    "subject": ev.get("subject"),
                }
                for ev in fold.check_events
            ],
            "artifacts": [self._artifact(ev) for ev in fold.artifacts],
            "results": list(fold.results),
            "finished": {"status": fin.get("status"), "error": fin.get("error"), "t": fin.get("t")} if fin else None,
            "epochs": [_strip(e) for e in fold.epochs],
            "perf": [_strip(p) for p in fold.perf],
            "tensor_diffs": [_strip(d) for d in fold.tensor_diffs],
            "logs": [
                {"level": ev.get("level"), "message": str(ev.get("message", ""))[:500]}
                for ev in list(fold.notable_logs)[:MAX_LOG_LINES]
            ],
            "progress": _strip(fold.progress) if fold.progress else None,
            "unknown": [dict(_strip(ev), type=ev.get("type")) for ev in fold.unknown],
            "steps": self.table.as_dict(),
            # npu-smi samples (train on Ascend) over the whole run: every k-th one, numbered from 0, and the last
            "device_samples": [dict(_strip(d), sample=n) for n, d in fold.device_history.items()],
            "device_every": fold.device_history.stride,
            "device_seen": fold.device_history.seen,
            "monitor": fold.train_state.summary() if fold.train_state.count else None,
            "loss_scale": [_strip(e) for e in fold.loss_scale],
        }
        t = self.table
        rec["step_curve"] = {
            "first_loss": t.first_loss,
            "last_loss": t.last_loss,
            "min_loss": t.min_loss,
            "ranks": sorted(t.ranks),
            "sizes": [b for b, _ in t.sizes.most_common()],
        }
        rec["ended_iso"] = iso(rec["ended"])
        self._config(rec)
        _mark_superseded(rec["artifacts"])
        rec["result"] = rec["results"][-1] if rec["results"] else None
        best = [i for i, e in enumerate(fold.epochs) if e is fold.best_epoch]
        rec["best_epoch"] = rec["epochs"][best[0]] if best else None
        return rec

    def _config(self, rec: Dict[str, Any]) -> None:
        text = self._read("config.yaml")
        if text is not None:
            rec["config_yaml"] = self.scrub.text(text.decode("utf-8", "replace"))
        cfg = _json(self._read("config.json"))
        if cfg is None and rec["config_yaml"]:
            try:
                cfg = yaml.safe_load(rec["config_yaml"])
            except yaml.YAMLError:
                cfg = None
        rec["config"] = self.scrub.report_obj(cfg) if isinstance(cfg, dict) else {}

    def _artifact(self, ev: Dict[str, Any]) -> Dict[str, Any]:
        path = str(ev.get("path", ""))
        rel = posixpath.normpath(posixpath.join("jobs", self.jid, path)) if not path.startswith("/") else None
        entry = self.files.get(rel) if rel else None
        if entry is None:
            on_disk = "missing"
        elif entry.sha256 == ev.get("sha256"):
            on_disk = "matches"
        else:
            on_disk = "differs"
        out = {k: v for k, v in _strip(ev).items() if k not in ("seq", "t")}
        out.update({"jid": self.jid, "session_path": rel, "on_disk": on_disk})
        return out


def _mark_superseded(artifacts: List[Dict[str, Any]]) -> None:
    """A file written again (a state checkpoint each epoch) is checked only at its last event."""
    last = {}
    for i, a in enumerate(artifacts):
        last[a.get("session_path") or a.get("path")] = i
    for i, a in enumerate(artifacts):
        if last[a.get("session_path") or a.get("path")] != i:
            a["on_disk"] = "superseded"


def collect(
    store: SessionStore,
    sid: str,
    files: Optional[SessionFiles] = None,
    scrub: Optional[Scrubber] = None,
    now: Optional[float] = None,
    acceptance: Optional[Dict[str, Any]] = None,
    step_tables: Optional[Dict[str, StepTable]] = None,
    folds: Optional[Dict[str, JobRecord]] = None,
) -> Dict[str, Any]:
    """The whole record of a session as one JSON-ready dict (see the section keys below).

    Each job's steps are kept thinned (`jobs[].steps`, with `recorded` and `every`); pass `step_tables`
    (a dict) to get every job's StepTable, whose spool holds every step for metrics/steps.csv, and
    `folds` (a dict) to get every job's record as folded here (the screenshots are drawn from it).
    """
    session_dir = store.session_dir(sid)
    files = files or SessionFiles.snapshot(session_dir)
    scrub = scrub or Scrubber()
    now = time.time() if now is None else now
    info = scrub.report_obj(_json(files.read("session.json")) or {})
    job_dirs = sorted(
        {
            session_dir / "jobs" / rel.split("/")[1]
            for rel in files.entries
            if rel.startswith("jobs/") and rel.endswith("/job.json") and rel.count("/") == 2
        }
    )
    jobs = []
    model = SessionModel()  # each events file is folded once: the report and the acceptance evaluation share it
    for d in job_dirs:
        reader = JobReader(files, d, scrub, spool_steps=step_tables is not None)
        jobs.append(reader.read())
        assert reader.fold is not None  # read() folds the job
        jobs[-1]["legs"] = leg_steps(files, session_dir, reader.jid, scrub)
        model.add(reader.fold)
        if step_tables is not None:
            step_tables[reader.jid] = reader.table
        if folds is not None:
            folds[reader.jid] = reader.fold
    jobs.sort(key=lambda j: (j["created"] or 0, j["jid"]))
    report: Dict[str, Any] = {
        "format": FORMAT,
        "generated": {"t": now, "iso": iso(now), "by": "ms-workbench %s" % __version__},
        "session": session_section(info, jobs, files, sid),
        "still_running": [j["jid"] for j in jobs if j["state"] == "running"],
        "environment": [env_record(j) for j in jobs if j["kind"] == "env"],
        "data": [data_record(j, files) for j in jobs if j["kind"] == "data"],
        "training": training_section(jobs),
        "performance": performance_rows(jobs),
        "alignment": alignment_section(jobs),
        "export": [export_record(j) for j in jobs if j["kind"] == "export"],
        "new_distribution": [_common(j) for j in jobs if j["kind"] == "shift"],
        "other_jobs": [other_record(j) for j in jobs if j["kind"] not in SECTION_KINDS],
        "checks": checks_section(jobs),
        "jobs_not_ok": [
            {
                "jid": j["jid"],
                "kind": j["kind"],
                "state": j["state"],
                "label": j["label"],
                "error": (j["finished"] or {}).get("error"),
            }
            for j in jobs
            if j["state"] not in ("ok", "running")
        ],
        "jobs": jobs,
    }
    report["not_verified"] = not_verified(report, jobs)
    report["limitations"] = limitations(report)
    cfg = load()  # the same computation as `ms-workbench accept`
    report["acceptance"] = evaluate(
        model,
        acceptance if acceptance is not None else cfg["acceptance"],
        cfg.get("compare"),
        about=about_session(session_dir),
    )
    report["session"]["imported"] = imported_mark(session_dir)  # None for a session made here
    return report


def session_section(info: Dict[str, Any], jobs: List[Dict[str, Any]], files: SessionFiles, sid: str) -> Dict[str, Any]:
    """Id, host, user, times, versions, command lines and the job list."""
    ends = [j["ended"] for j in jobs if isinstance(j["ended"], (int, float))]
    created = info.get("created")
    last = max(ends) if ends else created
    argv = info.get("argv") or []
    return {
        "id": info.get("id", sid),
        "host": info.get("host"),
        "user": info.get("user"),
        "created": created,
        "created_iso": iso(created),
        "last_activity": last,
        "last_activity_iso": iso(last),
        "version": info.get("version"),
        "versions_seen": sorted({str(j["version"]) for j in jobs if j["version"]}),
        "argv": argv,
        "command_line": " ".join(shlex.quote(str(a)) for a in argv),
        "commands": [{"jid": j["jid"], "command_line": j["command_line"]} for j in jobs],
        "bytes": files.total_bytes(),
        "jobs": [
            {
                "jid": j["jid"],
                "kind": j["kind"],
                "state": j["state"],
                "label": j["label"],
                "created_iso": j["created_iso"],
                "duration_s": j["duration_s"],
                "device": "%s:%s" % (j["device"].get("resolved", "?"), j["device"].get("id", 0)),
                "events": j["events"],
            }
            for j in jobs
        ],
    }


def _names(found: Any) -> List[str]:
    """A data job's class names as recorded, else Fashion-MNIST's (a damaged field is not a list of names)."""
    if isinstance(found, list) and found and all(isinstance(n, str) for n in found):
        return list(found)
    return list(CLASS_NAMES)


def _common(j: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "jid": j["jid"],
        "label": j["label"],
        "state": j["state"],
        "device": j["device"],
        "checks": j["checks"],
        "artifacts": j["artifacts"],
        "summary": j["result"],
    }


def env_record(j: Dict[str, Any]) -> Dict[str, Any]:
    """Environment job: checks with evidence levels, its summary, python and the allow-listed variables."""
    rec = _common(j)
    rec.update({"python": (j["started"] or {}).get("python") or j["python"], "env": j["env"]})
    return rec


def data_record(j: Dict[str, Any], files: SessionFiles) -> Dict[str, Any]:
    """Data job: checks, artifact hashes, the split record, class mapping and scaling."""
    rec = _common(j)
    split = None
    for entry in files.under("jobs/%s" % j["jid"]):
        if entry.rel.endswith("/split.json"):
            split = _json(entry.read())
            rec["split_path"] = entry.rel
            break
    summary = j["result"] if isinstance(j["result"], dict) else {}
    data_cfg = j["config"].get("data") or {}
    told = summary["split"] if isinstance(summary.get("split"), dict) else {}
    split = dict(split or {})
    for key, alt in (
        ("seed", "seed"),
        ("val_fraction", "val_fraction"),
        ("train_idx_sha256", "train_sha256"),
        ("val_idx_sha256", "val_sha256"),
        ("index_file", "index_file"),
    ):
        if split.get(key) is None and told.get(alt) is not None:
            split[key] = told[alt]
    totals = summary.get("totals") or {}
    split.setdefault("n_train", totals.get("train"))
    split.setdefault("n_val", totals.get("val"))
    if not split.get("source_files") and summary.get("files"):
        split["source_files"] = [
            {"name": f.get("name"), "sha256": f.get("sha256"), "verified": f.get("verified")}
            for f in summary["files"]
            if isinstance(f, dict)
        ]
    rec.update(
        {
            "split": split,
            "source": summary.get("source") or data_cfg.get("source"),
            "synthetic": bool(
                (split or {}).get("synthetic") or summary.get("synthetic") or data_cfg.get("source") == "synthetic"
            ),
            "scale": summary.get("scale") or data_cfg.get("scale"),
            "class_names": _names(summary.get("class_names") or summary.get("classes")),
        }
    )
    return rec


def training_section(jobs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Training runs (config, epochs, best epoch, perf) and the test-set evaluations."""
    runs = []
    for j in jobs:
        if j["kind"] != "train":
            continue
        cfg = j["config"]
        steps = j["steps"]
        curve = j["step_curve"]
        runs.append(
            dict(
                _common(j),
                **{
                    "config": {k: cfg.get(k) for k in ("device", "data", "model", "train") if k in cfg},
                    "config_yaml": j["config_yaml"],
                    "epochs": j["epochs"],
                    "best_epoch": j["best_epoch"],
                    "perf": j["perf"],
                    "steps_recorded": steps["recorded"],
                    "curve": {
                        "first_loss": curve["first_loss"],
                        "last_loss": curve["last_loss"],
                        "min_loss": curve["min_loss"],
                        "val_accuracy": [(e.get("val") or {}).get("accuracy") for e in j["epochs"]],
                    },
                    "class_names": list(CLASS_NAMES),
                    "parallel": parallel_record(j),
                },
            )
        )
    tests = []
    for j in jobs:
        if j["kind"] != "test":
            continue
        summary = j["result"] if isinstance(j["result"], dict) else {}
        tests.append(
            dict(
                _common(j),
                **{
                    "from": summary.get("from") or (j["config"].get("test") or {}).get("from"),
                    "accuracy": summary.get("accuracy"),
                    "macro_f1": summary.get("macro_f1"),
                    "samples": summary.get("samples") or summary.get("n"),
                    "evaluations_of_model": summary.get("test_evaluations"),
                    "per_class": summary.get("per_class"),
                    "confusion": summary.get("confusion"),
                    "zero_division": summary.get("zero_division"),
                },
            )
        )
    return {
        "runs": runs,
        "tests": tests,
        "test_evaluations": len(tests),
        "test_evaluations_ok": sum(1 for t in tests if t["state"] == "ok"),
    }


def alignment_section(jobs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Alignment jobs: reference and candidate, every tensor_diff, tolerances and the formula."""
    out = []
    for j in jobs:
        if j["kind"] != "align":
            continue
        align_cfg = j["config"].get("align") or {}
        diffs = j["tensor_diffs"]
        first = diffs[0] if diffs else {}
        out.append(
            dict(
                _common(j),
                **{
                    "reference": first.get("ref") or align_cfg.get("reference"),
                    "candidate": first.get("cand") or align_cfg.get("candidate"),
                    "tolerances": sorted({(d.get("atol"), d.get("rtol")) for d in diffs}, key=str),
                    "diffs": diffs,
                    "passed": sum(1 for d in diffs if d.get("passed") is True),
                    "failed": [d.get("name") for d in diffs if d.get("passed") is not True],
                },
            )
        )
    return {"formula": FORMULA, "jobs": out}


def export_record(j: Dict[str, Any]) -> Dict[str, Any]:
    """Export job: load checks, artifacts and their hashes, its summary."""
    return _common(j)


def other_record(j: Dict[str, Any]) -> Dict[str, Any]:
    """A job of a kind without its own section (drill, overfit, resume, precision, or a kind this version does not
    know); a job that runs `train` legs counts the steps of each leg (its own events hold none)."""
    rec = _common(j)
    legs = j.get("legs") or []
    rec.update(
        {
            "kind": j["kind"],
            "steps_recorded": j["steps"]["recorded"],
            "perf": j["perf"],
            "legs": legs,
            "leg_steps": sum(leg["steps"] for leg in legs),
        }
    )
    return rec


def leg_steps(files: SessionFiles, session_dir: Path, jid: str, scrub: Scrubber) -> List[Dict[str, Any]]:
    """[{leg, steps, state}] of each `legs/NAME/events.jsonl` of a job, folded like a job (steps of every rank)."""
    prefix = "jobs/%s/legs/" % jid
    names = sorted(
        {e.rel[len(prefix) :].split("/")[0] for e in files.under(prefix.rstrip("/")) if e.rel.endswith("/events.jsonl")}
    )
    out = []
    for name in names:
        entry = files.get(prefix + name + "/events.jsonl")
        fold = JobRecord(jid + "/" + name, "train", 0.0, session_dir / "jobs" / jid / "legs" / name)
        fold_file(fold, "events.jsonl", entry.chunks() if entry is not None else [], scrub.report_obj)
        out.append(
            {"leg": name, "steps": fold.steps_seen, "state": (fold.finished or {}).get("status") or "no finished event"}
        )
    return out


def checks_section(jobs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Counts by evidence level, and every check that is not an observed pass, with its reason."""
    counts = {s: 0 for s in Evidence.ALL}
    not_passed = []
    for j in jobs:
        for check in j["checks"]:
            status = str(check.get("status"))
            counts[status] = counts.get(status, 0) + 1
            if status != Evidence.PASS:
                reason = check.get("detail") or check.get("hint") or "no reason recorded"
                not_passed.append(dict(check, reason=reason))
    return {"counts": counts, "not_passed": not_passed}


def not_verified(report: Dict[str, Any], jobs: List[Dict[str, Any]]) -> List[str]:
    """Plain sentences about what this record does not show, derived from what is missing."""
    out = []
    ok = lambda kind: [j for j in jobs if j["kind"] == kind and j["state"] == "ok"]  # noqa: E731
    if report["still_running"]:
        out.append(
            "Jobs still running when this record was written: %s. Their records stop at the export; "
            "export again once they end." % ", ".join(report["still_running"])
        )
    names = {
        "env": "environment check",
        "data": "data contract check",
        "train": "training run",
        "align": "alignment of target against reference",
        "export": "export and reload check",
    }
    for kind, what in names.items():
        present = [j for j in jobs if j["kind"] == kind]
        if not present:
            out.append("No %s job: no %s in this session." % (kind, what))
        elif not ok(kind):
            out.append(
                "No %s job ended ok (%s): the %s is not established."
                % (kind, "; ".join("%s %s" % (j["jid"], j["label"]) for j in present), what)
            )
    if not ok("shift"):
        out.append(
            "No shift job ended ok: the candidate was not evaluated on new-distribution data (other lighting, "
            "backgrounds, framing, photos), so its scope of use is not stated."
        )
    ascend_ok = [j for j in jobs if j["device"].get("resolved") == "Ascend" and j["state"] == "ok"]
    if not ascend_ok:
        out.append("No job ran to completion on an Ascend device: nothing here says anything about Ascend hardware.")
    if report["training"]["runs"] and not report["training"]["test_evaluations_ok"]:
        out.append("No test-set evaluation ended ok: the reported accuracy is on the validation split only.")
    repeated = [
        t
        for t in report["training"]["tests"]
        if isinstance(t.get("evaluations_of_model"), int) and t["evaluations_of_model"] > 1
    ]
    for t in repeated:
        out.append(
            "The test set was evaluated %d times for %s: only the first result is an unbiased estimate."
            % (t["evaluations_of_model"], t["from"])
        )
    if any(d.get("synthetic") for d in report["data"]) or any(
        (r["config"].get("data") or {}).get("source") == "synthetic" for r in report["training"]["runs"]
    ):
        out.append("Synthetic data was used: its numbers say nothing about Fashion-MNIST.")
    for a in report["alignment"]["jobs"]:
        if a["failed"]:
            out.append(
                "Alignment %s: %d tensor(s) outside tolerance (%s)."
                % (a["jid"], len(a["failed"]), ", ".join(map(str, a["failed"][:8])))
            )
    missing = [a for j in jobs for a in j["artifacts"] if a["on_disk"] not in ("matches", "superseded")]
    if missing:
        out.append(
            "Artifacts whose file is missing or differs from its recorded hash: %s."
            % ", ".join("%s/%s (%s)" % (a["jid"], a.get("path"), a["on_disk"]) for a in missing[:10])
        )
    counts = report["checks"]["counts"]
    if counts.get(Evidence.FAIL):
        out.append("%d check(s) observed a failure (listed under 'Checks that did not pass')." % counts[Evidence.FAIL])
    if counts.get(Evidence.BLOCKED) or counts.get(Evidence.NOT_RUN):
        out.append(
            "%d check(s) blocked and %d not run (listed with their reasons under 'Checks that did not "
            "pass')." % (counts.get(Evidence.BLOCKED, 0), counts.get(Evidence.NOT_RUN, 0))
        )
    gaps = [j["jid"] for j in jobs if j["seq_problems"] or j["damaged_count"]]
    if gaps:
        out.append("Event files with gaps or damaged lines: %s." % ", ".join(gaps))
    return out
