"""The `resume` job: is a resumed run the same run? (check resume-exact)

Three `train` legs with the job's config (jobs/common/legs.py): `first` trains k-1 epochs and saves its
state (network + optimizer + progress), `full` trains k epochs uninterrupted, `resumed` continues
`first` to epoch k in a fresh process (train.resume_from). The check compares `first`'s step
losses with the first k-1 epochs of `full` (the run is reproducible at all), then the losses
of every step after the resume and the final state.ckpt tensor by tensor: on CPU in graph
mode they are expected bit-identical. Run as `python -m jobs.resume --job-dir DIR`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from jobs.common import legs
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext

CHECK_ID = "resume-exact"
CHECK_TITLE = "resume verified against the uninterrupted run"
HINT = "a resume must restore the optimizer state and the progress (epoch, step, sample order) with the weights"


def first_difference(a: Dict[int, float], b: Dict[int, float], steps: List[int]) -> Optional[Tuple[int, Any, Any]]:
    """(global step, a's loss, b's loss) of the first step whose losses are not bit-identical, or None."""
    for step in steps:
        if a.get(step) != b.get(step) or (step in a) != (step in b):
            return step, a.get(step), b.get(step)
    return None


def judge(
    full: legs.Leg, first: legs.Leg, resumed: legs.Leg, k: int, tamper: Dict[str, Any]
) -> Tuple[str, str, Dict[str, Any]]:
    """(status, detail, evidence) of check resume-exact from the three finished legs."""
    evidence: Dict[str, Any] = {
        "k": k,
        "legs": {leg.name: legs.leg_summary(leg) for leg in (first, full, resumed)},
        "tamper": tamper or None,
        "rule": "losses and tensors compared bit for bit",
    }
    for leg in (first, full, resumed):
        if leg.status != "ok":
            err = leg.error or {}
            return (
                Evidence.BLOCKED,
                "leg %s did not finish ok (%s: %s): nothing to compare"
                % (leg.name, err.get("type"), err.get("message")),
                evidence,
            )
    full_losses, first_losses, resumed_losses = full.step_losses(), first.step_losses(), resumed.step_losses()
    before = sorted(first_losses)
    after = sorted(s for s in full_losses if s > (before[-1] if before else 0))
    evidence.update(
        steps_before=len(before), steps_after=len(after), resumed_at_global_step=before[-1] if before else 0
    )
    diff = first_difference(full_losses, first_losses, before)
    if diff is not None:
        evidence["first_difference"] = {"global_step": diff[0], "full": diff[1], "first": diff[2], "where": "before"}
        return (
            Evidence.FAIL,
            (
                "the uninterrupted run is not reproducible: at global step %d the k-1 epoch run had "
                "loss %r, the k epoch run %r (same config and seed)" % (diff[0], diff[2], diff[1])
            ),
            evidence,
        )
    diff = first_difference(full_losses, resumed_losses, after)
    full_ep, resumed_ep = full.epochs()[-1], resumed.epochs()[-1]
    evidence["epoch_k"] = {
        "full": {"train_loss": full_ep["train_loss"], "macro_f1": full_ep["val"]["macro_f1"]},
        "resumed": {"train_loss": resumed_ep["train_loss"], "macro_f1": resumed_ep["val"]["macro_f1"]},
    }
    from jobs.resume.state import compare_checkpoints  # MindSpore only once every leg has ended

    weights = compare_checkpoints(full.dir / "artifacts" / "state.ckpt", resumed.dir / "artifacts" / "state.ckpt")
    evidence["weights"] = dict(weights, differing=weights["differing"][:20])
    if diff is not None:
        evidence["first_difference"] = {"global_step": diff[0], "full": diff[1], "resumed": diff[2], "where": "after"}
        return (
            Evidence.FAIL,
            (
                "after the resume at global step %d the losses differ first at global step %d: "
                "uninterrupted %r, resumed %r; final weights: %d of %d tensors differ (max |diff| %.3g)"
                % (
                    evidence["resumed_at_global_step"],
                    diff[0],
                    diff[1],
                    diff[2],
                    len(weights["differing"]),
                    weights["tensors"],
                    weights["max_abs_diff"],
                )
            ),
            evidence,
        )
    if not weights["identical"]:
        return (
            Evidence.FAIL,
            (
                "the %d losses after the resume match, but the final weights differ: %d of %d tensors "
                "(first %s, max |diff| %.3g; missing %s)"
                % (
                    len(after),
                    len(weights["differing"]),
                    weights["tensors"],
                    (weights["differing"] or ["-"])[0],
                    weights["max_abs_diff"],
                    weights["missing"] or "none",
                )
            ),
            evidence,
        )
    return (
        Evidence.PASS,
        (
            "resumed from the state of epoch %d: all %d following step losses and all %d tensors of the "
            "final state (weights + optimizer) are bit-identical to the uninterrupted %d-epoch run"
            % (k - 1, len(after), weights["tensors"], k)
        ),
        evidence,
    )


def main(ctx: JobContext) -> str:
    """Run the three legs, compare, emit check resume-exact."""
    r, t = ctx.cfg.resume, ctx.cfg.train
    k = r.epochs
    common = {
        "train.train_limit": r.train_limit or t.train_limit,
        "train.profile.steps": 0,
        "perf.repeats": 1,
        "train.parallel.workers": 1,
    }
    ctx.started(
        k=k,
        tamper=r.tamper,
        train_limit=common["train.train_limit"],
        mode=t.mode,
        precision=t.precision,
        seed=t.seed,
        legs=["first", "full", "resumed"],
    )
    ctx.progress(0, 3, "leg", "first: %d epochs" % (k - 1))
    first = legs.run_leg(ctx, "first", dict(common, **{"train.epochs": k - 1}))
    ctx.progress(1, 3, "leg", "full: %d epochs" % k)
    full = legs.run_leg(ctx, "full", dict(common, **{"train.epochs": k}))
    tamper: Dict[str, Any] = {}
    if r.tamper == "optimizer" and first.status == "ok":
        from jobs.resume.state import zero_optimizer_state

        tamper = dict(zero_optimizer_state(first.dir / "artifacts"), how="optimizer")
        ctx.log(
            "resume.tamper=optimizer: zeroed %d optimizer tensors in legs/first's state" % len(tamper["zeroed"]),
            level="warning",
        )
    ctx.progress(2, 3, "leg", "resumed: epoch %d from the state of epoch %d" % (k, k - 1))
    resumed = legs.run_leg(ctx, "resumed", dict(common, **{"train.epochs": k, "train.resume_from": str(first.dir)}))
    ctx.progress(3, 3, "leg", "compare")
    status, detail, evidence = judge(full, first, resumed, k, tamper)
    ctx.check(CHECK_ID, CHECK_TITLE, status, detail, evidence=evidence, hint=None if status == Evidence.PASS else HINT)
    ctx.result(
        {
            "status": status,
            "k": k,
            "steps_after": evidence.get("steps_after"),
            "first_difference": evidence.get("first_difference"),
            "weights_identical": (evidence.get("weights") or {}).get("identical"),
        }
    )
    return "ok"
