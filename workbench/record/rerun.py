"""Re-running a record's candidate lineage (data, train, test, export) in a new session, and what differs.

The record's effective configs are run again, job references pointed at the new jobs, the new
training run frozen; then split hash, per-epoch losses, checkpoint hash, test metrics and the exported
reference outputs are compared in that order. The first difference stops the re-run and is named
with its size. Bit-identical where the course expects it on one machine (split and checkpoint
hashes, the test set's counts), within the stated tolerances otherwise.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from workbench.config.layers import load
from workbench.events.protocol import EventReader, decode_line
from workbench.run.runner import JobRunner
from workbench.session import candidate
from workbench.session.refs import JID_PATTERN, JOB_REF_KEYS
from workbench.session.store import SessionStore, job_status

LINEAGE_KINDS = ("data", "train", "test", "export")  # in the order they run
LOSS_RTOL = 1e-6  # per-epoch train loss: |new - recorded| <= LOSS_RTOL * max(1, |recorded|)
METRIC_ATOL = 0.0  # test accuracy and macro-F1 come from counts on a fixed set: equal or different
POLL_S = 0.2
PASS, FAIL, NOT_RUN, BLOCKED = "observed-pass", "observed-fail", "not-run", "blocked"


class RecordError(ValueError):
    """A record that cannot be re-run: the message names the file and what is missing."""


def find_record(ref: str, store: SessionStore) -> Path:
    """RECORD|SID -> the record folder (holding report.json): a folder, an unpacked <sid>/, or a session id."""
    path = Path(ref).expanduser()
    for folder in (path, path / "export"):
        if (folder / "report.json").is_file():
            return folder.resolve()
    if path.exists():
        raise RecordError("%s holds no report.json (nor export/report.json): not a session record" % path)
    folder = store.session_dir(ref) / "export"  # BadReference / FileNotFoundError name the id
    if not (folder / "report.json").is_file():
        raise RecordError(
            "session %s has no record (%s is missing): write it with `%s`"
            % (ref, folder / "report.json", store.command("export", ref))
        )
    return folder


def read_record(folder: Path) -> Dict[str, Any]:
    """report.json of the record; RecordError unless it names a candidate and its training run's config."""
    path = folder / "report.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RecordError("%s cannot be read: %s" % (path, exc)) from None
    lineage = report.get("candidate") if isinstance(report, dict) else None
    if not isinstance(lineage, dict) or not lineage.get("candidate"):
        raise RecordError(
            "%s names no frozen candidate: there is no model lineage to reproduce "
            "(records written before candidates existed, or a session where nothing was frozen)" % path
        )
    return report


def plan(report: Dict[str, Any]) -> List[Tuple[str, str, Dict[str, Any]]]:
    """[(kind, recorded jid, recorded effective config)] of the candidate's lineage, in the order to run."""
    by_id = {j["jid"]: j for j in report["jobs"]}
    jids = report["candidate"]["jobs"]
    out = []
    for kind in LINEAGE_KINDS:
        jid = jids.get(kind)
        if not jid:
            if kind == "train":
                raise RecordError("the record's candidate names no training run")
            continue
        job = by_id.get(jid)
        if job is None or not isinstance(job.get("config"), dict):
            raise RecordError("report.json has no effective config of %s (the %s step of the lineage)" % (jid, kind))
        out.append((kind, jid, job["config"]))
    return out


def rewrite_refs(cfg: Dict[str, Any], jid: str, mapping: Dict[str, str]) -> Dict[str, Any]:
    """The config with job references to lineage jobs pointed at their re-runs; RecordError for any other job."""
    cfg = copy.deepcopy(cfg)
    cfg.pop("python", None)  # the recorded interpreter's path belongs to the recording machine: jobs use this one
    for key in JOB_REF_KEYS:
        section, name = key.split(".")
        value = (cfg.get(section) or {}).get(name)
        if not isinstance(value, str) or value == candidate.INIT_VALUE:
            continue
        if value in mapping:
            cfg[section][name] = mapping[value]
        elif JID_PATTERN.fullmatch(value) or "/" in value:
            raise RecordError(
                "%s ran with %s=%s, a job outside the candidate's lineage (%s): it cannot be re-run from the record"
                % (jid, key, value, ", ".join(sorted(mapping)) or "none run yet")
            )
    return cfg


