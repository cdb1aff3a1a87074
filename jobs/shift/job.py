"""The `shift` job: the frozen candidate on new-distribution sets, with the failure cases of each.

The sets are built-in shifts of test images (jobs/shift/transforms.py) at stated severities and,
with shift.from, the user's own images. They are evaluated after the freeze and never used to
choose a model: the job refuses to run without a frozen candidate. The clean baseline is the same
test images unshifted, evaluated here; it is not the candidate's test-set result (that is the
`test` job's, counted there).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jobs.common import datafeed, models, msdevice, precision
from jobs.shift import own_images, transforms
from workbench.analysis import shift as shiftmod
from workbench.analysis.metrics import metrics_report
from workbench.events.protocol import Evidence
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext, JobFailed
from workbench.session import candidate as candidates
from workbench.session.store import SessionStore
from workbench.system.atomic import sha256_file, write_bytes

FAILURES_NPZ = "failures.npz"
FAILURES_PNG = "failures.png"
EVAL_BATCH = 1000


def probabilities(net: Any, images: np.ndarray) -> np.ndarray:
    """Softmax of the network's logits over [N, 1, 28, 28] images, fetched with asnumpy()."""
    from mindspore import Tensor

    net.set_train(False)
    out = []
    for start in range(0, len(images), EVAL_BATCH):
        logits = net(Tensor(images[start : start + EVAL_BATCH])).asnumpy().astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        out.append(e / e.sum(axis=1, keepdims=True))
    return np.concatenate(out) if out else np.zeros((0, 10))


