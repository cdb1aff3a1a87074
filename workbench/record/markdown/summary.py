"""The first screen of report.md: acceptance, the metrics with their definitions, throughput, what is blocked."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from workbench.acceptance.how import how_to_produce
from workbench.acceptance.performance import NOT_REQUIRED
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


def val_images(val: Dict[str, Any]) -> Optional[int]:
    """Images the validation metrics were computed on: the per-class supports summed (None when not recorded)."""
    for key in ("samples", "n"):
        if isinstance(val.get(key), int):
            return val[key]
    supports: List[Any] = [c.get("support") for c in val.get("per_class") or [] if isinstance(c, dict)]
    return sum(supports) if supports and all(isinstance(x, int) for x in supports) else None


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
                h.count(val_images(val)),
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
    lines = table(["measured on", "accuracy", "macro-F1", "train loss", "images measured"], rows)
    zero = next((t["zero_division"] for t in tests if t.get("zero_division")), None)
    lines += [
        "Definitions: %s. Zero-division rule%s: %s. The %s."
        % (MACRO_F1, " (as the test job recorded it)" if zero else "", zero or ZERO_RULE, LOSS_RULE),
        "",
    ]
    if runs and not tests:
        lines += ["The test set was not evaluated: these are validation numbers only.", ""]
    return lines


THROUGHPUT_MEANS = "Σ images / Σ wall time of the steady steps"


def _spread(p: Dict[str, Any]) -> str:
    reps = p.get("repeats") or []
    total = p.get("repeat_summary") or {}
    if reps:
        vals = [r.get("images_per_s") for r in reps if isinstance(r.get("images_per_s"), (int, float))]
        same = bool(total.get("images_per_s_rule"))  # older records: batch ÷ median step, another quantity
        name = "throughput (same definition)" if same else "batch ÷ median step (not the throughput above)"
        if vals:
            return (
                "timed %d times after training, %s steps each: median step %s, %s %s to %s, spread of the "
                "repeats' medians %s"
                % (
                    len(reps),
                    total.get("steps_per_repeat") or "?",
                    h.ms(total.get("median_ms")),
                    name,
                    h.rate(min(vals)),
                    h.rate(max(vals)),
                    h.percent((total.get("spread_pct") or 0) / 100.0, 0)
                    if total.get("spread_pct") is not None
                    else "-",
                )
            )
    epochs = p.get("epoch_medians_ms") or []
    if len(epochs) > 1:
        return "per-epoch medians %s to %s (one run; run-to-run variation not measured)" % (
            h.ms(min(epochs)),
            h.ms(max(epochs)),
        )
    return "one run; spread not measured"


def first_result(report: Dict[str, Any], jid: str) -> Optional[Dict[str, Any]]:
    """The run's check first-result evidence (seconds from job start to the first validated epoch), when passed."""
    for j in report.get("jobs") or []:
        if j["jid"] == jid:
            for c in j["checks"]:
                if c.get("id") == "first-result" and c.get("status") == Evidence.PASS:
                    return c.get("evidence") or {}
    return None