def conditions(started: Optional[Dict[str, Any]]) -> str:
    """'MindSpore 2.10.0 on CPU' from a training run's started event (what bit-identity depends on)."""
    started = started or {}
    version = (started.get("mindspore") or {}).get("version") or "?"
    device = (started.get("device") or {}).get("resolved") or (started.get("device") or {}).get("target") or "?"
    return "MindSpore %s on %s" % (version, device)


def _events(job_dir: Path, kind: str) -> List[Dict[str, Any]]:
    reader = EventReader(str(job_dir / "events.jsonl"))
    return [ev for ev in (decode_line(raw) for raw in reader.read_lines() if raw.strip()) if ev.get("type") == kind]


def _sha256(path: Path) -> Optional[str]:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _bytes_differing(a: Path, b: Path) -> str:
    """'N of M bytes differ' (or both sizes when they differ): the size of a checkpoint difference."""
    try:
        x, y = a.read_bytes(), b.read_bytes()
    except OSError as exc:
        return "cannot compare the bytes (%s)" % exc
    if len(x) != len(y):
        return "%d bytes against %d bytes" % (len(x), len(y))
    return "%d of %d bytes differ" % (sum(1 for p, q in zip(x, y) if p != q), len(x))


class Comparison:
    """One compared quantity: recorded, reproduced, the rule and the verdict."""

    def __init__(self, what: str, status: str, detail: str):
        self.what = what
        self.status = status
        self.detail = detail

    def line(self) -> str:
        """'observed-pass  checkpoint hash: ...'."""
        return "%-14s %s: %s" % (self.status, self.what, self.detail)


def compare_split(recorded: Optional[str], lineage: Dict[str, Any]) -> Comparison:
    """The split hash: bit-identical."""
    got = lineage.get("split_sha256")
    if not recorded:
        return Comparison("split hash", NOT_RUN, "the record holds no split hash")
    if got == recorded:
        return Comparison("split hash", PASS, "%s, identical" % recorded[:16])
    return Comparison("split hash", FAIL, "recorded %s, reproduced %s" % (recorded, got))


def compare_losses(recorded: List[Any], got: List[Any]) -> Comparison:
    """Per-epoch train losses: |new - recorded| <= LOSS_RTOL * max(1, |recorded|), same number of epochs."""
    if len(recorded) != len(got):
        return Comparison("per-epoch losses", FAIL, "%d epochs recorded, %d reproduced" % (len(recorded), len(got)))
    worst = 0.0
    for epoch, (r, g) in enumerate(zip(recorded, got), start=1):
        if not isinstance(r, (int, float)) or not isinstance(g, (int, float)):
            return Comparison("per-epoch losses", FAIL, "epoch %d: recorded %r, reproduced %r" % (epoch, r, g))
        diff = abs(float(g) - float(r))
        if diff > LOSS_RTOL * max(1.0, abs(float(r))):
            return Comparison(
                "per-epoch losses",
                FAIL,
                "epoch %d: recorded %.10g, reproduced %.10g, |Δ| %.3g (tolerance %g relative)"
                % (epoch, r, g, diff, LOSS_RTOL),
            )
        worst = max(worst, diff)
    return Comparison(
        "per-epoch losses",
        PASS,
        "%d epoch(s), max |Δ| %.3g (%s; tolerance %g relative)"
        % (len(got), worst, "bit-identical" if worst == 0 else "within tolerance", LOSS_RTOL),
    )


