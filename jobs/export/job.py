"""The export job's order: device, source, reference set, checkpoint, MindIR, Lite, then the summary."""

from __future__ import annotations

import os
import time

from jobs.common import msdevice
from jobs.export.checkpoint import reload_checkpoint, write_checkpoint
from jobs.export.common import EXPORT_MODE
from jobs.export.lite import lite_checks
from jobs.export.mindir import batch_checks, export_mindir, load_mindir
from jobs.export.reference import ReferenceSet, build_reference, keep_inputs_only, write_reference
from jobs.export.source import SourceNet, load_source, set_subject
from jobs.export.state import PHASES, ExportRun
from jobs.export.summary import summary
from workbench.jobkit.context import JobContext, JobFailed


def start(run: ExportRun) -> None:
    """Import MindSpore, emit `started`, select the device first, check what MindSpore reports."""
    import mindspore as ms

    run.ctx.started(
        mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)},
        mode=EXPORT_MODE,
        source=run.export["from"],
        formats=run.formats,
        batch_sizes=run.batch_sizes,
        dynamic_batch=run.export.dynamic_batch,
        samples_per_class=run.export.samples_per_class,
    )
    msdevice.set_device(run.target, run.device_id, EXPORT_MODE)
    effective = msdevice.effective_config_check(
        run.ctx, {"target": run.target, "device_id": run.device_id, "mode": EXPORT_MODE}
    )
    if effective["mismatches"]:
        raise JobFailed(
            "MindSpore does not run where asked: %s" % "; ".join(effective["mismatches"]),
            hint=msdevice.ms_role_warning() or "check the environment that starts jobs",
            type_="DeviceError",
        )


def reference_set(run: ExportRun, loaded: SourceNet) -> ReferenceSet:
    """The reference samples and their in-memory logits; a data error names the file and the expectation."""
    try:
        return build_reference(run, loaded)
    except JobFailed:
        raise
    except Exception as exc:  # DataError and friends name the file and the expectation
        raise JobFailed(
            str(exc),
            hint="the reference samples come from the training run's validation split",
            type_=type(exc).__name__,
        )


def main(ctx: JobContext) -> str:
    """Run the export job."""
    t_start = time.perf_counter()
    run = ExportRun(ctx)
    set_subject(run)  # before the first check: every check of the job is about these weights
    start(run)
    run.phase(0, "source")
    loaded = load_source(run)
    run.phase(1, "reference")
    ref = reference_set(run, loaded)
    wants_ckpt, wants_mindir = "ckpt" in run.formats, "mindir" in run.formats
    ckpt_event = write_checkpoint(run, loaded) if wants_ckpt else None
    ckpt_sha256 = ckpt_event["sha256"] if ckpt_event else loaded.sha256
    if loaded.clean:
        write_reference(run, ref, ckpt_sha256)
    else:
        keep_inputs_only(run, ref)
    run.phase(2, "checkpoint reload")
    if ckpt_event:
        reload_checkpoint(run, loaded, ref, ctx.artifacts / "model.ckpt")
    else:
        run.not_run(
            [("ckpt-reload", "checkpoint reloads in a fresh process", {"format": "ckpt", "batch_size": None})],
            "ckpt is not in export.formats",
        )
    run.phase(3, "MindIR")
    mindir = None
    if wants_mindir and loaded.clean:
        mindir = export_mindir(run, loaded)
        if mindir is not None:
            run.phase(4, "MindIR load")
            load_mindir(run, mindir, ref)
        else:
            run.not_run(batch_checks(run.batch_sizes), "the MindIR export failed")
    else:
        why = (
            "mindir is not in export.formats"
            if not wants_mindir
            else ("the source checkpoint did not load cleanly: a MindIR of partly random weights is not exported")
        )
        run.not_run(
            [("mindir-export", "MindIR export", {"format": "mindir", "batch_size": None})]
            + batch_checks(run.batch_sizes),
            why,
        )
    run.phase(5, "MindSpore Lite")
    lite_reason = lite_checks(run, mindir, ref)
    run.timing_s["total_s"] = time.perf_counter() - t_start
    result = summary(run, loaded, ref, lite_reason)
    ctx.result(result)
    ctx.progress(PHASES, PHASES, "phase", "done")
    failed = run.failed_checks()
    if failed:
        raise JobFailed(
            "%d export check(s) failed: %s"
            % (len(failed), "; ".join("%s: %s" % (ev["id"], ev["detail"][:300]) for ev in failed)),
            hint=failed[0].get("hint"),
            type_="ExportCheckFailed",
        )
    return "ok"
