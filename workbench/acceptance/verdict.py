"""The acceptance verdict: the session's one fold (SessionModel) judged in layers: task, framework, device, performance.

Pure: no I/O. Each layer's verdict comes from its required checks (config section `acceptance`) with their
evidence level and the device each was observed on. A layer passes only when every required check is
observed-pass on the target; CPU evidence never passes the device layer, and with a CPU target that layer is
`not-run` (no device claim). The performance row judges the throughput/step-time thresholds with their
conditions, `not-required` when none is set. The TUI, `ms-workbench accept` and report.json all show this one computation.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Dict, List, Optional, Tuple

from workbench.acceptance import testset
from workbench.acceptance.about import About, about_other, counts
from workbench.acceptance.effect import effect_row
from workbench.acceptance.how import how_to_produce
from workbench.acceptance.performance import KEYS as PERF_KEYS
from workbench.acceptance.performance import NOT_REQUIRED
from workbench.acceptance.performance import performance_rows as perf_rows
from workbench.events.protocol import Evidence
from workbench.fold.record import JobRecord, SessionModel
from workbench.fold.series import number
from workbench.session.candidate import Candidate, subject_label

FORMAT = "ms-workbench.acceptance.verdict/1"
LAYERS = ("task", "framework", "device", "performance")
ORDER = (Evidence.FAIL, Evidence.BLOCKED, Evidence.NOT_RUN, Evidence.PASS)  # the worst level decides
CPU_DEVICE_SUMMARY = "not-run: target CPU, no device claim"
THRESHOLDS_NOTE = (
    "thresholds are this project's acceptance fields (config section `acceptance`), set from its own "
    "baseline runs; fill them per task; they are not hardware promises"
)
ALIGN_PAIRS = ("graph-vs-pynative", "fp32-vs-candidate")


def worst(levels: List[str]) -> str:
    """The deciding level of several: fail > blocked > not-run > pass (pass only when all pass)."""
    for level in ORDER:
        if level in levels:
            return level
    return Evidence.NOT_RUN


def device_name(value: Any) -> str:
    """'Ascend:0' -> 'Ascend'; '' for nothing."""
    return str(value or "").split(":", 1)[0]


def on_target(device: Any, target: str) -> bool:
    """A check counts for the target only when it was observed on that device kind."""
    return device_name(device).lower() == target.lower() and target != ""


def session_target(model: SessionModel) -> Dict[str, Any]:
    """The device the session claims: the newest train run's resolution, else the newest job's that said one."""
    for kinds in (("train",), ("test", "export", "align", "env")):
        rec = model.newest(*kinds, started=True)
        if rec is not None and rec.device.get("resolved"):
            dev = rec.device
            return {
                "device": device_name(dev.get("resolved")),
                "requested": dev.get("requested"),
                "why": "%s (from %s)" % (dev.get("why") or "", rec.jid),
            }
    return {"device": "CPU", "requested": None, "why": "no job has resolved a device yet; CPU assumed"}


def _row(
    job: Optional[str],
    check: str,
    level: str,
    device: Optional[str],
    value: Any = None,
    threshold: Any = None,
    detail: str = "",
) -> Dict[str, Any]:
    return {
        "job": job,
        "check": check,
        "level": level,
        "device": device,
        "value": value,
        "threshold": threshold,
        "detail": detail,
    }


class LayerJudge:
    """Collects one layer's deciding rows and missing pieces, then says its verdict."""

    def __init__(self, layer: str, target: str, train_jid: Optional[str]):
        self.layer, self.target, self.train_jid = layer, target, train_jid
        self.about = About()  # what the verdict is about (the candidate) and how its commands name the session
        self.deciding: List[Dict[str, Any]] = []
        self.missing: List[Dict[str, Any]] = []
        self.levels: List[str] = []

    def add(self, row: Dict[str, Any], kind: str = "") -> None:
        """One required check: its row counts at its level, off-target passes count as not-run."""
        self.deciding.append(row)
        level = row["level"] if row["level"] in Evidence.ALL else Evidence.NOT_RUN
        if level == Evidence.PASS and not on_target(row["device"], self.target):
            level = Evidence.NOT_RUN
            row["detail"] = (
                "observed on %s, target %s: does not count; " % (row["device"], self.target) + row["detail"]
            ).rstrip("; ")
        self.levels.append(level)
        if level != Evidence.PASS and level != Evidence.FAIL:
            self.want(row["check"], kind)

    def want(self, check: str, kind: str = "") -> None:
        """Name what would produce `check` on the target."""
        how = how_to_produce(check.split(":")[-1], kind, self.train_jid, self.target)
        how["command"] = self.about.complete(how["command"])
        for have in self.missing:  # one entry per command, naming every check it produces
            if (have["command"], have["key"]) == (how["command"], how["key"]):
                have["what"] = have["what"][:-1] + ", %s)" % check
                return
        how["what"] = "%s (%s)" % (how["what"], check)
        self.missing.append(how)

    def verdict(self) -> Tuple[str, str]:
        """(level, one-line summary naming what decided it)."""
        level = worst(self.levels)
        if level == Evidence.PASS:
            return level, "observed-pass: %d of %d required checks on %s" % (
                len(self.levels),
                len(self.levels),
                self.target,
            )
        bad = [r for r, lv in zip(self.deciding, self.levels) if lv == level]
        named = "; ".join(_short(r) for r in bad[:3]) + ("; …" if len(bad) > 3 else "")
        return level, "%s: %s" % (level, named)

    def layer_dict(self) -> Dict[str, Any]:
        """The layer in the acceptance shape."""
        level, summary = self.verdict()
        seen = []
        for row in self.deciding:
            dev = device_name(row["device"])
            if dev and dev not in seen:
                seen.append(dev)
        return {
            "layer": self.layer,
            "verdict": level,
            "summary": summary,
            "observed_on": seen,
            "deciding": self.deciding,
            "missing": self.missing,
        }