def compare_checkpoint(recorded_sha: str, record_file: Optional[Path], new_file: Path) -> Comparison:
    """The checkpoint: the record's file must hash to the frozen SHA-256, and the re-run's must equal it."""
    got = _sha256(new_file)
    if record_file is not None:
        held = _sha256(record_file)
        if held != recorded_sha:
            return Comparison(
                "checkpoint hash",
                FAIL,
                "the record's %s has SHA-256 %s, not the frozen %s (the record's file was changed); reproduced %s: %s"
                % (record_file.name, held, recorded_sha, got, _bytes_differing(record_file, new_file)),
            )
    if got == recorded_sha:
        return Comparison("checkpoint hash", PASS, "%s, bit-identical" % got)
    size = _bytes_differing(record_file, new_file) if record_file is not None else "record file not at hand"
    return Comparison("checkpoint hash", FAIL, "recorded %s, reproduced %s: %s" % (recorded_sha, got, size))


def compare_test(recorded: Optional[Dict[str, Any]], got: Optional[Dict[str, Any]]) -> Comparison:
    """Test accuracy and macro-F1: equal (counts on the fixed test set)."""
    if not recorded:
        return Comparison("test metrics", NOT_RUN, "the record holds no test of the candidate")
    got = got or {}
    for key in ("accuracy", "macro_f1"):
        r, g = recorded.get(key), got.get(key)
        if not isinstance(r, (int, float)) or not isinstance(g, (int, float)) or abs(g - r) > METRIC_ATOL:
            return Comparison("test metrics", FAIL, "%s recorded %r, reproduced %r" % (key, r, g))
    return Comparison(
        "test metrics", PASS, "accuracy %.6g, macro-F1 %.6g, identical" % (got["accuracy"], got["macro_f1"])
    )


def compare_outputs(
    record_dir: Path, lineage: Dict[str, Any], new_export: Optional[Path], loader: Callable[[Path], Any]
) -> Comparison:
    """Reference logits of the re-run export against the record's: identical, else within the reference tolerance."""
    recorded_sha = (lineage.get("measured") or {}).get("reference_logits_sha256")
    if not recorded_sha or new_export is None:
        return Comparison("exported outputs", NOT_RUN, "the record holds no reference outputs of the candidate")
    new_logits = new_export / "artifacts" / "reference" / "logits.npy"
    got = _sha256(new_logits)
    if got == recorded_sha:
        return Comparison("exported outputs", PASS, "reference logits %s, bit-identical" % recorded_sha[:16])
    held = record_dir / "deliverable" / "reference" / "logits.npy"
    if _sha256(held) != recorded_sha:
        return Comparison(
            "exported outputs", FAIL, "reproduced logits %s differ from the recorded %s" % (got, recorded_sha)
        )
    ref = json.loads((record_dir / "deliverable" / "reference" / "reference.json").read_text(encoding="utf-8"))
    tol = ref.get("tolerance") or {}
    a, b = loader(held), loader(new_logits)
    if getattr(a, "shape", None) != getattr(b, "shape", None):
        return Comparison("exported outputs", FAIL, "shape %s recorded, %s reproduced" % (a.shape, b.shape))
    diff = abs(b - a)
    ok = bool((diff <= tol.get("atol", 0.0) + tol.get("rtol", 0.0) * abs(a)).all())
    return Comparison(
        "exported outputs",
        PASS if ok else FAIL,
        "reference logits max |Δ| %.3g (atol %g, rtol %g)"
        % (float(diff.max()), float(tol.get("atol") or 0.0), float(tol.get("rtol") or 0.0)),
    )


def run_job(
    store: SessionStore, sid: str, kind: str, cfg: Dict[str, Any], argv: List[str], timeout_s: float = 0
) -> Path:
    """Start one job and wait for its end (the supervisor runs it; nothing here touches MindSpore)."""
    job_dir = JobRunner(store).start(sid, kind, cfg, command=argv)
    deadline = time.time() + timeout_s if timeout_s else None
    while not job_status(job_dir).done:
        if deadline is not None and time.time() > deadline:
            JobRunner.cancel(job_dir)
            break
        time.sleep(POLL_S)
    return job_dir


