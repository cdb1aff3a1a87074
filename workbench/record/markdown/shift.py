"""The record's new-distribution part: the scope of use on the first screen, and the evaluation per set."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.analysis import shift as shiftmod
from workbench.data.fashion import CLASS_NAMES
from workbench.record.markdown.tables import table
from workbench.render import humanize as h


def newest_ok(report: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The newest shift job that ended ok with a result, None when there is none."""
    done = [j for j in report.get("new_distribution") or [] if j["state"] == "ok" and j.get("summary")]
    return done[-1] if done else None


def scope_lines(report: Dict[str, Any]) -> List[str]:
    """'## Scope of use': where the candidate holds and where it does not, from the newest shift job."""
    out = ["## Scope of use (new-distribution data)", ""]
    job = newest_ok(report)
    if job is None:
        out += [
            "Not evaluated: no shift job ended ok in this session, so nothing here says how the candidate "
            "does on new data (other lighting, backgrounds, framing, photos). Run `ms-workbench run shift`.",
            "",
        ]
        return out
    res = job["summary"]
    cand = res.get("candidate") or {}
    scope = shiftmod.scope(res)
    out.append(
        "%s evaluated the candidate %s on %s shifted test images per set and severity, after the freeze; "
        "macro-F1 on the same images unshifted: %s; a drop within %s counts as holding."
        % (
            job["jid"],
            cand.get("label") or "-",
            h.count((res.get("images") or {}).get("n")),
            h.ratio((res.get("clean") or {}).get("macro_f1")),
            res.get("tolerance"),
        )
    )
    out.append("")
    out += ["- Holds — %s" % line for line in scope["holds"]]
    out += ["- **Does not hold** — %s" % line for line in scope["breaks"]]
    if not scope["holds"] and not scope["breaks"]:
        out.append("- No set was evaluated.")
    out.append("")
    return out


def section_lines(report: Dict[str, Any], figures: Dict[str, Dict[str, str]]) -> List[str]:
    """'### New-distribution evaluation' of every shift job: heat map, worst drops, failures, own images."""
    jobs = report.get("new_distribution") or []
    out = ["### New-distribution evaluation (%d)" % len(jobs), ""]
    if not jobs:
        return out + ["The candidate was not evaluated on new-distribution data in this session.", ""]
    for job in jobs:
        res = job.get("summary") or {}
        out += ["#### %s (%s)" % (job["jid"], job["label"]), ""]
        if not res:
            out += ["No result.", ""]
            continue
        names, severities, grid = shiftmod.heat_map(res)
        clean = (res.get("clean") or {}).get("macro_f1")
        headers = ["set", "family"] + ["s%d" % s for s in severities] + ["worst drop", "classes hit first"]
        worst = shiftmod.worst(res)
        rows = []
        for name, cells in zip(names, grid):
            w = worst.get(name) or {}
            rows.append(
                [name, shiftmod.SETS.get(name, ("-", ""))[0]]
                + [h.ratio(v, 2) if v is not None else "-" for v in cells]
                + [h.ratio(w.get("drop"), 2), _classes_hit(w)]
            )
        out += [
            "Macro-F1 per set and severity (clean: %s on the same %s images; s1 mildest, s5 strongest):"
            % (h.ratio(clean, 3), h.count((res.get("images") or {}).get("n"))),
            "",
        ]
        out += table(headers, rows) + [""]
        out += _calibration_lines(res)
        fig = figures.get(job["jid"]) or {}
        if fig.get("heat_map"):
            out += ["![%s macro-F1 by set and severity](%s)" % (job["jid"], fig["heat_map"]), ""]
        if fig.get("failures"):
            out += ["![%s most confident failures](%s)" % (job["jid"], fig["failures"]), ""]
        out += _failure_lines(res)
        out += _own_lines(res.get("own"))
    return out


def _classes_hit(row: Dict[str, Any]) -> str:
    drops = row.get("recall_drop") or []
    order = sorted(range(len(drops)), key=lambda k: -drops[k])[:2]
    return ", ".join("%s −%.2f" % (CLASS_NAMES[k], drops[k]) for k in order if drops[k] > 0) or "-"


def _calibration_lines(res: Dict[str, Any]) -> List[str]:
    """Does the model know it is wrong: mean confidence against accuracy at each set's worst severity."""
    rows = []
    for name, row in shiftmod.worst(res).items():
        conf, acc = row.get("mean_confidence"), row.get("accuracy")
        gap = conf - acc if isinstance(conf, float) and isinstance(acc, float) else None
        rows.append(
            [name, row.get("severity"), h.ratio(acc, 2), h.ratio(conf, 2), "%+.2f" % gap if gap is not None else "-"]
        )
    if not rows:
        return []
    return (
        [
            "Confidence at each set's worst severity (mean top-class probability vs accuracy; a large positive gap: "
            "the model is confidently wrong):",
            "",
        ]
        + table(["set", "severity", "accuracy", "mean confidence", "gap"], rows)
        + [""]
    )


FAILURES_SHOWN = 3  # per set in report.md; the figure shows every kept case


def _failure_lines(res: Dict[str, Any]) -> List[str]:
    rows = []
    for block in res.get("failures") or []:
        for case in (block.get("cases") or [])[:FAILURES_SHOWN]:
            rows.append(
                [
                    block["set"],
                    block["severity"],
                    case.get("file") or case.get("test_index"),
                    CLASS_NAMES[case["true"]],
                    CLASS_NAMES[case["pred"]],
                    h.ratio(case["confidence"], 2),
                ]
            )
    if not rows:
        return ["No wrong prediction at the strongest severity.", ""]
    return (
        [
            "The %d most confident wrong predictions per set at the strongest severity (test index or file; the "
            "figure above shows every case kept):" % FAILURES_SHOWN,
            "",
        ]
        + table(["set", "severity", "image", "true", "predicted", "confidence"], rows)
        + [""]
    )


def _own_lines(own: Optional[Dict[str, Any]]) -> List[str]:
    if not own:
        return []
    out = ["Own images: %s, %s used." % (own.get("source"), h.count(own.get("n")))]
    if own.get("inverted"):
        out.append("Inverted to the training contract (light background detected): %s." % ", ".join(own["inverted"]))
    for skipped in own.get("skipped") or []:
        out.append("Left out: %s — %s." % (skipped["file"], skipped["why"]))
    return out + [""]
