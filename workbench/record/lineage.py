"""The candidate's lineage out of a collected record: split -> train -> freeze -> test -> align -> export -> reference.

Each step names its job, the subject its evidence is about (a checkpoint SHA-256, `initial weights`)
and its verdict. Jobs whose subject is another model are listed apart: their artefacts are never
the hand-over. Pure code over the collected report and the session's candidate.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.session.candidate import CHECKPOINT_PREFIX, INITIAL_WEIGHTS, Candidate, checkpoint_subject

PASS, FAIL, NOT_RUN = "observed-pass", "observed-fail", "not-run"
MODEL_KINDS = ("test", "align", "export")  # jobs whose evidence is about one model's weights
SPLIT_PREFIX = "split:"  # + split_sha256: the subject of the split step


def _check(j: Dict[str, Any], cid: str) -> Optional[Dict[str, Any]]:
    found = [c for c in j.get("checks") or [] if c.get("id") == cid]
    return found[-1] if found else None


def _written_subject(j: Dict[str, Any]) -> Optional[str]:
    """The weights subject the job's checks carry themselves (`checkpoint:<sha256>` or `initial weights`)."""
    for c in j.get("checks") or []:
        subject = c.get("subject")
        if isinstance(subject, str) and (subject.startswith(CHECKPOINT_PREFIX) or subject == INITIAL_WEIGHTS):
            return subject
    return None


def job_subject(j: Dict[str, Any]) -> Optional[str]:
    """The weights a test, align or export job looked at: `checkpoint:<sha256>`, `initial weights`, or None.

    Jobs recorded before checks carried subjects are read from their evidence: the test's checkpoint
    check, the export's source check, the align job's init-weights artefact.
    """
    written = _written_subject(j)
    if written:
        return written
    kind, sha = j.get("kind"), None
    if kind == "test":
        sha = ((_check(j, "checkpoint") or {}).get("evidence") or {}).get("sha256")
    elif kind == "export":
        evidence = (_check(j, "source") or {}).get("evidence") or {}
        if (evidence.get("source") or {}).get("kind") == "fresh-init":
            return INITIAL_WEIGHTS
        sha = evidence.get("sha256")
    elif kind == "align":
        for a in j.get("artifacts") or []:
            if a.get("kind") == "init-weights":
                if not a.get("source"):
                    return INITIAL_WEIGHTS
                sha = a.get("sha256")
    return checkpoint_subject(sha) if isinstance(sha, str) and sha else None


def _verdict(j: Dict[str, Any], cid: Optional[str] = None) -> str:
    """The named check's evidence level, else the job's: ok -> observed-pass, otherwise observed-fail."""
    if cid is not None:
        c = _check(j, cid)
        if c is not None:
            return str(c.get("status"))
    return PASS if j.get("state") == "ok" else FAIL


def _artifact(j: Dict[str, Any], kind: str) -> Optional[Dict[str, Any]]:
    found = [a for a in j.get("artifacts") or [] if a.get("kind") == kind and a.get("on_disk") == "matches"]
    return found[-1] if found else None


def _step(name: str, j: Optional[Dict[str, Any]], subject: Optional[str], verdict: str, detail: str) -> Dict[str, Any]:
    return {"step": name, "job": j["jid"] if j else None, "subject": subject, "verdict": verdict, "detail": detail}


