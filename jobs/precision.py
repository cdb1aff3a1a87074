"""The `precision` job: a training run in the candidate precision judged against its fp32 twin (check precision-run).

Two `train` legs (jobs/common/legs.py) with the job's config, split, seed and budget, differing only in
train.precision: `fp32` and the candidate (`precision_run.candidate`). The check needs both legs
to end ok with every step loss finite, and |candidate - fp32| validation macro-F1 of the last
epoch within `precision_run.max_macro_f1_delta`; it records the per-class recall deltas, the
per-epoch train losses of both (the loss trend) and what the train step does about loss scaling.
Run as `python -m jobs.precision --job-dir DIR` (the job kind `precision`).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Tuple

from jobs.common import legs
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, JobFailed, run

CHECK_ID = "precision-run"
CHECK_TITLE = "candidate-precision training run against fp32"


def loss_scale_facts(leg: legs.Leg) -> Dict[str, Any]:
    """What the candidate leg's loss scale did: its `loss_scale` events (the curve and every overflow skip)."""
    events = [e for e in leg.events if e["type"] == "loss_scale"]
    if not events:
        return {
            "used": False,
            "events": [],
            "why": "train.loss_scale is none: the train step (nn.TrainOneStepCell) never scales the loss, so there "
            "are no scale updates or overflow skips to record",
        }
    curve = [[e["global_step"], e["scale"]] for e in events]
    last = events[-1]
    if last.get("next_scale") is not None:
        curve.append([last["global_step"], last["next_scale"]])
    skips = [e["global_step"] for e in events if e.get("overflow")]
    return {
        "used": True,
        "events": len(events),
        "skipped_steps": len(skips),
        "skipped_at": skips[:200],
        "first_scale": events[0]["scale"],
        "final_scale": last.get("next_scale", last["scale"]),
        "curve": curve[:500],
        "rule": "one loss_scale event at the first step, at each overflow skip and at each change of the scale",
    }


def loss_scale_words(facts: Dict[str, Any], steps: int) -> str:
    """'dynamic loss scale 1.68e+07 -> 2.62e+05, 6 of 29 steps skipped for overflow' or 'no loss scaling'."""
    if not facts["used"]:
        return "no loss scaling in the train step"
    return "dynamic loss scale %.3g -> %.3g, %d of %d steps skipped for overflow" % (
        facts["first_scale"],
        facts["final_scale"],
        facts["skipped_steps"],
        steps,
    )


def leg_facts(leg: legs.Leg) -> Dict[str, Any]:
    """Status, finiteness, last-epoch metrics and the loss trend of one leg."""
    facts: Dict[str, Any] = legs.leg_summary(leg)
    finite = leg.check("finite-loss")
    facts["finite_loss"] = None if finite is None else finite["status"]
    facts["steps"] = len(leg.step_losses())
    epochs = leg.epochs()
    facts["train_loss_per_epoch"] = [e["train_loss"] for e in epochs]
    if epochs:
        val = epochs[-1]["val"]
        facts.update(
            epoch=epochs[-1]["epoch"],
            macro_f1=val["macro_f1"],
            accuracy=val["accuracy"],
            recall=[c["recall"] for c in val["per_class"]],
            class_names=[c.get("name", str(i)) for i, c in enumerate(val["per_class"])],
        )
    perf = [e for e in leg.events if e["type"] == "perf" and e.get("scope") == "run"]
    facts["steady_median_ms"] = perf[-1]["steady"]["median_ms"] if perf else None
    return facts


