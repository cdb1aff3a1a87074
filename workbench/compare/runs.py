"""Two training runs side by side, and whether they reach the same effect within stated tolerances.

Pure: computed from two folded `JobRecord`s (plus each run's test evaluations and environment
facts), never from files. A is the reference, B the candidate; every delta is B - A. The verdict
reads the frozen test set (the first evaluation of each run's best checkpoint) and the final train
loss; it is `not-run` when one of those is missing, and names every number that decided it.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from workbench.events.protocol import Evidence

CURVE_POINTS = 400  # points per loss series in the JSON and the SVG
# Sections and keys that say how a job is run or reported, not what it trains: a difference here
# does not make two runs different experiments (cross-device evidence ignores them, the diff lists them).
NOT_TRAINING = (
    "python",
    "glog_v",
    "ui",
    "limits",
    "compare",
    "env",
    "drill",
    "align",
    "export",
    "test",
    "train.resume_from",
    "train.profile",
    "data.dir",
    "data.from",
)
DEVICE_KEYS = ("device.target", "device.id")
TOLERANCE_KEYS = ("max_macro_f1_delta", "max_class_f1_delta", "max_final_loss_rel_delta")


class Tolerances(NamedTuple):
    """The effect-consistency limits (config section `compare`)."""

    max_macro_f1_delta: float
    max_class_f1_delta: float
    max_final_loss_rel_delta: float

    @classmethod
    def from_config(cls, section: Dict[str, Any]) -> Tolerances:
        """From the typed `compare` config section."""
        return cls(*(float(section[k]) for k in TOLERANCE_KEYS))


def _num(value: Any) -> Optional[float]:
    if type(value) in (int, float) and math.isfinite(value):
        return float(value)
    return None


def _delta(a: Any, b: Any) -> Optional[float]:
    a, b = _num(a), _num(b)
    return None if a is None or b is None else b - a


def flatten(cfg: Any, prefix: str = "") -> Dict[str, Any]:
    """{'train.lr': 0.001, ...} for a nested config (lists stay values)."""
    out: Dict[str, Any] = {}
    if not isinstance(cfg, dict):
        return out
    for key in sorted(cfg):
        name = "%s.%s" % (prefix, key) if prefix else str(key)
        if isinstance(cfg[key], dict):
            out.update(flatten(cfg[key], name))
        else:
            out[name] = cfg[key]
    return out


_ABSENT = object()  # a key one config has and the other lacks


def _missing(value: Any) -> Any:
    return "(absent)" if value is _ABSENT else value


def config_diff(cfg_a: Dict[str, Any], cfg_b: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Only the keys whose values differ: [{key, a, b, training}] (training=False for how-it-runs keys)."""
    flat_a, flat_b = flatten(cfg_a), flatten(cfg_b)
    out = []
    for key in sorted(set(flat_a) | set(flat_b)):
        va, vb = flat_a.get(key, _ABSENT), flat_b.get(key, _ABSENT)
        if va is _ABSENT or vb is _ABSENT or va != vb or type(va) is not type(vb):
            out.append({"key": key, "a": _missing(va), "b": _missing(vb), "training": _affects_training(key)})
    return out


def _affects_training(key: str) -> bool:
    return not any(key == k or key.startswith(k + ".") for k in NOT_TRAINING)


