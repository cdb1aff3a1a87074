"""The appendix files of the record: long tables that report.md links to instead of holding."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from workbench.record.markdown.tables import cell, in_words, num, table
from workbench.render import humanize as h

ACCEPTANCE = "appendix/acceptance.md"
CHECKS = "appendix/checks.md"
TENSORS = "appendix/tensors.md"
TIMING = "appendix/timing.md"
CLASSES = "appendix/classes.md"
CONFIG = "appendix/config.md"


def _doc(title: str, intro: str, body: List[str]) -> str:
    return "\n".join(["# %s" % title, "", intro, "", "[Back to report.md](../report.md)", ""] + body).rstrip() + "\n"


def acceptance_md(acc: Optional[Dict[str, Any]]) -> str:
    """Every deciding check and every missing piece per layer, and the thresholds used."""
    if not acc:
        return _doc("Acceptance", "No acceptance verdict was computed for this session.", [])
    body: List[str] = []
    for layer in acc.get("layers") or []:
        body += ["## %s: %s" % (layer.get("layer"), layer.get("verdict")), "", layer.get("summary") or "", ""]
        body += table(
            ["job", "check", "level", "device", "value", "threshold", "detail"],
            [
                (
                    d.get("job"),
                    d.get("check"),
                    d.get("level"),
                    d.get("device"),
                    num(d.get("value")),
                    num(d.get("threshold")),
                    d.get("detail"),
                )
                for d in layer.get("deciding") or []
            ],
        )
        if layer.get("missing"):
            body += table(
                ["missing", "command", "key"],
                [(m.get("what"), m.get("command"), m.get("key")) for m in layer["missing"]],
            )
    body += ["## Thresholds", ""] + table(["key", "value"], sorted((acc.get("thresholds") or {}).items()))
    return _doc("Acceptance", "Format %s; overall **%s**." % (acc.get("format"), acc.get("overall")), body)


def checks_md(jobs: Sequence[Dict[str, Any]]) -> str:
    """Every check of every job with its evidence level and its evidence data in words."""
    body: List[str] = []
    for j in jobs:
        if not j["checks"]:
            continue
        dev = j.get("device") or {}
        body += ["## %s (%s on %s:%s)" % (j["jid"], j["kind"], dev.get("resolved", "?"), dev.get("id", 0)), ""]
        body += table(
            ["evidence", "check", "title", "detail", "evidence data"],
            [
                (c.get("status"), c.get("id"), c.get("title"), c.get("detail"), in_words(c.get("evidence")))
                for c in j["checks"]
            ],
        )
    return _doc(
        "Checks",
        "Every check each job recorded; the full evidence objects are in report.json (jobs[].checks[].evidence).",
        body or ["No job recorded a check."],
    )


INDEX_MEANS = (
    "'max abs at' is the index of the largest |cand − ref|; 'worst excess at' is the element furthest over its "
    "tolerance (largest |cand − ref| − (atol + rtol·|ref|), a non-finite mismatch first), which can be another one."
)


def tensors_md(alignment: Dict[str, Any]) -> str:
    """Every tensor comparison of every alignment job."""
    body: List[str] = []
    for a in alignment["jobs"]:
        body += [
            "## %s" % a["jid"],
            "",
            "Reference `%s`, candidate `%s`." % (cell(a["reference"]), cell(a["candidate"])),
            "",
        ]
        body += table(
            [
                "tensor",
                "shape",
                "dtype",
                "max abs",
                "max abs at",
                "max rel",
                "mismatch",
                "atol",
                "rtol",
                "worst excess at",
                "result",
            ],
            [
                (
                    d.get("name"),
                    d.get("shape"),
                    d.get("dtype"),
                    h.sci(d.get("max_abs")),
                    d.get("max_abs_index") if d.get("max_abs_index") is not None else "not recorded",
                    h.sci(d.get("max_rel")),
                    h.percent(d.get("mismatch_ratio"), 2),
                    h.sci(d.get("atol")),
                    h.sci(d.get("rtol")),
                    d.get("worst_index"),
                    "pass" if d.get("passed") else "FAIL",
                )
                for d in a["diffs"]
            ],
        )
    return _doc(
        "Tensor comparisons",
        "A tensor passes when every element satisfies %s. %s" % (alignment["formula"], INDEX_MEANS),
        body or ["No alignment job."],
    )


def epoch_measures(row: Dict[str, Any], epoch: Dict[str, Any], first: bool) -> str:
    """What one per-epoch timing row measures, in words (compile and warm-up belong to epoch 1 only)."""
    parts = ["steps of epoch %s" % row.get("epoch")]
    if first:
        parts.append("after the first (compile) step and %s warm-up steps" % (row.get("warmup_steps") or 0))
    else:
        parts.append("all of them: compile and warm-up were in epoch 1")
    batch, samples = row.get("batch_size"), epoch.get("samples")
    if isinstance(batch, int) and isinstance(samples, int) and batch and samples % batch:
        short = samples % batch
        recompiled = [r for r in row.get("recompile") or [] if isinstance(r, dict) and r.get("batch_size") == short]
        parts.append(
            "its last, short batch of %d images excluded (it recompiled the graph at step %s)"
            % (short, recompiled[0].get("global_step"))
            if recompiled
            else "its last, short batch of %d images included" % short
        )
    return ", ".join(parts)


def timing_md(perf_rows: Sequence[Dict[str, Any]], jobs: Sequence[Dict[str, Any]]) -> str:
    """Per-epoch timing rows, each saying what it measures, and peak memory per measurement."""
    epochs = {(j["jid"], e.get("epoch")): e for j in jobs for e in j["epochs"]}
    body: List[str] = []
    per_epoch = [p for p in perf_rows if p.get("epoch") is not None]
    if per_epoch:
        firsts: Dict[Any, Any] = {}
        for p in per_epoch:
            firsts.setdefault((p["jid"], p.get("rank")), p.get("epoch"))
        body += ["## Per-epoch timing", ""] + table(
            ["job", "epoch", "steady steps", "median", "P95", "images/s", "what the row measures"],
            [
                (
                    p["jid"],
                    p["epoch"],
                    p["steady_n"],
                    h.ms(p["median_ms"]),
                    h.ms(p["p95_ms"]),
                    h.rate(p["images_per_s"]),
                    epoch_measures(
                        p, epochs.get((p["jid"], p["epoch"])) or {}, firsts[(p["jid"], p.get("rank"))] == p["epoch"]
                    ),
                )
                for p in per_epoch
            ],
        )
    body += ["## Peak memory per measurement", ""] + table(
        ["job", "scope", "peak host RSS", "peak device MB", "host figure measures", "device figure measures"],
        [
            (
                p["jid"],
                p["scope"],
                h.mebibytes(p["peak_host_rss_mb"]),
                num(p["peak_device_mb"]),
                p["host_rss_measures"],
                p["device_memory_measures"],
            )
            for p in perf_rows
        ],
    )
    return _doc(
        "Timing", "Step times are measured at the sync boundary each row's job names (report.md, Performance).", body
    )


def classes_md(report: Dict[str, Any]) -> str:
    """Per-class metrics and confusion matrices of each run's best epoch and of each test evaluation."""
    body: List[str] = []
    training = report["training"]
    for run in training["runs"]:
        best = run.get("best_epoch") or {}
        val = best.get("val") or {}
        names = run["class_names"]
        if val.get("confusion"):
            body += ["## %s: validation, best epoch %s" % (run["jid"], best.get("epoch")), ""]
            body += _matrix(val["confusion"], names)
    for t in training["tests"]:
        if t.get("confusion"):
            body += ["## %s: test set" % t["jid"], ""] + _matrix(t["confusion"], _names(training))
    return _doc(
        "Classes",
        "Confusion matrices: rows are the true class, columns the predicted one.",
        body or ["No confusion matrix was recorded."],
    )


