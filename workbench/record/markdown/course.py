"""The course's own checks in report.md's first screen: overfit one batch, resume, candidate precision, each with its
verdict and the numbers that decide it (their full evidence stays in appendix/checks.md)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.render import humanize as h

COURSE_CHECKS = (("overfit-batch", "overfit one batch"), ("resume-exact", "resume"), ("precision-run", "precision"))
CURVE_POINTS = 5


def _find(report: Dict[str, Any], cid: str) -> Optional[Dict[str, Any]]:
    found = [c for j in report.get("jobs") or [] for c in j["checks"] if c.get("id") == cid]
    return found[-1] if found else None


def _curve(points: Any) -> str:
    """A few points of a [[step, loss], ...] curve: 'step 1 2.319, step 15 1.8, … step 60 0.782'."""
    if not isinstance(points, list) or not points:
        return "no curve recorded"
    n = len(points)
    picks = sorted({round(i * (n - 1) / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)}) if n > 1 else [0]
    return ", ".join("step %s %s" % (points[i][0], h.loss(points[i][1])) for i in picks if len(points[i]) == 2)


def overfit_text(ev: Dict[str, Any]) -> str:
    """Loss drop on the fixed batch against the factor wanted, and the curve."""
    return "loss %s → %s (÷%.2f, wanted ÷%g) in %s steps on one batch of %s; %s; curve: %s" % (
        h.loss(ev.get("first_loss")),
        h.loss(ev.get("last_loss")),
        ev.get("factor_reached") or 0.0,
        ev.get("factor_wanted") or 0,
        ev.get("steps_run"),
        ev.get("batch_size"),
        "reached at step %s" % ev["reached_at_step"] if ev.get("reached_at_step") else "not reached",
        _curve(ev.get("curve")),
    )


def resume_text(ev: Dict[str, Any]) -> str:
    """What was compared between the resumed and the uninterrupted run, and whether it is bit-exact."""
    w: Dict[str, Any] = ev["weights"] if isinstance(ev.get("weights"), dict) else {}
    return (
        "resumed at global step %s (state of epoch %s) against the uninterrupted %s-epoch run: %s step losses after "
        "the resume and %s tensors of the final state (weights + optimizer) compared bit for bit: %s%s"
        % (
            ev.get("resumed_at_global_step"),
            (ev.get("k") or 1) - 1,
            ev.get("k"),
            ev.get("steps_after"),
            w.get("tensors"),
            "bit-exact" if w.get("identical") else "NOT bit-exact",
            (
                " (differing: %s; largest |diff| %s)"
                % (", ".join(map(str, w["differing"][:4])), h.sci(w.get("max_abs_diff")))
                if w.get("differing")
                else ""
            ),
        )
    )


def precision_text(ev: Dict[str, Any]) -> str:
    """Δ macro-F1 against its tolerance, the per-class recall deltas, finiteness of both legs."""
    deltas = ev.get("recall_delta") or []
    fp32: Dict[str, Any] = ev["fp32"] if isinstance(ev.get("fp32"), dict) else {}
    cand: Dict[str, Any] = ev["candidate_leg"] if isinstance(ev.get("candidate_leg"), dict) else {}
    names = fp32.get("class_names") or [str(i) for i in range(len(deltas))]
    if ev.get("macro_f1_delta") is None:
        return "%s against fp32: not compared (%s leg %s, fp32 leg %s)" % (
            ev.get("candidate"),
            ev.get("candidate"),
            cand.get("status"),
            fp32.get("status"),
        )
    return (
        "%s against its fp32 twin: Δ val macro-F1 %+.4f (tolerance ±%g); per-class recall Δ %s; step losses "
        "finite: fp32 %s, %s %s"
        % (
            ev.get("candidate"),
            float(ev["macro_f1_delta"]),
            float(ev.get("max_macro_f1_delta") or 0.0),
            ", ".join("%s %+.3f" % (names[i] if i < len(names) else i, d) for i, d in enumerate(deltas)) or "-",
            fp32.get("finite_loss"),
            ev.get("candidate"),
            cand.get("finite_loss"),
        )
    )


TEXTS = {"overfit-batch": overfit_text, "resume-exact": resume_text, "precision-run": precision_text}


def course_lines(report: Dict[str, Any]) -> List[str]:
    """One line per course check: its verdict, its job and what decided it; 'not run' with the command when absent."""
    lines = []
    for cid, name in COURSE_CHECKS:
        c = _find(report, cid)
        if c is None:
            lines.append("- **%s** (%s): not run in this session." % (name, cid))
            continue
        ev: Dict[str, Any] = c["evidence"] if isinstance(c.get("evidence"), dict) else {}
        try:
            said = TEXTS[cid](ev)
        except (TypeError, ValueError, KeyError, IndexError):  # evidence of another shape: the job's own words
            said = str(c.get("detail") or "")
        lines.append("- **%s** (%s, %s): **%s**. %s." % (name, cid, c.get("jid"), c.get("status"), said))
    return lines + [""]
