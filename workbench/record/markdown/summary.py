"""The first screen of report.md: acceptance, the metrics with their definitions, throughput, what is blocked."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from workbench.events.protocol import Evidence
from workbench.record.markdown.tables import table
from workbench.render import humanize as h

LOSS_RULE = (
    "train loss is the sample-weighted mean over the epoch's batches (a short last batch counts by its "
    "images, not as a whole batch)"
)
MACRO_F1 = "macro-F1 is the unweighted mean of the per-class F1 scores"
ZERO_RULE = (
    "precision is 0 for a class never predicted, recall is 0 for a class absent, F1 is 0 when "
    "precision + recall is 0, and absent classes still count in the mean"
)
SUMMARY_CHARS = 140
ACCEPTANCE_CELL_CHARS = 600  # the deciding evidence is the point of the table: never cut to the usual cell width
NO_ACCEPTANCE = (
    "No acceptance verdict in this record (this version of the workbench computed none): the tables "
    "below are evidence, not a verdict."
)


def _clip(text: Any, n: int) -> str:
    text = str(text or "").strip()
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _value(d: Dict[str, Any]) -> str:
    value, threshold = d.get("value"), d.get("threshold")
    if isinstance(value, float):
        value = h.ratio(value) if abs(value) <= 1 else h.grouped(value, 1)
    if isinstance(threshold, float):
        threshold = h.ratio(threshold) if abs(threshold) <= 1 else h.grouped(threshold, 1)
    if value is None:
        return ""
    return " %s%s" % (value, (" (threshold %s)" % threshold) if threshold is not None else "")


def deciding_text(layer: Dict[str, Any], limit: int = 3) -> str:
    """The deciding checks of a layer in words: 'task.val_macro_f1 observed-pass 0.867 (threshold 0.85) on CPU'."""
    parts = []
    deciding = sorted(layer.get("deciding") or [], key=lambda d: d.get("level") == Evidence.PASS)  # failures first
    for d in deciding[:limit]:
        parts.append(
            "%s %s%s%s"
            % (d.get("check"), d.get("level"), _value(d), (" on %s" % d["device"]) if d.get("device") else "")
        )
    more = len(layer.get("deciding") or []) - limit
    if more > 0:
        parts.append("%d more in appendix/acceptance.md" % more)
    return "; ".join(parts)


def acceptance_lines(acc: Optional[Dict[str, Any]]) -> List[str]:
    """The acceptance table: layer, verdict, observed on, deciding evidence; then the overall verdict."""
    if not acc:
        return [NO_ACCEPTANCE, ""]
    target = acc.get("target") or {}
    lines = [
        "Target device: **%s** (requested %s; %s)."
        % (target.get("device") or "-", target.get("requested") or "-", target.get("why") or "reason not recorded"),
        "",
    ]
    lines += table(
        ["layer", "verdict", "observed on", "deciding evidence"],
        [
            (
                l.get("layer"),
                "**%s**" % l.get("verdict"),
                ", ".join(l.get("observed_on") or []) or "-",
                ". ".join(p for p in (_clip(l.get("summary"), SUMMARY_CHARS), deciding_text(l)) if p) or "-",
            )
            for l in acc.get("layers") or []
        ],
        max_chars=ACCEPTANCE_CELL_CHARS,
    )
    lines += [
        "Overall: **%s**. A layer passes only when every required check is an observed pass on the target; "
        "CPU evidence never passes the device layer." % acc.get("overall"),
        "",
    ]
    return lines


def _best_val(run: Dict[str, Any]) -> Dict[str, Any]:
    return (run.get("best_epoch") or {}).get("val") or {}


def metrics_lines(training: Dict[str, Any]) -> List[str]:
    """Best validation and frozen-test metrics side by side, with the definitions under the table."""
    runs, tests = training["runs"], training["tests"]
    if not runs and not tests:
        return ["No training or test job: no task metrics.", ""]
    rows = []
    for run in runs:
        best = run.get("best_epoch") or {}
        val = _best_val(run)
        rows.append(
            (
                "%s validation, best epoch %s of %d" % (run["jid"], best.get("epoch", "-"), len(run["epochs"])),
                h.ratio(val.get("accuracy")),
                h.ratio(val.get("macro_f1")),
                h.loss(best.get("train_loss")),
                h.count(best.get("samples")),
            )
        )
    for t in tests:
        nth = t.get("evaluations_of_model")
        rows.append(
            (
                "%s test set, model from %s%s"
                % (t["jid"], t.get("from") or "-", (", evaluation %s of that model" % nth) if nth else ""),
                h.ratio(t.get("accuracy")),
                h.ratio(t.get("macro_f1")),
                "-",
                h.count(t.get("samples")),
            )
        )
    lines = table(["measured on", "accuracy", "macro-F1", "train loss", "images"], rows)
    zero = next((t["zero_division"] for t in tests if t.get("zero_division")), None)
    lines += [
        "Definitions: %s. Zero-division rule%s: %s. The %s."
        % (MACRO_F1, " (as the test job recorded it)" if zero else "", zero or ZERO_RULE, LOSS_RULE),
        "",
    ]
    if runs and not tests:
        lines += ["The test set was not evaluated: these are validation numbers only.", ""]
    return lines


def _spread(p: Dict[str, Any]) -> str:
    reps = p.get("repeats") or []
    total = p.get("repeat_summary") or {}
    if reps:
        vals = [r.get("images_per_s") for r in reps if isinstance(r.get("images_per_s"), (int, float))]
        if vals:
            return "timed %d times after training: median step %s, %s to %s (spread %s)" % (
                len(reps),
                h.ms(total.get("median_ms")),
                h.rate(min(vals)),
                h.rate(max(vals)),
                h.percent((total.get("spread_pct") or 0) / 100.0, 0) if total.get("spread_pct") is not None else "-",
            )
    epochs = p.get("epoch_medians_ms") or []
    if len(epochs) > 1:
        return "per-epoch medians %s to %s (one run; run-to-run variation not measured)" % (
            h.ms(min(epochs)),
            h.ms(max(epochs)),
        )
    return "one run; spread not measured"


def throughput_lines(perf_rows: Sequence[Dict[str, Any]]) -> List[str]:
    """Per training run: steady images/s, step median and P95, spread, compile time, host load when recorded."""
    runs = [
        p
        for p in perf_rows
        if p["kind"] == "train"
        and p["scope"] in ("run", "rank 0 run")
        or (p["kind"] == "train" and p.get("rank") is not None and p["scope"].endswith(" run"))
    ]
    if not runs:
        return ["No training job measured its throughput.", ""]
    lines = []
    for p in runs:
        load = p.get("host_load")
        lines.append(
            "- %s%s on %s: **%s** steady (median %s per step of %s images, P95 %s; %s); first step "
            "(compile) %s, %s warm-up steps left out%s."
            % (
                p["jid"],
                (" rank %s" % p["rank"]) if p.get("rank") is not None else "",
                p["device"] or "-",
                h.rate(p["images_per_s"]),
                h.ms(p["median_ms"]),
                p["batch_size"] or "-",
                h.ms(p["p95_ms"]),
                _spread(p),
                h.seconds(p["first_step_s"]),
                p["warmup_steps"] if p["warmup_steps"] is not None else "-",
                ("; host load %s" % load) if load else "; host load not recorded",
            )
        )
    return lines + [""]


def blocked_lines(report: Dict[str, Any]) -> List[str]:
    """What is blocked or missing, each with the command or key that would produce it."""
    acc = report.get("acceptance") or {}
    rows = []
    for layer in acc.get("layers") or []:
        for m in layer.get("missing") or []:
            how = m.get("command") or ("set `%s`" % m["key"] if m.get("key") else "-")
            rows.append(
                "- %s (%s layer): `%s`" % (m.get("what"), layer.get("layer"), how)
                if m.get("command")
                else "- %s (%s layer): %s" % (m.get("what"), layer.get("layer"), how)
            )
    for c in report["checks"]["not_passed"]:
        if c.get("status") == Evidence.BLOCKED and c.get("hint"):
            rows.append("- %s blocked (%s): %s" % (c.get("id"), c.get("jid"), str(c["hint"])[:200]))
    for c in report["checks"]["not_passed"]:
        if c.get("status") == Evidence.FAIL:
            rows.append("- %s failed (%s): %s" % (c.get("id"), c.get("jid"), str(c.get("reason") or "")[:160]))
    for j in report["jobs_not_ok"]:
        rows.append("- %s %s: see section 10 and its stderr.log." % (j["jid"], j["label"]))
    return rows[:12] + ([] if len(rows) <= 12 else ["- … %d more in appendix/checks.md" % (len(rows) - 12)]) or [
        "Nothing is blocked and no check failed."
    ]