def _newest(jobs: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    ok = [j for j in jobs if j.get("state") == "ok"] or jobs
    return ok[-1] if ok else None


def _model_artifacts(j: Dict[str, Any]) -> List[str]:
    """The files of a job that hold or describe weights (checkpoints, MindIR, reference sets)."""
    kinds = ("checkpoint", "mindir", "init-weights")
    return [
        str(a.get("session_path"))
        for a in j.get("artifacts") or []
        if (a.get("kind") in kinds or str(a.get("kind", "")).startswith("reference")) and a.get("session_path")
    ]


def _other(j: Dict[str, Any]) -> Dict[str, Any]:
    return {"jid": j["jid"], "kind": j["kind"], "subject": job_subject(j), "artifacts": _model_artifacts(j)}


def _loss_list(j: Dict[str, Any]) -> List[Optional[float]]:
    return [e.get("train_loss") for e in j.get("epochs") or []]


def lineage(
    report: Dict[str, Any], cand: Optional[Candidate], history_n: int = 0, commands: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """The `candidate` section of report.json: the candidate, its lineage steps, other models, measured values.

    `commands` are the next commands as they run from where the record was written ({"freeze", "export"}).
    """
    jobs = report["jobs"]
    commands = dict(commands or {})
    if cand is None:
        others = [_other(j) for j in jobs if j["kind"] in MODEL_KINDS]
        return {
            "candidate": None,
            "freezes": 0,
            "steps": [],
            "other_models": others,
            "jobs": {},
            "measured": {},
            "commands": commands,
        }
    by_id = {j["jid"]: j for j in jobs}
    train = by_id.get(cand.run)
    mine = checkpoint_subject(cand.sha256)
    about = [j for j in jobs if j["kind"] in MODEL_KINDS and job_subject(j) == mine]
    others = [_other(j) for j in jobs if j["kind"] in MODEL_KINDS and job_subject(j) != mine]
    tests = [j for j in about if j["kind"] == "test"]
    aligns = [j for j in about if j["kind"] == "align"]
    exports = [j for j in about if j["kind"] == "export"]
    test, export = (tests or [None])[0], _newest(exports)  # the first evaluation of the candidate is the reported one
    data_ref = ((train or {}).get("config") or {}).get("data", {}).get("from") if train else None
    data_job = by_id.get(data_ref) if isinstance(data_ref, str) else None
    steps = []
    split_check = _check(train, "data-split") if train else None
    steps.append(
        _step(
            "split",
            data_job or train,
            SPLIT_PREFIX + cand.split_sha256 if cand.split_sha256 else None,
            str(split_check.get("status")) if split_check else NOT_RUN,
            ("made by %s, reused by %s" % (data_job["jid"], cand.run))
            if data_job
            else "made by the training run itself (data.from not set)",
        )
    )
    ckpt = _artifact(train, "checkpoint") if train else None
    steps.append(
        _step(
            "training run",
            train,
            mine,
            PASS if train and train.get("state") == "ok" and ckpt and ckpt.get("sha256") == cand.sha256 else FAIL,
            "epoch %s, %s" % (cand.epoch, cand.checkpoint) if train else "%s is not in this record" % cand.run,
        )
    )
    steps.append(
        _step(
            "freeze",
            None,
            mine,
            PASS if ckpt and ckpt.get("sha256") == cand.sha256 else FAIL,
            "freeze %d of %d: %s" % (cand.n, max(history_n, cand.n), cand.reason),
        )
    )
    steps.append(
        _step(
            "test",
            test,
            mine if test else None,
            _verdict(test, "test-evaluations") if test else NOT_RUN,
            "accuracy %s, macro-F1 %s on the test set" % _metrics(test) if test else "no test job on the candidate",
        )
    )
    for j in aligns:
        steps.append(_step("alignment", j, mine, _verdict(j), str(j.get("label"))))
    if not aligns:
        steps.append(_step("alignment", None, None, NOT_RUN, "no align job on the candidate's weights"))
    steps.append(
        _step(
            "export",
            export,
            mine if export else None,
            _verdict(export, "mindir-load") if export else NOT_RUN,
            ("checkpoint and MindIR, %s" % export.get("label")) if export else "no export job on the candidate",
        )
    )
    logits = _artifact(export, "reference-logits") if export else None
    inputs = _artifact(export, "reference-inputs") if export else None
    steps.append(
        _step(
            "reference outputs",
            export if logits else None,
            mine if logits else None,
            _verdict(export, "reference") if export and logits else NOT_RUN,
            ("logits %s, inputs %s" % (logits["session_path"], (inputs or {}).get("session_path")))
            if logits
            else "no reference set of the candidate",
        )
    )
    measured = {
        "split_sha256": cand.split_sha256,
        "epoch_losses": _loss_list(train) if train else [],
        "checkpoint_sha256": cand.sha256,
        "test": {k: (test.get("result") or {}).get(k) for k in ("accuracy", "macro_f1")} if test else None,
        "reference_logits_sha256": logits.get("sha256") if logits else None,
        "reference_inputs_sha256": inputs.get("sha256") if inputs else None,
    }
    return {
        "candidate": cand.as_dict(),
        "freezes": max(history_n, cand.n),
        "steps": steps,
        "other_models": others,
        "jobs": {
            "data": data_job["jid"] if data_job else None,
            "train": cand.run,
            "test": test["jid"] if test else None,
            "align": [j["jid"] for j in aligns],
            "export": export["jid"] if export else None,
        },
        "measured": measured,
        "commands": commands,
    }


def _metrics(j: Dict[str, Any]) -> tuple:
    result = j.get("result") or {}
    return tuple(
        "%.4f" % result[k] if isinstance(result.get(k), (int, float)) else "-" for k in ("accuracy", "macro_f1")
    )