def _names(training: Dict[str, Any]) -> Sequence[str]:
    runs = training.get("runs") or []
    return runs[0]["class_names"] if runs else [str(i) for i in range(10)]


def _matrix(matrix: List[List[Any]], names: Sequence[str]) -> List[str]:
    heads = ["true \\ predicted"] + [str(i) for i in range(len(matrix))]
    rows = [["%d %s" % (r, names[r] if r < len(names) else "")] + list(row) for r, row in enumerate(matrix)]
    return table(heads, rows)


def config_md(jobs: Sequence[Dict[str, Any]]) -> str:
    """Each job's effective configuration exactly as recorded (config.yaml), secrets masked."""
    body: List[str] = []
    for j in jobs:
        if j.get("config_yaml"):
            body += ["## %s" % j["jid"], "", "```yaml"] + j["config_yaml"].rstrip().splitlines() + ["```", ""]
    return _doc("Effective configuration", "As each job ran it (jobs/<jid>/config.yaml).", body or ["None recorded."])


def render_all(report: Dict[str, Any]) -> Dict[str, str]:
    """Relative path -> text of every appendix file."""
    return {
        ACCEPTANCE: acceptance_md(report.get("acceptance")),
        CHECKS: checks_md(report["jobs"]),
        TENSORS: tensors_md(report["alignment"]),
        TIMING: timing_md(report["performance"], report["jobs"]),
        CLASSES: classes_md(report),
        CONFIG: config_md(report["jobs"]),
    }
