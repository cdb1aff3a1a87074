"""Property tests: random JSON in every field of every event type never makes a reader, the validator,
the fold, a screen model, the `watch` formatter or the record collection raise.

Each test sets max_examples; together they run 2 600 cases per run (see CASES below).
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.views import changed, feed
from workbench.events.protocol import FIELD_TYPES, REQUIRED, Evidence, decode_line, encode, type_problem, validate
from workbench.events.text import format_event
from workbench.fold.record import JobRecord, SessionModel
from workbench.session.store import JobStatus
from workbench.views.registry import VIEWS

CASES = {"validator": 600, "fold": 600, "lines": 400, "views": 700, "collect": 300}

BASE = {"v": 1, "t": 1700000000.0}
TEMPLATES = {
    "started": {
        "kind": "train",
        "pid": 1,
        "python": "p",
        "argv": ["a"],
        "version": "0.1.0",
        "scope": "all",
        "device": {"requested": "auto", "resolved": "CPU", "id": 0, "why": "x"},
    },
    "log": {"level": "warning", "message": "m"},
    "check": {
        "id": "side.ref",
        "title": "t",
        "status": Evidence.PASS,
        "detail": "d",
        "hint": None,
        "format": "ckpt",
        "evidence": {
            "counts": {"train": [1, 2]},
            "dir": "/d",
            "searched": ["/d"],
            "label": "CPU",
            "samples": 3,
            "classes_covered": [0],
            "pairs": [[0, 1, 2]],
        },
    },
    "progress": {"done": 1, "total": 4, "unit": "steps", "phase": "train"},
    "step": {"epoch": 1, "step": 1, "loss": 0.5, "step_ms": 2.0, "batch_size": 8, "phase": "steady"},
    "steps": {
        "epoch": 1,
        "first_step": 1,
        "loss": [0.5, 0.4],
        "step_ms": [2.0, 2.1],
        "batch_size": 8,
        "phase": ["compile", "steady"],
    },
    "epoch": {
        "epoch": 1,
        "train_loss": 0.5,
        "samples": 8,
        "is_best": True,
        "epoch_s": 1.0,
        "val": {
            "accuracy": 0.5,
            "macro_f1": 0.4,
            "confusion": [[1, 0], [0, 1]],
            "per_class": [
                {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1},
                {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 1},
            ],
        },
    },
    "perf": {
        "first_step_s": 1.0,
        "warmup_steps": 2,
        "peak_host_rss_mb": 100.0,
        "peak_device_mb": None,
        "sync": "s",
        "scope": "run",
        "steady": {"n": 3, "median_ms": 2.0, "p95_ms": 3.0, "images_per_s": 100.0},
    },
    "tensor_diff": {
        "name": "logits",
        "shape": [2, 3],
        "dtype": {"ref": "float32", "cand": "float16"},
        "atol": 1e-3,
        "rtol": 1e-3,
        "max_abs": 0.1,
        "max_rel": 0.2,
        "mismatch_ratio": 0.0,
        "worst_index": [0, 1],
        "passed": False,
        "worst": {"ref": 1.0, "cand": 1.1},
        "flips": {"n": 2, "count": 1, "pairs": [[0, 1, 1]]},
        "hist": {"zeros": 1, "edges": [0.0, 0.1, 0.2], "counts": [1, 2], "nonfinite": 0},
    },
    "artifact": {"path": "artifacts/p.npz", "kind": "preview", "bytes": 3, "sha256": "ab"},
    "result": {
        "summary": {
            "split": {"seed": 1, "val_fraction": 0.1},
            "counts": {"train": [1]},
            "files": [{}],
            "class_names": ["a"],
            "probes": [{}],
            "devices": [{}],
            "processes": [{}],
            "reference": {"samples": 1},
            "profile": {"top_ops": []},
            "from": "train-001",
            "dir": "/d",
        }
    },
    "finished": {"status": "failed", "error": {"type": "E", "message": "m", "hint": "h"}},
    "device": {
        "ai_core_pct": 10.0,
        "mem_used_mb": 1.0,
        "mem_total_mb": 2.0,
        "temp_c": 40.0,
        "power_w": 5.0,
        "health": "OK",
        "npu": 0,
        "chip": 0,
    },
    "monitor": {
        "names": ["1.weight"],
        "every": 10,
        "global_step": [10],
        "epoch": [1],
        "weight_norm": [[1.0]],
        "grad_norm": [[0.1]],
        "update_ratio": [[0.01]],
        "nonfinite": [[0.0]],
        "skipped": [False],
    },
    "loss_scale": {
        "epoch": 1,
        "step": 3,
        "global_step": 3,
        "scale": 65536.0,
        "overflow": True,
        "next_scale": 32768.0,
        "skipped": 1,
    },
}
assert set(TEMPLATES) == set(REQUIRED)
# Every field the table types, every nested field a reader opens, and the envelope.
NESTED = {
    "started": ["device.resolved", "device.id"],
    "check": ["evidence.counts", "evidence.searched", "evidence.classes_covered", "evidence.label"],
    "epoch": ["val.per_class", "val.accuracy", "val.confusion"],
    "perf": ["steady.median_ms", "steady.n"],
    "tensor_diff": ["worst.ref", "hist.edges", "hist.counts", "flips.pairs", "shape.ref", "dtype.ref"],
    "result": [
        "summary.split",
        "summary.counts",
        "summary.files",
        "summary.class_names",
        "summary.probes",
        "summary.devices",
        "summary.reference",
        "summary.from",
        "summary.dir",
        "summary.profile",
    ],
    "finished": ["error.message", "error.type"],
}
PATHS = {
    kind: sorted(set(FIELD_TYPES[kind]) | set(TEMPLATES[kind]) | set(NESTED.get(kind, [])))
    + ["seq", "t", "rank", "type", "synthetic"]
    for kind in TEMPLATES
}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-2, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from(["nan", "inf", "-inf", Evidence.PASS, "steady", "preview"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["ref", "cand", "f1", "train", "x"]) | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _set(event, path, value):
    head, _, rest = path.partition(".")
    if not rest:
        event[head] = value
    elif isinstance(event.get(head), dict):
        _set(event[head], rest, value)
    else:
        event[head] = {rest: value}


@st.composite
def events(draw, kind=None):
    """One event of a type, with 0-3 of its fields (top-level or nested) replaced by random JSON or removed."""
    kind = kind or draw(st.sampled_from(sorted(TEMPLATES)))
    ev = dict(BASE, seq=0, type=kind, **copy.deepcopy(TEMPLATES[kind]))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(PATHS[kind]))
        if draw(st.integers(0, 5)) == 0 and "." not in path:
            ev.pop(path, None)
        else:
            _set(ev, path, draw(json_values))
    return ev


def _numbered(evs):
    out = []
    for n, ev in enumerate(evs):
        ev = dict(ev)
        if type(ev.get("seq")) is int:
            ev["seq"] = n
        out.append(ev)
    return out


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=CASES["validator"], **SETTINGS)
@given(events())
def test_validator_and_formatter_never_raise(ev):
    problems = validate(ev)
    wrong = type_problem(ev)
    assert wrong is None or wrong in problems
    line = format_event(ev, verbose_steps=1)
    assert line is None or isinstance(line, str)
    if wrong is not None:
        assert line.startswith("damaged line skipped")


@settings(max_examples=CASES["fold"], **SETTINGS)
@given(st.lists(events(), max_size=12))
def test_the_fold_keeps_typed_events_and_lists_the_rest(evs):
    evs = _numbered(evs)
    session = SessionModel()
    job = SimpleNamespace(jid="train-001", kind="train", spec={"created": 1.0}, dir=None)
    rec = session.ingest(job, evs)
    bad = [n for n, ev in enumerate(evs, 1) if type_problem(ev) is not None]
    assert [d["line"] for d in rec.damaged] == bad
    assert rec.events == len(evs) - len(bad)
    for name in ("device", "result", "best_epoch", "ranks", "missing_seq", "state", "label"):
        getattr(rec, name)
    rec.check_facts()
    session.newest("train")
    session.test_evaluations("train-001")


@settings(max_examples=CASES["lines"], **SETTINGS)
@given(st.lists(events(), max_size=8), st.integers(0, 60), st.booleans())
def test_torn_and_merged_lines_are_listed_never_raised(evs, cut, merge):
    """Lines as a job writes them, one of them torn (and, when `merge`, completed by the next line)."""
    raw = [encode(ev).encode() if _jsonable(ev) else b"{}\n" for ev in _numbered(evs)]
    if raw:
        torn = raw[0][:cut] if cut < len(raw[0]) else raw[0]
        raw[0] = torn.rstrip(b"\n") + (b"" if merge else b"\n")
    data = b"".join(raw)
    rec = JobRecord("drill-001", "drill")
    lines = data.split(b"\n")
    tail = lines.pop()
    kept = rec.ingest_lines(lines)
    rec.note_torn_tail(len(tail))
    assert len(kept) + sum(1 for d in rec.damaged if d["what"] == "wrong type") <= len(lines)
    assert all(decode_line(line) is not None for line in lines)


def _jsonable(ev):
    try:
        json.dumps(ev, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def _job(jid, kind, created, state="ok"):
    status = JobStatus(state, "" if state in ("ok", "running") else "reason", 1.0)
    return SimpleNamespace(
        jid=jid, kind=kind, spec={"created": created, "device": {"resolved": "CPU"}}, dir=None, status=status
    )


MODEL_READS = {
    "environment": ["ordered_checks", "counts", "first_failing", "devices", "processes", "device"],
    "data": [
        "seed",
        "val_fraction",
        "counts",
        "files",
        "data_dir",
        "searched",
        "class_names",
        "check_tally",
        "synthetic",
        "artifacts",
        "logs",
        ("samples", 0),
    ],
    "training": [
        "tests",
        "cfg",
        "loss",
        "step_ms",
        "compile_ms",
        "last_step",
        "epochs",
        "perf",
        "checks",
        "rank_step_ms",
        "slowest_rank",
        "rank_images_per_s",
        "global_images_per_s",
        "best",
        "latest_val",
        "weakest_class",
        "planned_epochs",
        "eta_s",
        "test_count",
    ],
    "alignment": [
        "sides",
        "matched",
        "diffs",
        "verdict",
        "first_failure",
        "flips",
        "default_selection",
        ("label", "ref"),
        ("side_status", "cand"),
        ("diff", "logits"),
    ],
    "export": [
        "artifacts",
        "logs",
        "load_checks",
        "other_checks",
        "artifact_rows",
        "hash_lines",
        "reference",
        "counts",
    ],
    "session": ["ordered"],
    "shift": ["summary", "heat_map", "scope", ("failures", "inverted"), ("thumbnails", "inverted")],
}
KIND_OF = {
    "environment": "env",
    "data": "data",
    "training": "train",
    "alignment": "align",
    "export": "export",
    "session": "drill",
    "shift": "shift",
}


@settings(max_examples=CASES["views"], **SETTINGS)
@given(st.sampled_from(sorted(VIEWS)), st.lists(st.lists(events(), max_size=6), min_size=1, max_size=3))
def test_screen_models_never_raise(name, batches):
    from workbench.views.alignment import formula_lines, hist_rows

    view = VIEWS[name](SessionModel())
    kind = KIND_OF[name]
    for n, batch in enumerate(batches):
        job = _job("%s-%03d" % (kind, n + 1), kind, float(n))
        feed(view, job, _numbered(batch))
        changed(view, job)
        if name == "training":  # a planned epoch count, so the ETA also takes its validation-time path
            view.record.config = {"train": {"epochs": n + 2}}
            eta = view.eta_s()
            assert eta is None or type(eta) is float
        for read in MODEL_READS[name]:
            attr, args = (read, ()) if isinstance(read, str) else (read[0], read[1:])
            value = getattr(view, attr)
            if callable(value):
                value(*args)
        if name == "alignment":
            for diff in view.diffs:
                formula_lines(diff)
                hist_rows(diff.get("hist"))
    if name == "training":  # a test job's result counts for the run it names
        feed(view, _job("test-001", "test", 9.0), _numbered(batches[0]))
        view.test_count()


@settings(max_examples=CASES["collect"], **SETTINGS)
@given(st.lists(events(), max_size=8), st.sampled_from(["train", "env", "data", "align", "export", "test", "drill"]))
def test_the_record_collection_and_report_never_raise(tmp_path_factory, evs, kind):
    from workbench.record import metrics_csv
    from workbench.record.collect import collect
    from workbench.record.markdown import appendix
    from workbench.record.markdown import report as markdown
    from workbench.session.store import SessionStore
    from workbench.system.atomic import write_json

    store = SessionStore(tmp_path_factory.mktemp("s"))
    sid = store.create()
    job = store.root / sid / "jobs" / ("%s-001" % kind)
    job.mkdir(parents=True)
    write_json(
        job / "job.json",
        {
            "jid": job.name,
            "kind": kind,
            "created": 1.0,
            "command": ["x"],
            "device": {"resolved": "CPU", "id": 0},
            "env": {},
        },
    )
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0})
    job.joinpath("events.jsonl").write_bytes(
        b"".join(encode(ev).encode() if _jsonable(ev) else b"not json\n" for ev in _numbered(evs))
    )
    report = collect(store, sid)
    json.dumps(report, allow_nan=False, default=str)
    # whatever the lines held, the record names the one job, its report says so, and its CSVs have a header
    assert [j["jid"] for j in report["jobs"]] == [job.name]
    assert job.name in markdown.render(report)
    appendix.render_all(report)
    for csv_text in (metrics_csv.steps_csv(report["jobs"]), metrics_csv.epochs_csv(report["jobs"])):
        assert csv_text.splitlines()[0].count(",") >= 1


def test_the_suite_runs_at_least_2000_cases():
    assert sum(CASES.values()) >= 2000