def _short(row: Dict[str, Any]) -> str:
    """A check for the summary line, with its number against its threshold when it has one."""
    if row["value"] is not None and row["threshold"] is not None:
        return "%s %s (needs %s)" % (row["check"], _fmt(row["value"]), row["threshold"])
    return "%s %s" % (row["check"], row["detail"][:80] if row["detail"] else row["level"])


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "%.4g" % value
    return str(value)


# -- finding checks in the fold ---------------------------------------------------------------------
def _split_spec(spec: str) -> Tuple[str, str]:
    """'export:mindir-b*' -> ('export', 'mindir-b*'); 'overfit-batch' -> ('', 'overfit-batch')."""
    kind, _, check = spec.rpartition(":")
    return kind, check


def _check_device(rec: JobRecord, cid: str) -> Optional[str]:
    """Where a check was observed: the target its evidence names (probes), else the job's resolved device."""
    ev = rec.checks.get(cid) or {}
    evidence = ev["evidence"] if isinstance(ev.get("evidence"), dict) else {}
    named = evidence.get("target") if isinstance(evidence.get("target"), str) else None
    return device_name(named or rec.check_device.get(cid) or rec.device.get("resolved")) or None


def _job_row(rec: JobRecord, cid: str) -> Dict[str, Any]:
    ev = rec.checks[cid]
    return _row(rec.jid, cid, str(ev.get("status")), _check_device(rec, cid), detail=str(ev.get("detail") or ""))


def find_checks(
    model: SessionModel, kind: str, pattern: str, about: Optional[About] = None
) -> List[Tuple[JobRecord, str]]:
    """The newest job (of `kind`, any when '') holding checks matching `pattern` that count for the candidate
    (with `about`; evidence about another model never does), with the matching ids."""
    for rec in reversed(model.of_kind(kind) if kind else model.of_kind()):
        ids = [cid for cid in rec.checks if fnmatch.fnmatchcase(cid, pattern)]
        if about is not None:
            ids = [cid for cid in ids if counts(rec, cid, about.candidate)]
        if ids:
            return [(rec, cid) for cid in ids]
    return []


def _elsewhere(model: SessionModel, kind: str, pattern: str) -> str:
    """'; export-001 has it about initial weights (does not count)' when only another model's evidence exists."""
    other = find_checks(model, kind, pattern)
    if not other:
        return ""
    rec, cid = other[0]
    return "; %s has it about %s (another model: does not count)" % (
        rec.jid,
        subject_label((rec.checks.get(cid) or {}).get("subject")),
    )