def throughput_lines(perf_rows: Sequence[Dict[str, Any]], report: Optional[Dict[str, Any]] = None) -> List[str]:
    """Per training run: time to the first usable result, steady images/s with its definition, step median and P95,
    spread, compile time, host load when recorded."""
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
        first = first_result(report or {}, p["jid"]) if p.get("rank") in (None, 0) else None
        if first:
            lines.append(
                "- %s: **time to first usable result %s** (job start to epoch %s validated, val macro-F1 %s)."
                % (p["jid"], h.seconds(first.get("seconds")), first.get("epoch"), h.ratio(first.get("macro_f1")))
            )
        lines.append(
            "- %s%s on %s: **%s** steady throughput (%s, %s steps; median %s per step of %s images, P95 %s; %s); "
            "first step alone (graph compile) %s, %s warm-up steps left out%s."
            % (
                p["jid"],
                (" rank %s" % p["rank"]) if p.get("rank") is not None else "",
                p["device"] or "-",
                h.rate(p["images_per_s"]),
                THROUGHPUT_MEANS,
                p.get("steady_n") if p.get("steady_n") is not None else "?",
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


def _required(acc: Dict[str, Any]) -> List[Tuple[Any, str]]:
    """(job, check) of every check a layer of the acceptance judged (its deciding rows)."""
    out = []
    for layer in acc.get("layers") or []:
        for d in layer.get("deciding") or []:
            if d.get("level") != NOT_REQUIRED:
                out.append((d.get("job"), str(d.get("check") or "")))
    return out


def _is_required(check: Dict[str, Any], required: List[Tuple[Any, str]]) -> bool:
    cid = str(check.get("id"))
    for job, rid in required:
        if job != check.get("jid"):
            continue
        if rid == cid or rid.endswith(":" + cid) or (cid == "alignment" and rid.startswith("align:")):
            return True
    return False


def _rerun(check: Dict[str, Any], kind: str, sid: str) -> str:
    """The job again with its own effective config (as recorded in the session folder), in the same session."""
    jid = str(check.get("jid"))
    return "ms-workbench run %s --session %s --config sessions/%s/jobs/%s/config.yaml" % (
        kind or jid.rsplit("-", 1)[0],
        sid,
        sid,
        jid,
    )


def blocked_lines(report: Dict[str, Any]) -> List[str]:
    """What did not pass, in three lists: required checks failed, required evidence blocked or missing, checks no
    acceptance layer requires (said so); each with a complete command that would produce it again. No text is cut."""
    acc = report.get("acceptance") or {}
    target = str((acc.get("target") or {}).get("device") or "CPU")
    kinds = {j["jid"]: j["kind"] for j in report.get("jobs") or []}
    runs = report["training"]["runs"]
    train = runs[-1]["jid"] if runs else None
    required = _required(acc)
    failed, missing, optional = [], [], []
    for layer in acc.get("layers") or []:
        for d in layer.get("deciding") or []:
            if d.get("level") == Evidence.FAIL:
                how = how_to_produce(str(d.get("check")).split(":")[-1], kinds.get(d.get("job"), ""), train, target)
                failed.append(
                    "- %s (%s layer, %s): %s. Next: `%s`"
                    % (
                        d.get("check"),
                        layer.get("layer"),
                        d.get("job") or "-",
                        str(d.get("detail") or ("%s%s" % (d.get("level"), _value(d)))).rstrip("."),
                        how["command"],
                    )
                )
        for m in layer.get("missing") or []:
            if m.get("command"):
                produce = "`%s`%s" % (m["command"], (" (TUI: %s)" % m["key"]) if m.get("key") else "")
            else:
                produce = "set `%s`" % m["key"] if m.get("key") else "no command recorded"
            missing.append("- %s (%s layer): %s" % (m.get("what"), layer.get("layer"), produce))
    for c in report["checks"]["not_passed"]:
        if c.get("status") not in (Evidence.FAIL, Evidence.BLOCKED) or _is_required(c, required):
            continue
        optional.append(
            "- %s %s (%s), not required by the acceptance: %s. Again, with its own config: `%s`"
            % (
                c.get("id"),
                c.get("status"),
                c.get("jid"),
                str(c.get("reason") or "no reason recorded").rstrip("."),
                _rerun(c, kinds.get(c.get("jid"), ""), str(report["session"]["id"])),
            )
        )
    jobs = ["- %s %s: see section 10 and its stderr.log." % (j["jid"], j["label"]) for j in report["jobs_not_ok"]]
    lines: List[str] = []
    for title, rows in (
        ("Required, failed", failed),
        ("Required, blocked or not run yet", missing),
        ("Not required (failed or blocked; they do not decide the verdict)", optional),
        ("Jobs that did not end ok", jobs),
    ):
        if rows:
            lines += ["**%s**" % title, ""] + rows + [""]
    return lines or ["Nothing is blocked and no check failed."]