def judge(fp32: legs.Leg, cand: legs.Leg, candidate: str, tol: float) -> Tuple[str, str, Dict[str, Any]]:
    """(status, detail, evidence) of check precision-run from the two finished legs."""
    a, b = leg_facts(fp32), leg_facts(cand)
    evidence: Dict[str, Any] = {
        "candidate": candidate,
        "max_macro_f1_delta": tol,
        "fp32": a,
        "candidate_leg": b,
        "loss_scale": loss_scale_facts(cand),
        "rule": "last epoch's validation metrics; same split, seed and budget",
    }
    if fp32.status != "ok":
        err = fp32.error or {}
        return (
            Evidence.BLOCKED,
            "the fp32 twin did not finish ok (%s: %s): nothing to judge against"
            % (err.get("type"), err.get("message")),
            evidence,
        )
    if cand.status != "ok":
        err = cand.error or {}
        if err.get("type") == "NonFiniteLoss":
            return Evidence.FAIL, "%s training hit a non-finite loss: %s" % (candidate, err.get("message")), evidence
        return (
            Evidence.BLOCKED,
            "the %s leg did not finish ok (%s: %s)" % (candidate, err.get("type"), err.get("message")),
            evidence,
        )
    delta = b["macro_f1"] - a["macro_f1"]
    recall_delta = [rb - ra for ra, rb in zip(a["recall"], b["recall"])]
    worst = min(range(len(recall_delta)), key=lambda i: recall_delta[i])
    evidence.update(
        macro_f1_delta=delta,
        recall_delta=recall_delta,
        worst_recall_delta={"class": a["class_names"][worst], "delta": recall_delta[worst]},
        train_loss_delta_last=b["train_loss_per_epoch"][-1] - a["train_loss_per_epoch"][-1],
    )
    finite = b["finite_loss"] == Evidence.PASS and a["finite_loss"] == Evidence.PASS
    detail = (
        "%s vs fp32 after %d epochs: val macro-F1 %.4f vs %.4f (Δ %+.4f, tolerance %.4f); worst recall Δ %+.4f "
        "(%s); %d finite step losses each; %s"
        % (
            candidate,
            a["epoch"],
            b["macro_f1"],
            a["macro_f1"],
            delta,
            tol,
            recall_delta[worst],
            a["class_names"][worst],
            b["steps"],
            loss_scale_words(evidence["loss_scale"], b["steps"]),
        )
    )
    if not finite:
        return Evidence.FAIL, "not every step loss was checked finite; " + detail, evidence
    if abs(delta) > tol:
        return Evidence.FAIL, detail.replace("tolerance", "over the tolerance", 1), evidence
    return Evidence.PASS, detail, evidence


def main(ctx: JobContext) -> str:
    """Run the fp32 twin and the candidate leg, compare, emit check precision-run."""
    p, t = ctx.cfg.precision_run, ctx.cfg.train
    if p.candidate == "fp32":
        raise JobFailed(
            "precision_run.candidate is 'fp32': the run would be judged against itself",
            hint="set precision_run.candidate to fp16, amp-O1 or amp-O2",
            type_="ConfigError",
        )
    common = {"train.resume_from": None, "train.profile.steps": 0, "perf.repeats": 1, "train.parallel.workers": 1}
    ctx.started(
        candidate=p.candidate,
        max_macro_f1_delta=p.max_macro_f1_delta,
        epochs=t.epochs,
        train_limit=t.train_limit,
        mode=t.mode,
        seed=t.seed,
        legs=["fp32", p.candidate],
    )
    ctx.progress(0, 2, "leg", "fp32 twin")
    fp32 = legs.run_leg(ctx, "fp32", dict(common, **{"train.precision": "fp32", "train.loss_scale": "none"}))
    ctx.progress(1, 2, "leg", p.candidate)
    cand = legs.run_leg(ctx, p.candidate, dict(common, **{"train.precision": p.candidate}))
    ctx.progress(2, 2, "leg", "compare")
    status, detail, evidence = judge(fp32, cand, p.candidate, p.max_macro_f1_delta)
    ctx.check(
        CHECK_ID,
        CHECK_TITLE,
        status,
        detail,
        evidence=evidence,
        hint=None if status == Evidence.PASS else "see legs/*/events.jsonl; fp32 is the reference",
    )
    ctx.result(
        {
            "status": status,
            "candidate": p.candidate,
            "macro_f1_delta": evidence.get("macro_f1_delta"),
            "fp32_macro_f1": evidence["fp32"].get("macro_f1"),
            "candidate_macro_f1": evidence["candidate_leg"].get("macro_f1"),
        }
    )
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