def _batch_of(ev: Dict[str, Any], cid: str) -> Optional[int]:
    size = ev.get("batch_size")
    if type(size) is int:
        return size
    if cid.startswith("mindir-b") and cid[8:].isdigit():
        return int(cid[8:])
    return None


def _export_tolerance(judge: LayerJudge, rec: JobRecord, cid: str, cfg: Dict[str, Any]) -> Dict[str, Any]:
    """A reload check: its own level, then its max |diff| against the tolerance of its batch size."""
    row = _job_row(rec, cid)
    ev = rec.checks[cid]
    size = _batch_of(ev, cid)
    by_batch = {int(k): v for k, v in (cfg.get("export_max_abs_diff_by_batch") or {}).items()}
    tol = by_batch.get(size, cfg.get("export_max_abs_diff")) if size is not None else cfg.get("export_max_abs_diff")
    max_abs = number(ev.get("max_abs"))
    if max_abs is not None and tol is not None:
        row["value"], row["threshold"] = max_abs, "<= %g" % tol
        if row["level"] == Evidence.PASS and max_abs > tol:
            row["level"] = Evidence.FAIL
            row["detail"] = "max |diff| %g > %g (batch %s); %s" % (max_abs, tol, size, row["detail"])
    return row


def _expand_mindir(model: SessionModel, kind: str, pattern: str) -> List[str]:
    """mindir-b* means one check per export.batch_sizes of the newest export job."""
    rec = model.newest(kind or "export", started=True)
    sizes = ((rec.config.get("export") or {}).get("batch_sizes") if rec is not None else None) or []
    return ["mindir-b%d" % s for s in sizes if type(s) is int] or [pattern]


def judge_job_check(judge: LayerJudge, model: SessionModel, spec: str, cfg: Dict[str, Any]) -> None:
    """A required check a job emits ('[kind:]id', '*' = every match)."""
    kind, pattern = _split_spec(spec)
    ids = _expand_mindir(model, kind, pattern) if pattern == "mindir-b*" else [pattern]
    for want in ids:
        found = find_checks(model, kind, want, judge.about)
        if not found:
            judge.add(
                _row(
                    None,
                    want if kind == "" else "%s:%s" % (kind, want),
                    Evidence.NOT_RUN,
                    None,
                    detail="no %s has emitted it about the candidate%s"
                    % ("%s job" % kind if kind else "job", _elsewhere(model, kind, want)),
                ),
                kind,
            )
            continue
        for rec, cid in found:
            is_reload = cid == "ckpt-reload" or cid.startswith("mindir-b")
            judge.add(_export_tolerance(judge, rec, cid, cfg) if is_reload else _job_row(rec, cid), rec.kind)


# -- the alignment pairs -------------------------------------------------------------------------------
def align_pair(rec: JobRecord) -> Optional[str]:
    """Which required comparison an align job is: graph-vs-pynative (both fp32) or fp32-vs-candidate."""
    align = rec.config["align"] if isinstance(rec.config.get("align"), dict) else {}
    ref, cand = align.get("reference") or {}, align.get("candidate") or {}
    if ref.get("precision") == "fp32" and cand.get("precision") == "fp32" and ref.get("mode") != cand.get("mode"):
        return "graph-vs-pynative"
    if ref.get("precision") == "fp32" and cand.get("precision") not in (None, "fp32"):
        return "fp32-vs-candidate"
    return None