def environment(record: Any, env: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Device, MindSpore, CANN and Python of a run: its own `started` line first, the session's env job next."""
    env = env or {}
    started = record.started or {}
    device = record.device
    ms = started["mindspore"] if isinstance(started.get("mindspore"), dict) else {}
    cann = env["cann"] if isinstance(env.get("cann"), dict) else {}
    py = env["python"] if isinstance(env.get("python"), dict) else {}
    return {
        "device": "%s:%s" % (device.get("resolved", "?"), device.get("id", 0)) if device else None,
        "mindspore": ms.get("version") or (env.get("mindspore") or {}).get("version"),
        "cann": cann.get("version") or cann.get("toolkit") if cann else None,
        "python": py.get("version") or started.get("python"),
    }


def environment_diff(env_a: Dict[str, Any], env_b: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The environment items that differ (an item unknown on both sides is not a difference)."""
    return [
        {"item": k, "a": env_a.get(k), "b": env_b.get(k)}
        for k in ("device", "mindspore", "cann", "python")
        if env_a.get(k) != env_b.get(k)
    ]


def _val(ev: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return (ev or {}).get("val") or {}


def epoch_rows(a: Any, b: Any) -> List[Dict[str, Any]]:
    """Per epoch: train loss, val accuracy and macro-F1 of both, and B - A."""
    by_a = {e.get("epoch"): e for e in a.epochs}
    by_b = {e.get("epoch"): e for e in b.epochs}
    rows = []
    for epoch in sorted(k for k in set(by_a) | set(by_b) if type(k) is int):
        ea, eb = by_a.get(epoch), by_b.get(epoch)
        row: Dict[str, Any] = {"epoch": epoch}
        for name, get in (
            ("train_loss", lambda e: e.get("train_loss")),
            ("val_accuracy", lambda e: _val(e).get("accuracy")),
            ("val_macro_f1", lambda e: _val(e).get("macro_f1")),
        ):
            va = _num(get(ea)) if ea else None
            vb = _num(get(eb)) if eb else None
            row[name] = {"a": va, "b": vb, "delta": _delta(va, vb)}
        rows.append(row)
    return rows


def _class_f1(per_class: Any) -> List[Tuple[str, Optional[float]]]:
    if not isinstance(per_class, list):
        return []
    return [(str(c.get("name") or i), _num(c.get("f1"))) for i, c in enumerate(per_class) if isinstance(c, dict)]


def class_deltas(per_class_a: Any, per_class_b: Any) -> List[Dict[str, Any]]:
    """Per-class F1 of both and B - A, by class index."""
    fa, fb = _class_f1(per_class_a), _class_f1(per_class_b)
    out = []
    for i in range(max(len(fa), len(fb))):
        name = (fa[i] if i < len(fa) else fb[i])[0]
        va = fa[i][1] if i < len(fa) else None
        vb = fb[i][1] if i < len(fb) else None
        out.append({"class": i, "name": name, "a": va, "b": vb, "delta": _delta(va, vb)})
    return out


def confusion_diff(matrix_a: Any, matrix_b: Any) -> Optional[List[List[int]]]:
    """B - A, cell by cell (rows = true class); None unless both are square and the same size."""

    def square(m: Any) -> bool:
        return isinstance(m, list) and bool(m) and all(isinstance(r, list) and len(r) == len(m) for r in m)

    if not (square(matrix_a) and square(matrix_b)) or len(matrix_a) != len(matrix_b):
        return None
    return [[int(vb) - int(va) for va, vb in zip(ra, rb)] for ra, rb in zip(matrix_a, matrix_b)]


def first_test(tests: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The frozen-test result that counts: the first evaluation of the run (later ones were chosen by looking)."""
    ok = [t for t in tests if _num(t.get("macro_f1")) is not None]
    if not ok:
        return None
    return sorted(ok, key=lambda t: (t.get("test_evaluations") or 0, t.get("t") or 0, str(t.get("jid"))))[0]


def frozen_test_facts(test: Optional[Dict[str, Any]], count: int) -> Optional[Dict[str, Any]]:
    """The test metrics shown for one side."""
    if test is None:
        return None
    return {
        "jid": test.get("jid"),
        "accuracy": _num(test.get("accuracy")),
        "macro_f1": _num(test.get("macro_f1")),
        "samples": test.get("samples"),
        "evaluations": count,
        "per_class": test.get("per_class") or [],
    }


def steady(record: Any) -> Dict[str, Any]:
    """The run's steady throughput and spread: the run-scope perf line of the main rank, else its latest."""
    runs = [p for p in record.perf if p.get("scope") == "run" and p.get("rank") in (None, 0)]
    perf = runs[-1] if runs else (record.main_perf or {})
    st = perf.get("steady") or {}
    median, p95 = _num(st.get("median_ms")), _num(st.get("p95_ms"))
    reps = (record.checks.get("perf-repeats") or {}) if hasattr(record, "checks") else {}
    ev = reps["evidence"] if isinstance(reps.get("evidence"), dict) else {}
    run_to_run = _num(ev.get("spread_pct")) if reps.get("status") == "observed-pass" else None
    return {
        "images_per_s": _num(st.get("images_per_s")),
        "median_ms": median,
        "p95_ms": p95,
        "n": st.get("n"),
        "spread": (p95 - median) / median if median and p95 is not None else None,
        "run_to_run_pct": run_to_run,
        "repeats": ev.get("repeats") if run_to_run is not None else None,
    }


WITHIN_SPREAD = "within run-to-run spread — not a speed difference"


def speed_verdict(ratio: Optional[float], sa: Dict[str, Any], sb: Dict[str, Any]) -> str:
    """Whether a throughput ratio is a speed difference: outside both runs' run-to-run spread (perf-repeats), or not."""
    if ratio is None:
        return "no ratio: a run has no steady throughput"
    spreads = [s["run_to_run_pct"] for s in (sa, sb) if s.get("run_to_run_pct") is not None]
    if len(spreads) < 2:
        return (
            "run-to-run spread not measured for both runs (perf.repeats): the ratio may be host noise, "
            "not a speed difference"
        )
    diff = abs(ratio - 1.0) * 100.0
    if diff <= max(spreads):
        return "%s (|B / A - 1| = %.0f %% <= spread A %.0f %%, B %.0f %%)" % (
            WITHIN_SPREAD,
            diff,
            spreads[0],
            spreads[1],
        )
    return "outside run-to-run spread: |B / A - 1| = %.0f %% > spread A %.0f %%, B %.0f %%" % (
        diff,
        spreads[0],
        spreads[1],
    )


def throughput(a: Any, b: Any) -> Dict[str, Any]:
    """Steady images/s of both, their ratio B / A, each side's spread, and whether the ratio is beyond run-to-run
    spread."""
    sa, sb = steady(a), steady(b)
    ratio = sb["images_per_s"] / sa["images_per_s"] if sa["images_per_s"] and sb["images_per_s"] is not None else None
    return {
        "a": sa,
        "b": sb,
        "ratio": ratio,
        "verdict": speed_verdict(ratio, sa, sb),
        "rule": "B / A of steady images/s (Σ images / Σ wall time of the steady steps); spread = (P95 - median) / "
        "median within a run; run-to-run spread = (max - min) / median of the perf-repeats medians",
    }


def loss_series(record: Any, limit: int = CURVE_POINTS) -> Dict[str, List[float]]:
    """The main rank's step losses on an epoch axis (x = epoch - 1 + fraction of it done), thinned to `limit`."""
    table = getattr(record, "step_table", None)
    if table is not None and hasattr(table, "as_dict"):  # the fold keeps steps as a (bounded) StepTable
        table = table.as_dict()
    xs: List[float] = []
    ys: List[float] = []
    if table and table.get("loss"):
        per_epoch: Dict[Any, List[float]] = {}
        for rank, epoch, loss in zip(table["rank"], table["epoch"], table["loss"]):
            if rank in (None, 0) and type(epoch) is int and _num(loss) is not None:
                per_epoch.setdefault(epoch, []).append(float(loss))
        for epoch in sorted(per_epoch):
            losses = per_epoch[epoch]
            for i, loss in enumerate(losses):
                xs.append(epoch - 1 + (i + 1) / float(len(losses)))
                ys.append(loss)
    else:  # no step table: the per-epoch mean train loss is what there is
        for ev in record.epochs:
            if type(ev.get("epoch")) is int and _num(ev.get("train_loss")) is not None:
                xs.append(float(ev["epoch"]))
                ys.append(float(ev["train_loss"]))
    return _thin(xs, ys, limit)


def _thin(xs: List[float], ys: List[float], limit: int) -> Dict[str, List[float]]:
    """Bucket means down to `limit` points (a mean keeps the trend a stride would alias)."""
    if len(xs) <= limit:
        return {"x": [round(x, 5) for x in xs], "y": ys}
    out_x, out_y = [], []
    size = len(xs) / float(limit)
    for i in range(limit):
        lo, hi = int(i * size), max(int((i + 1) * size), int(i * size) + 1)
        out_x.append(round(sum(xs[lo:hi]) / (hi - lo), 5))
        out_y.append(sum(ys[lo:hi]) / (hi - lo))
    return {"x": out_x, "y": out_y}


def final_loss(record: Any) -> Optional[float]:
    """The last epoch's sample-weighted mean train loss."""
    for ev in reversed(record.epochs):
        if _num(ev.get("train_loss")) is not None:
            return float(ev["train_loss"])
    return None


def _judge(
    name: str, short: str, key: str, value: Optional[float], limit: float, detail: Dict[str, Any]
) -> Dict[str, Any]:
    return dict(
        detail,
        number=name,
        short=short,
        value=value,
        limit=limit,
        key="compare." + key,
        passed=value is not None and value <= limit,
    )


def verdict(
    a: Any,
    b: Any,
    test_a: Optional[Dict[str, Any]],
    test_b: Optional[Dict[str, Any]],
    tol: Tolerances,
    basis: str = "test",
) -> Dict[str, Any]:
    """observed-pass / observed-fail naming each deciding number, or not-run naming what is missing; `basis` names
    the metrics judged ('test', or 'validation' when both runs saw the test set)."""
    missing = []
    for side, rec, test in (("A", a, test_a), ("B", b, test_b)):
        if rec.state and rec.state != "ok":
            missing.append("%s (%s) did not end ok: %s" % (side, rec.jid, rec.label or rec.state))
        if test is None:
            missing.append(
                "%s (%s) has no test evaluation (ms-workbench run test --set test.from=%s)" % (side, rec.jid, rec.jid)
                if basis == "test"
                else "%s (%s) has no validated best epoch" % (side, rec.jid)
            )
        if final_loss(rec) is None:
            missing.append("%s (%s) has no finished epoch (no final train loss)" % (side, rec.jid))
    if missing:
        more = " (+%d more)" % (len(missing) - 1) if len(missing) > 1 else ""
        return {
            "status": Evidence.NOT_RUN,
            "summary": "not-run: " + "; ".join(missing),
            "numbers": [],
            "short": missing[0] + more,
            "missing": missing,
            "tolerances": tol._asdict(),
        }
    assert test_a is not None and test_b is not None  # a missing one returned not-run above
    macro = abs(test_b["macro_f1"] - test_a["macro_f1"])
    numbers = [
        _judge(
            "%s macro-F1 |B - A|" % basis,
            "macro-F1",
            "max_macro_f1_delta",
            macro,
            tol.max_macro_f1_delta,
            {"a": test_a["macro_f1"], "b": test_b["macro_f1"]},
        )
    ]
    classes = [c for c in class_deltas(test_a.get("per_class"), test_b.get("per_class")) if c["delta"] is not None]
    if classes:
        worst = max(classes, key=lambda c: abs(c["delta"]))
        numbers.append(
            _judge(
                "%s F1 |B - A| of class %s" % (basis, worst["name"]),
                "F1 %s" % worst["name"],
                "max_class_f1_delta",
                abs(worst["delta"]),
                tol.max_class_f1_delta,
                {"a": worst["a"], "b": worst["b"], "class": worst["name"]},
            )
        )
    else:
        numbers.append(
            _judge(
                "%s per-class F1 |B - A|" % basis, "class F1", "max_class_f1_delta", None, tol.max_class_f1_delta, {}
            )
        )
    la, lb = final_loss(a), final_loss(b)
    assert la is not None and lb is not None  # a run without a final loss returned not-run above
    rel = abs(lb - la) / abs(la) if la else (0.0 if lb == la else None)
    numbers.append(
        _judge(
            "final train loss |B - A| / |A|",
            "final loss rel",
            "max_final_loss_rel_delta",
            rel,
            tol.max_final_loss_rel_delta,
            {"a": la, "b": lb},
        )
    )
    failed = [n for n in numbers if not n["passed"]]
    deciding = failed or numbers
    status = Evidence.FAIL if failed else Evidence.PASS
    words = "; ".join(
        "%s = %s %s %s (%s)"
        % (n["number"], _fmt(n["value"]), ">" if not n["passed"] else "<=", _fmt(n["limit"]), n["key"])
        for n in deciding
    )
    short = ", ".join(
        "%s %s%s%s" % (n["short"], _fmt(n["value"]), ">" if not n["passed"] else "<=", _fmt(n["limit"]))
        for n in deciding
    )
    return {
        "status": status,
        "summary": "%s: %s" % (status, words),
        "short": short,
        "numbers": numbers,
        "decided_by": [n["number"] for n in deciding],
        "missing": [],
        "tolerances": tol._asdict(),
    }


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else "%.4g" % value


def is_cross_device(diff: List[Dict[str, Any]], env_a: Dict[str, Any], env_b: Dict[str, Any]) -> bool:
    """Different devices, and no training key differs apart from the device."""
    devices_differ = (env_a.get("device") or "").split(":")[0] != (env_b.get("device") or "").split(":")[0]
    others = [d for d in diff if d["training"] and d["key"] not in DEVICE_KEYS]
    return devices_differ and not others


def compare_runs(
    a: Any,
    b: Any,
    tol: Tolerances,
    tests_a: Sequence[Dict[str, Any]] = (),
    tests_b: Sequence[Dict[str, Any]] = (),
    env_a: Optional[Dict[str, Any]] = None,
    env_b: Optional[Dict[str, Any]] = None,
    names: Tuple[str, str] = ("", ""),
) -> Dict[str, Any]:
    """The whole comparison of two folded train runs, JSON-ready."""
    ea, eb = environment(a, env_a), environment(b, env_b)
    diff = config_diff(a.config, b.config)
    best_a, best_b = a.best_epoch, b.best_epoch
    ta, tb = first_test(tests_a), first_test(tests_b)
    result: Dict[str, Any] = {
        "format": "ms-workbench.analysis.tensordiff/1",
        "a": _side(a, names[0], ea, best_a),
        "b": _side(b, names[1], eb, best_b),
        "config_diff": diff,
        "environment": {"a": ea, "b": eb, "diff": environment_diff(ea, eb)},
        "epochs": epoch_rows(a, b),
        "per_class_f1": {
            "at": "best epochs (validation)",
            "classes": class_deltas(_val(best_a).get("per_class"), _val(best_b).get("per_class")),
        },
        "confusion_diff": {
            "at": "best epochs (validation), B - A, rows = true class",
            "epochs": [(best_a or {}).get("epoch"), (best_b or {}).get("epoch")],
            "samples": [_val(best_a).get("samples"), _val(best_b).get("samples")],
            "matrix": confusion_diff(_val(best_a).get("confusion"), _val(best_b).get("confusion")),
        },
        "test": {"a": frozen_test_facts(ta, len(tests_a)), "b": frozen_test_facts(tb, len(tests_b))},
        "throughput": throughput(a, b),
        "loss_curves": {"x": "epoch (fraction of the epoch done)", "a": loss_series(a), "b": loss_series(b)},
    }
    if ta is not None and tb is not None:  # both saw the test set: judging by it would select on it
        result["test_selection"] = (
            "both runs were evaluated on the test set (A %s, B %s): choosing between them by these numbers uses the "
            "test set for selection; the verdict reads the validation metrics of their best epochs"
            % (ta.get("jid"), tb.get("jid"))
        )
        va, vb = (_val(best) if best else None for best in (best_a, best_b))
        va = va if va and _num(va.get("macro_f1")) is not None else None
        vb = vb if vb and _num(vb.get("macro_f1")) is not None else None
        result["verdict"] = verdict(a, b, va, vb, tol, basis="validation")
    else:
        result["verdict"] = verdict(a, b, ta, tb, tol)
    result["cross_device"] = is_cross_device(diff, ea, eb)
    return result


def _side(rec: Any, name: str, env: Dict[str, Any], best: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "ref": name or rec.jid,
        "jid": rec.jid,
        "state": rec.state,
        "status": rec.label,
        "device": env["device"],
        "epochs": len(rec.epochs),
        "best_epoch": (best or {}).get("epoch"),
        "final_train_loss": final_loss(rec),
    }


def cross_device_evidence(result: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The task layer's cross-device evidence from a comparison, or None when the runs are not a cross-device pair.

    A pair counts when the runs ran on different devices with the same training config apart
    from the device; its evidence level is the comparison's verdict.
    """
    if not result.get("cross_device"):
        return None
    v = result["verdict"]
    return {
        "id": "effect-consistency",
        "status": v["status"],
        "detail": v["summary"],
        "reference": result["a"]["ref"],
        "candidate": result["b"]["ref"],
        "devices": [result["a"]["device"], result["b"]["device"]],
        "numbers": v["numbers"],
    }