def reproduce(
    record_dir: Path,
    store: SessionStore,
    argv: List[str],
    say: Callable[[str], None],
    loader: Callable[[Path], Any],
) -> Tuple[bool, List[Comparison], str]:
    """Re-run the record's lineage in a new session of `store` -> (reproduced, comparisons, new session id)."""
    report = read_record(record_dir)
    lineage = report["candidate"]
    cand = lineage["candidate"]
    measured = lineage.get("measured") or {}
    steps = plan(report)
    configs = []
    mapping: Dict[str, str] = {}
    sid = store.create(argv)
    say("re-running %s's lineage (%s) in session %s" % (report["session"]["id"], cand["run"], sid))
    done: List[Comparison] = []
    jobs: Dict[str, Path] = {}
    for kind, jid, recorded_cfg in steps:
        cfg = load(None, [], extra=[("%s of the record" % jid, rewrite_refs(recorded_cfg, jid, mapping))])
        configs.append(cfg)
        job_dir = run_job(store, sid, kind, cfg, argv)
        status = job_status(job_dir)
        say("%s -> %s: %s" % (jid, job_dir.name, status.label()))
        if status.state != "ok":
            # A refused start (the device held by another job) says nothing about the model: blocked.
            done.append(
                Comparison(
                    "%s re-run" % kind,
                    BLOCKED if status.reason.startswith("refused:") else FAIL,
                    "%s (recorded %s) ended %s" % (job_dir.name, jid, status.label()),
                )
            )
            return False, done, sid
        mapping[jid] = job_dir.name
        jobs[kind] = job_dir
        if kind == "train":
            session_dir = store.session_dir(sid)
            new = candidate.freeze(
                session_dir, candidate.from_run(session_dir, job_dir), "reproduce of %s" % cand["run"]
            )
            record_ckpt = record_dir / "deliverable" / "model.ckpt"
            losses = [ev.get("train_loss") for ev in _events(job_dir, "epoch")]
            was = conditions(next((j.get("started") for j in report["jobs"] if j["jid"] == cand["run"]), None))
            started = _events(job_dir, "started")
            now = conditions(started[-1] if started else None)
            say(
                "conditions: %s here, %s in the record%s"
                % (now, was, "" if now == was else " (bit-identity is expected only under the same conditions)")
            )
            for comparison in (
                compare_split(cand.get("split_sha256"), {"split_sha256": new.split_sha256}),
                compare_losses(list(measured.get("epoch_losses") or []), losses),
                compare_checkpoint(
                    cand["sha256"], record_ckpt if record_ckpt.is_file() else None, session_dir / new.checkpoint
                ),
            ):
                done.append(comparison)
                say(comparison.line())
                if comparison.status == FAIL:
                    return False, done, sid
        elif kind == "test":
            results = _events(job_dir, "result")
            comparison = compare_test(measured.get("test"), (results[-1].get("summary") if results else None))
            done.append(comparison)
            say(comparison.line())
            if comparison.status == FAIL:
                return False, done, sid
    if "test" not in jobs:
        done.append(compare_test(None, None))
        say(done[-1].line())
    comparison = compare_outputs(record_dir, lineage, jobs.get("export"), loader)
    done.append(comparison)
    say(comparison.line())
    return comparison.status != FAIL, done, sid


def verdict_line(ok: bool, comparisons: List[Comparison], sid: str) -> str:
    """The last line: reproduced, the first difference and its size, a failed re-run, or what blocked it."""
    if ok:
        return "observed-pass: reproduced (session %s)" % sid
    first = next(c for c in comparisons if c.status in (FAIL, BLOCKED))
    if first.status == BLOCKED:
        return "blocked: %s: %s (session %s)" % (first.what, first.detail, sid)
    if first.what.endswith(" re-run"):
        return "observed-fail: %s failed: %s (session %s)" % (first.what, first.detail, sid)
    return "observed-fail: %s differs: %s (session %s)" % (first.what, first.detail, sid)