def judge_alignment(judge: LayerJudge, model: SessionModel, pair: str, cfg: Dict[str, Any]) -> None:
    """The newest align job of this comparison: its verdict, observed on its candidate's device."""
    every = [r for r in model.of_kind("align") if align_pair(r) == pair and "alignment" in r.checks]
    recs = [r for r in every if counts(r, "alignment", judge.about.candidate)]
    if not recs:
        other = "; %s compared them about another model (does not count)" % every[-1].jid if every else ""
        judge.add(
            _row(
                None,
                "align:" + pair,
                Evidence.NOT_RUN,
                None,
                detail="no align job compared these paths " + "about the candidate" + other,
            ),
            "align",
        )
        return
    rec = recs[-1]
    ev = rec.checks["alignment"]
    cand = ((rec.config.get("align") or {}).get("candidate") or {}).get("target")
    device = device_name(cand) if cand not in (None, "auto") else device_name(rec.device.get("resolved"))
    row = _row(rec.jid, "align:" + pair, str(ev.get("status")), device, detail=str(ev.get("detail") or ""))
    bound = cfg.get("align_max_abs_diff")
    diffs = [d for d in (number(t.get("max_abs")) for t in rec.tensor_diffs) if d is not None]
    if bound is not None and diffs:
        row["value"], row["threshold"] = max(diffs), "<= %g" % bound
        if row["level"] == Evidence.PASS and max(diffs) > bound:
            row["level"] = Evidence.FAIL
            row["detail"] = "largest tensor |diff| %g > %g; %s" % (max(diffs), bound, row["detail"])
    else:
        row["threshold"] = "align job's rule: |cand - ref| <= atol + rtol*|ref|"
    judge.add(row, "align")


# -- the task layer --------------------------------------------------------------------------------------
ENDED_BADLY = ("failed", "crashed", "timed-out", "stalled", "cancelled", "damaged")


def best_train(model: SessionModel) -> Optional[JobRecord]:
    """The run the task layer judges: the newest train run with a validated best epoch that did not end badly,
    else the newest with one (its rows then say how it ended)."""
    scored = [r for r in model.of_kind("train") if r.best_epoch is not None]
    good = [r for r in scored if r.state not in ENDED_BADLY]
    chosen = good or scored
    return chosen[-1] if chosen else None


def candidate_run(model: SessionModel, cand: Optional[Candidate]) -> Optional[JobRecord]:
    """The training run the candidate came from, when it is in this session's fold."""
    return model.records.get(cand.run) if cand is not None else None


def _model_name(rec: JobRecord) -> str:
    name = (rec.config.get("model") or {}).get("name") if isinstance(rec.config.get("model"), dict) else None
    return str(name or "mlp")


def judge_task(
    judge: LayerJudge,
    model: SessionModel,
    checks: List[str],
    cfg: Dict[str, Any],
    compare_cfg: Optional[Dict[str, Any]] = None,
) -> None:
    """The candidate first, then its best-epoch val macro-F1, its first test-set macro-F1, the test set used once
    per session, and (when required) the cross-device effect consistency."""
    cand = judge.about.candidate
    train = candidate_run(model, cand)
    every = testset.evaluations(model)
    evals = [e for e in every if cand is not None and e.get("sha256") == cand.sha256]
    name = _model_name(train) if train is not None else "mlp"
    if cand is None:
        judge.add(
            _row(
                None,
                "candidate",
                Evidence.NOT_RUN,
                None,
                detail="no candidate frozen: the verdict is about one model; every check about a model waits for it",
            ),
            "train",
        )
    else:
        judge.deciding.append(
            _row(cand.run, "candidate", Evidence.PASS, None, None, None, "frozen #%d: %s" % (cand.n, cand.label()))
        )
        judge.levels.append(Evidence.PASS)
    for check in checks:
        if check == "val-macro-f1":
            if train is None:
                why = (
                    "no candidate frozen"
                    if cand is None
                    else "the candidate's run %s is not in this session's fold" % cand.run
                )
                judge.add(_row(None, check, Evidence.NOT_RUN, None, detail=why), "train")
                continue
            best = train.best_epoch or {}
            val = best["val"] if isinstance(best.get("val"), dict) else {}
            _metric(
                judge,
                train.jid,
                check,
                val.get("macro_f1"),
                cfg.get("min_val_macro_f1_" + name),
                train.device.get("resolved"),
                "best epoch %s of %s (%s)" % (best.get("epoch"), train.jid, name),
            )
            if train.state in ENDED_BADLY:  # a checkpoint of a run that did not finish is no accepted result
                row = judge.deciding[-1]
                row["detail"] = "%s %s: %s" % (train.jid, train.label or train.state, row["detail"])
                if row["level"] == Evidence.PASS:
                    row["level"] = judge.levels[-1] = Evidence.NOT_RUN
                    judge.want(check, "train")
        elif check == "test-macro-f1":
            if not evals:
                spent = (
                    " (the test set is already spent: %s)" % ", ".join(map(testset.describe, every)) if every else ""
                )
                judge.add(
                    _row(
                        None,
                        check,
                        Evidence.NOT_RUN,
                        None,
                        detail="the candidate %s has no test-set evaluation%s"
                        % (cand.label() if cand else "(none frozen)", spent),
                    )
                )
                continue
            first = evals[0]  # the reported result is the candidate's first; every other one is flagged below
            test_rec = model.records.get(first["jid"])
            _metric(
                judge,
                first["jid"],
                check,
                first.get("macro_f1"),
                cfg.get("min_test_macro_f1_" + name),
                test_rec.device.get("resolved") if test_rec else None,
                "first test evaluation of %s (epoch %s)" % (first.get("from"), first.get("best_epoch")),
            )
        elif check == "test-evaluations":
            judge_test_once(judge, model, cand, every)
        elif check == "effect-consistency":
            judge.add(effect_row(model, judge.target, compare_cfg), "train")
        else:
            judge_job_check(judge, model, check, cfg)