def evaluate(labels: np.ndarray, probs: np.ndarray, clean: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Accuracy, macro-F1, per-class recall and mean confidence of one set, with drops against the clean set."""
    pred = probs.argmax(axis=1)
    report = metrics_report(labels, pred)
    recall = [row["recall"] for row in report["per_class"]]
    out = {
        "n": int(len(labels)),
        "accuracy": report["accuracy"],
        "macro_f1": report["macro_f1"],
        "recall": recall,
        "mean_confidence": float(probs.max(axis=1).mean()) if len(labels) else None,
    }
    if clean is not None:
        out["drop"] = clean["macro_f1"] - out["macro_f1"]
        out["recall_drop"] = [c - r for c, r in zip(clean["recall"], recall)]
    return out


def failure_cases(labels: np.ndarray, probs: np.ndarray, k: int) -> List[Dict[str, Any]]:
    """The `k` most confident wrong predictions: index, true class, predicted class, confidence."""
    pred = probs.argmax(axis=1)
    conf = probs.max(axis=1)
    wrong = np.flatnonzero(pred != labels)
    order = wrong[np.argsort(-conf[wrong], kind="stable")][:k]
    return [
        {"index": int(i), "true": int(labels[i]), "pred": int(pred[i]), "confidence": float(conf[i])} for i in order
    ]


def pick_images(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """`per_class` test images of each class, drawn with the seed (every image when per_class is 0)."""
    if per_class <= 0:
        return np.arange(len(labels))
    rng = np.random.default_rng(seed)
    picked = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return np.sort(np.concatenate(picked))


def failure_grid_png(rows: List[Tuple[str, np.ndarray]], path: Path) -> None:
    """One row of 28×28 thumbnails (scaled ×3) per set, written atomically as a PNG."""
    import io

    from PIL import Image

    cell, pad = 28 * 3, 4
    width = max((len(imgs) for _, imgs in rows), default=1) * (cell + pad) + pad
    sheet = Image.new("L", (max(width, cell + 2 * pad), len(rows) * (cell + pad) + pad), 40)
    for r, (_, imgs) in enumerate(rows):
        for c, img in enumerate(imgs):
            # Pillow >= 10 sets NEAREST at import (its stubs lack it); Image.Resampling needs 9.1, MindSpore asks 6.2
            tile = Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8)).resize(
                (cell, cell),
                Image.NEAREST,  # type: ignore[attr-defined]
            )
            sheet.paste(tile, (pad + c * (cell + pad), pad + r * (cell + pad)))
    buf = io.BytesIO()
    sheet.save(buf, format="PNG")
    write_bytes(path, buf.getvalue())


def _candidate_model(ctx: JobContext) -> Tuple[candidates.Candidate, Path, JobConfig]:
    """The session's frozen candidate, its checkpoint (hash checked) and its training run's config."""
    session_dir = ctx.dir.parent.parent
    chosen = candidates.current(session_dir)
    if chosen is None:
        raise JobFailed(
            "no frozen candidate in session %s: the new-distribution sets evaluate the candidate, never a model "
            "still being chosen" % session_dir.name,
            hint=SessionStore(session_dir.parent).command("freeze", session_dir.name),
            type_="NoCandidate",
        )
    ckpt = session_dir / chosen.checkpoint
    try:
        found = sha256_file(ckpt)
    except OSError as exc:
        raise JobFailed("candidate checkpoint %s cannot be read: %s" % (ckpt, exc), type_="FileNotFoundError") from None
    if found != chosen.sha256:
        ctx.check(
            "checkpoint",
            "candidate checkpoint",
            Evidence.FAIL,
            "%s has SHA-256 %s, the freeze recorded %s" % (ckpt, found, chosen.sha256),
            evidence={"sha256": found, "frozen": chosen.sha256},
        )
        raise JobFailed(
            "the candidate's checkpoint changed after the freeze", hint="freeze again", type_="CheckpointMismatch"
        )
    run_dir = session_dir / "jobs" / chosen.run
    cfg = models.read_job_config(run_dir)
    if not isinstance(cfg, dict):
        raise JobFailed(
            "%s: the candidate's training run has no readable config.json" % run_dir, type_="FileNotFoundError"
        )
    return chosen, run_dir, JobConfig(cfg)


def main(ctx: JobContext) -> str:
    """Evaluate the candidate on every configured set and severity; write the failure cases."""
    import mindspore as ms

    own = ctx.cfg.shift
    ctx.started(mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)}, mode=ctx.cfg.train.mode)
    chosen, run_dir, train_cfg = _candidate_model(ctx)
    user_set = None
    if own["from"]:  # read before any device work: a bad folder costs nothing and writes nothing
        try:
            user_set = own_images.load(Path(own["from"]), own["on_bad"])
        except own_images.OwnImagesError as exc:
            raise JobFailed(str(exc), hint="see shift.from and shift.on_bad", type_="OwnImagesError") from None
    effective = msdevice.require_device(ctx, ctx.cfg.device.target, ctx.cfg.device.id, ctx.cfg.train.mode)
    prec = train_cfg.train.precision
    net = models.build_net(train_cfg.model.name, train_cfg.model.hidden)
    run_net, prec_info = precision.apply_precision(net, prec)
    loaded = models.load_weights(net, Path(run_dir.parent.parent / chosen.checkpoint), "candidate checkpoint")
    ctx.subject = candidates.checkpoint_subject(chosen.sha256)  # every check below is about the candidate
    subject = {"sha256": chosen.sha256, "run": chosen.run, "epoch": chosen.epoch}
    ctx.check(
        "checkpoint",
        "candidate checkpoint",
        Evidence.PASS,
        "%s: %d tensors loaded, SHA-256 matches the freeze" % (chosen.label(), loaded["parameters"]),
        evidence={"path": chosen.checkpoint, "sha256": chosen.sha256},
    )
    try:
        test_images, test_labels, data_desc = datafeed.load_test_set(run_dir, train_cfg)
    except JobFailed:
        raise
    except Exception as exc:  # DataError names the file and the expectation
        raise JobFailed(str(exc), hint="see data.dir of the training run", type_=type(exc).__name__) from None
    picked = pick_images(test_labels, own["per_class"], own["seed"])
    base = test_images[picked, 0].astype(np.float32)
    labels = test_labels[picked]
    dtype = precision.input_dtype(prec)

    def run_set(images: np.ndarray) -> np.ndarray:
        return probabilities(run_net, images[:, None, :, :].astype(dtype, copy=False))

    t0 = time.perf_counter()
    clean_probs = run_set(base)
    clean = evaluate(labels, clean_probs, None)
    plan = [(name, s) for name in own["sets"] for s in own["severities"]]
    total = len(plan) + (1 if user_set is not None else 0)
    rows: List[Dict[str, Any]] = []
    failures: List[Dict[str, Any]] = []
    thumbs: List[Tuple[str, np.ndarray]] = []
    top = max(own["severities"]) if own["severities"] else None
    for done, (name, severity) in enumerate(plan):
        ctx.raise_if_cancelled()
        ctx.progress(done, total, "set", "shift")
        shifted = transforms.apply(name, severity, base, own["seed"])
        probs = run_set(shifted)
        family = transforms.SHIFTS[name][0]
        rows.append(
            dict(
                evaluate(labels, probs, clean),
                set=name,
                family=family,
                severity=severity,
                parameter=transforms.parameter(name, severity),
                shift=transforms.describe(name, severity),
            )
        )
        if severity == top:
            cases = failure_cases(labels, probs, own["failures"])
            for case in cases:
                case["test_index"] = int(picked[case["index"]])
            failures.append({"set": name, "severity": severity, "cases": cases})
            thumbs.append((name, shifted[[c["index"] for c in cases]] if cases else np.zeros((0, 28, 28))))
    own_result = None
    if user_set is not None:
        ctx.progress(len(plan), total, "set", "shift")
        probs = run_set(user_set.images)
        row = dict(evaluate(user_set.labels, probs, clean), set="own", family="own images", severity=0)
        rows.append(row)
        cases = failure_cases(user_set.labels, probs, own["failures"])
        for case in cases:
            case["file"] = user_set.files[case["index"]]
        failures.append({"set": "own", "severity": 0, "cases": cases})
        thumbs.append(("own", user_set.images[[c["index"] for c in cases]] if cases else np.zeros((0, 28, 28))))
        own_result = {
            "source": user_set.source,
            "n": int(len(user_set.labels)),
            "inverted": user_set.inverted,
            "skipped": user_set.skipped,
        }
    ctx.progress(total, total, "set", "shift")
    eval_s = time.perf_counter() - t0
    summary = {"clean": clean, "sets": rows}
    limits = shiftmod.drop_limits(ctx.cfg.acceptance.max_shift_drop, [r["set"] for r in rows])
    if limits:
        ok, lines = shiftmod.judge(summary, limits)
        ctx.check(
            "new-distribution",
            "new-distribution macro-F1 drop",
            Evidence.PASS if ok else Evidence.FAIL,
            "; ".join(lines),
            evidence={"limits": limits, "worst_drop": {k: r["drop"] for k, r in shiftmod.worst(summary).items()}},
        )

    npz = ctx.artifacts / FAILURES_NPZ
    tmp = npz.with_name(".%s.tmp.npz" % npz.stem)
    np.savez_compressed(
        str(tmp),
        **{"%s" % name: (np.clip(imgs, 0, 1) * 255).astype(np.uint8) for name, imgs in thumbs},
    )
    os.replace(str(tmp), str(npz))
    ctx.artifact(npz, "failure-cases", sets=[name for name, _ in thumbs])
    failure_grid_png(thumbs, ctx.artifacts / FAILURES_PNG)
    ctx.artifact(ctx.artifacts / FAILURES_PNG, "failure-grid", sets=[name for name, _ in thumbs])
    ctx.result(
        {
            "subject": subject,
            "candidate": dict(subject, label=chosen.label(), checkpoint=chosen.checkpoint),
            "images": {
                "n": int(len(labels)),
                "of": int(len(test_labels)),
                "per_class": own["per_class"],
                "seed": own["seed"],
                "data": data_desc,
            },
            "clean": clean,
            "sets": rows,
            "failures": failures,
            "own": own_result,
            "tolerance": own["tolerance"],
            "eval_s": eval_s,
            "precision": prec_info,
            "effective_device": effective,
        }
    )
    return "ok"
