"""The `test` job: evaluate a training run's frozen best checkpoint on the test images, and count it.

Every evaluation is recorded in the training job's folder (test_evaluations.json, updated
under an fcntl lock), because looking at the test set more than once turns it into a
validation set: from the second evaluation on the job says so in a check.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict

from jobs.common import datafeed, models, msdevice, precision
from jobs.common.imported_ckpt import counter_home, reverify_checkpoint
from workbench.analysis.metrics import metrics_report
from workbench.events.protocol import Evidence
from workbench.jobkit.config import JobConfig
from workbench.jobkit.context import JobContext, JobFailed, run
from workbench.session.candidate import checkpoint_subject
from workbench.session.checkpoint_origin import run_not_ok_warning
from workbench.system.atomic import read_json, sha256_file, write_json

COUNTER_NAME = "test_evaluations.json"
LOCK_NAME = "test_evaluations.lock"
TEST_BATCH = 1000


def record_evaluation(train_dir: Path, entry: Dict[str, Any]) -> Dict[str, Any]:
    """Append one evaluation to the training job's counter file under an exclusive lock; return it."""
    path = Path(train_dir) / COUNTER_NAME
    with open(str(Path(train_dir) / LOCK_NAME), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        record: Dict[str, Any] = (
            read_json(path) if path.exists() else {"train_job": Path(train_dir).name, "evaluations": []}
        )
        record["evaluations"].append(entry)
        record["count"] = len(record["evaluations"])
        write_json(path, record)
    return record


def main(ctx: JobContext) -> str:
    """Run the test-set evaluation."""
    import mindspore as ms

    ref = ctx.cfg.test["from"]  # `from` is a Python keyword: item access
    mode = ctx.cfg.train.mode
    ctx.started(mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)}, mode=mode, test_from=ref)
    if not ref:
        raise JobFailed(
            "test.from is not set", hint="--set test.from=<train job id>, e.g. train-001", type_="ConfigError"
        )
    train_dir = models.resolve_job_ref(ctx.dir, "test.from", ref)
    not_ok = run_not_ok_warning(train_dir)  # a crashed or cancelled run's best.ckpt can be tested, but says so
    if not_ok:
        ctx.log(not_ok, level="warning")
    best_ckpt, best_json = train_dir / "artifacts" / "best.ckpt", train_dir / "artifacts" / "best.json"
    if not best_json.is_file() or not best_ckpt.is_file():
        raise JobFailed(
            "test.from is %r: %s has no artifacts/best.ckpt + best.json" % (ref, train_dir),
            hint="the training job writes them after its first validated epoch",
            type_="FileNotFoundError",
        )
    digest = sha256_file(best_ckpt)
    ctx.subject = checkpoint_subject(digest)  # every check below is about this file
    reverify_checkpoint(ctx, best_ckpt, "test.from")
    best = read_json(best_json)
    train_cfg = models.read_job_config(train_dir) or best.get("config")
    if not isinstance(train_cfg, dict):
        raise JobFailed("%s: no config.json and best.json has no config" % train_dir, type_="FileNotFoundError")
    train_cfg = JobConfig(train_cfg)  # validated when that job started: typed, read-only here
    prec = train_cfg.train.precision
    ctx.log("evaluating %s: model %s, precision %s" % (train_dir, dict(train_cfg.model), prec))
    effective = msdevice.require_device(ctx, ctx.cfg.device.target, ctx.cfg.device.id, mode)
    msdevice.sample_device_activity(ctx)

    recorded = (best.get("checkpoint") or {}).get("sha256")
    if recorded and digest != recorded:
        ctx.check(
            "checkpoint",
            "frozen checkpoint",
            Evidence.FAIL,
            "%s has SHA-256 %s, best.json records %s" % (best_ckpt, digest, recorded),
            evidence={"sha256": digest, "recorded": recorded},
        )
        raise JobFailed(
            "best.ckpt changed after training: SHA-256 %s, recorded %s" % (digest, recorded),
            hint="evaluate an unmodified checkpoint",
            type_="CheckpointMismatch",
        )
    net = models.build_net(train_cfg.model.name, train_cfg.model.hidden)
    run_net, prec_info = precision.apply_precision(net, prec)
    loaded = models.load_weights(net, best_ckpt, "best checkpoint")
    ctx.check(
        "checkpoint",
        "frozen checkpoint",
        Evidence.PASS,
        "%s of %s (epoch %s, val macro-F1 %.4f): %d tensors loaded, SHA-256 matches best.json"
        % (
            best_ckpt.name,
            train_dir.name,
            best.get("epoch"),
            (best.get("val") or {}).get("macro_f1", float("nan")),
            loaded["parameters"],
        ),
        evidence={"path": str(best_ckpt), "sha256": digest},
    )

    try:
        images, labels, data_desc = datafeed.load_test_set(train_dir, train_cfg)
    except JobFailed:
        raise
    except Exception as exc:  # DataError names the file and the expectation
        raise JobFailed(str(exc), hint="see data.dir of the training run", type_=type(exc).__name__)
    images = images.astype(precision.input_dtype(prec), copy=False)
    ctx.progress(0, len(labels), "image", "test")
    t0 = time.perf_counter()
    pred = models.predict(run_net, images, TEST_BATCH)
    eval_s = time.perf_counter() - t0
    ctx.progress(len(labels), len(labels), "image", "test")
    report = metrics_report(labels, pred)

    entry = {
        "job": ctx.meta.get("jid"),
        "session": ctx.meta.get("session"),
        "dir": str(ctx.dir),
        "t": time.time(),
        "accuracy": report["accuracy"],
        "macro_f1": report["macro_f1"],
        "checkpoint_sha256": digest,
    }
    home = counter_home(train_dir, ctx.dir, COUNTER_NAME)  # an imported run's folder is read-only
    counter = record_evaluation(home, entry)
    count = counter["count"]
    evidence = {
        "count": count,
        "file": str(home / COUNTER_NAME),
        "jobs": [e.get("job") for e in counter["evaluations"]],
    }
    if count == 1:
        ctx.check(
            "test-evaluations",
            "test set evaluated once",
            Evidence.PASS,
            "first evaluation of the test set for %s" % train_dir.name,
            evidence=evidence,
        )
    else:
        ctx.check(
            "test-evaluations",
            "test set evaluated once",
            Evidence.FAIL,
            "the test set has now been evaluated %d times for %s; choosing settings by these numbers "
            "turns the test set into a validation set" % (count, train_dir.name),
            evidence=evidence,
            hint="freeze the configuration by validation macro-F1; report the first test result",
            severity="warning",
        )
    ctx.result(
        dict(
            report,
            **{
                "from": train_dir.name,
                "train_dir": str(train_dir),
                "best_epoch": best.get("epoch"),
                "source_run_warning": not_ok,
                "val_macro_f1": (best.get("val") or {}).get("macro_f1"),
                "test_evaluations": count,
                "eval_s": eval_s,
                "data": data_desc,
                "precision": prec_info,
                "effective_device": effective,
                "checkpoint": {"path": str(best_ckpt), "sha256": digest},
            },
        )
    )
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