def _metric(judge: LayerJudge, jid: str, check: str, value: Any, minimum: Any, device: Any, what: str) -> None:
    value = number(value)
    if value is None:
        judge.add(_row(jid, check, Evidence.NOT_RUN, device_name(device), detail="%s: no macro-F1" % what))
        return
    if minimum is None:
        judge.add(
            _row(
                jid,
                check,
                Evidence.BLOCKED,
                device_name(device),
                value,
                None,
                "%s: no threshold for this model in acceptance" % what,
            )
        )
        return
    ok = value >= minimum
    judge.add(
        _row(
            jid,
            check,
            Evidence.PASS if ok else Evidence.FAIL,
            device_name(device),
            value,
            ">= %.2f" % minimum,
            "%s: macro-F1 %.4f %s %.2f" % (what, value, ">=" if ok else "<", minimum),
        )
    )


def judge_test_once(
    judge: LayerJudge, model: SessionModel, cand: Optional[Candidate], evals: List[Dict[str, Any]]
) -> None:
    """The test set is spent once per session, whatever model each evaluation looked at: a second evaluation,
    or the one evaluation being of another model than the candidate, fails (picking by test numbers turns the
    test set into a validation set)."""
    if not evals:
        judge.add(_row(None, "test-evaluations", Evidence.NOT_RUN, None, detail="no test evaluation yet"))
        return
    mine = [number(e.get("test_evaluations")) for e in evals if cand is not None and e.get("sha256") == cand.sha256]
    count = int(max([len(evals)] + [c for c in mine if c is not None]))  # the run's own counter sees other sessions
    last = model.records.get(evals[-1]["jid"])
    device = device_name(last.device.get("resolved")) if last else None
    named = ", ".join(testset.describe(e) for e in evals)
    of_candidate = cand is not None and evals[0].get("sha256") == cand.sha256
    ok = count <= 1 and of_candidate
    if ok:
        detail = "evaluated once, the candidate: %s" % named
    elif count > 1:
        detail = (
            "the test set of this session was evaluated %d times: %s; the candidate's first result is reported; "
            "choosing between models by these numbers uses the test set for selection" % (count, named)
        )
    else:
        detail = (
            "the test set was spent on another model than the candidate%s: %s; the candidate has no untouched "
            "test result" % (" (%s)" % cand.label() if cand else " (none frozen)", named)
        )
    # The "<= 1" threshold only when the count decides: one evaluation of another model fails with a count of 1.
    threshold = "<= 1" if ok or count > 1 else None
    judge.add(
        _row(
            evals[-1]["jid"],
            "test-evaluations",
            Evidence.PASS if ok else Evidence.FAIL,
            device,
            count,
            threshold,
            detail,
        )
    )


# -- the performance row --------------------------------------------------------------------------------
def performance_layer(
    model: SessionModel, cfg: Dict[str, Any], dev: str, train: Optional[JobRecord], about: Optional[About] = None
) -> Dict[str, Any]:
    """Throughput and step-time thresholds judged on the target with their conditions; not-required when unset."""
    judge = LayerJudge("performance", dev, train.jid if train is not None else None)
    judge.about = about or judge.about
    device = device_name(train.device.get("resolved")) if train is not None else ""
    for row in perf_rows(train, cfg, dev, device):
        if row["level"] == NOT_REQUIRED:
            judge.deciding.append(row)  # shown with its measured figure, never counted
        else:
            judge.add(row, "train")
    out = judge.layer_dict()
    if not judge.levels:
        out["verdict"] = NOT_REQUIRED
        out["summary"] = "%s: no throughput or step-time threshold set (acceptance.%s)" % (
            NOT_REQUIRED,
            ", acceptance.".join(PERF_KEYS),
        )
        return out
    judged = [r for r in judge.deciding if r["level"] != NOT_REQUIRED]
    level = out["verdict"]
    out["summary"] = "%s: %s" % (level, "; ".join("%s %s" % (r["check"], r["detail"]) for r in judged))
    return out


# -- the whole verdict -----------------------------------------------------------------------------------
def evaluate(
    model: SessionModel,
    cfg: Dict[str, Any],
    compare_cfg: Optional[Dict[str, Any]] = None,
    about: Optional[About] = None,
) -> Dict[str, Any]:
    """The acceptance of a session's candidate: per layer verdict, summary, deciding checks, missing evidence, and
    the evidence about other models (listed, never counted).

    `compare_cfg` (the `compare` section) holds the effect-consistency tolerances, used when `task_checks`
    names effect-consistency; `about` the session's freezes (none frozen: nothing about a model counts)."""
    about = about or About()
    cand = about.candidate
    target = session_target(model)
    dev = target["device"]
    train = candidate_run(model, cand) if cand is not None else best_train(model) or model.newest("train", started=True)
    train_jid = train.jid if train is not None else None

    task = LayerJudge("task", dev, train_jid)
    task.about = about
    judge_task(task, model, list(cfg.get("task_checks") or []), cfg, compare_cfg)
    if cfg.get("max_shift_drop") is not None:  # unset: the shift results are information, never a pass
        judge_job_check(task, model, "shift:new-distribution", cfg)

    framework = LayerJudge("framework", dev, train_jid)
    framework.about = about
    for spec in cfg.get("framework_checks") or []:
        kind, check = _split_spec(spec)
        if kind == "align" and check in ALIGN_PAIRS:
            judge_alignment(framework, model, check, cfg)
        else:
            judge_job_check(framework, model, spec, cfg)

    layers = [
        task.layer_dict(),
        framework.layer_dict(),
        _device_layer(model, cfg, dev, train_jid, about),
        performance_layer(model, cfg, dev, train, about),
    ]
    required = [
        lay["verdict"]
        for lay in layers
        if not (lay["layer"] == "device" and dev == "CPU") and lay["verdict"] != NOT_REQUIRED
    ]
    return {
        "format": FORMAT,
        "candidate": cand.as_dict() if cand is not None else None,
        "freezes": [c.as_dict() for c in about.freezes],
        "about_other": about_other(model, cand),
        "target": target,
        "layers": layers,
        "thresholds": dict(cfg),
        "thresholds_note": THRESHOLDS_NOTE,
        "overall": worst(required),
    }


def _device_layer(
    model: SessionModel, cfg: Dict[str, Any], dev: str, train_jid: Optional[str], about: Optional[About] = None
) -> Dict[str, Any]:
    """The device claim: never from CPU; with a CPU target the layer is not-run and says so."""
    judge = LayerJudge("device", dev, train_jid)
    judge.about = about or judge.about
    if dev == "CPU":
        out = judge.layer_dict()
        judge.want("device-setting", "env")
        out.update(
            verdict=Evidence.NOT_RUN,
            summary=CPU_DEVICE_SUMMARY,
            observed_on=[],
            missing=[
                dict(m, what="a device claim needs a run on the device: " + m["what"], key="on the board: " + m["key"])
                for m in judge.missing
            ],
        )
        for m in out["missing"]:
            m["command"] = m["command"].replace("device.target=CPU", "device.target=Ascend")
        return out
    for spec in cfg.get("device_checks") or []:
        judge_job_check(judge, model, spec, cfg)
    return judge.layer_dict()


def exit_code(acceptance: Dict[str, Any]) -> int:
    """0 when every required layer passes (a CPU target's device layer is not required), else 1."""
    return 0 if acceptance.get("overall") == Evidence.PASS else 1
