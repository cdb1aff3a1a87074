"""The source run: which weights to export (a training job's best checkpoint, a file, or a fresh net)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from jobs.common.imported_ckpt import reverify_checkpoint
from jobs.export.common import fmt, short
from jobs.export.state import ExportRun
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobFailed
from workbench.session.candidate import INIT_VALUE, INITIAL_WEIGHTS, checkpoint_subject
from workbench.system.atomic import read_json, sha256_file


class Source:
    """Where the weights come from: a training job's best checkpoint, a checkpoint file, or fresh init."""

    def __init__(
        self,
        kind: str,
        ref: Optional[str] = None,
        ckpt: Optional[Path] = None,
        best: Optional[Dict[str, Any]] = None,
        folder: Optional[Path] = None,
    ):
        self.kind = kind  # train-job | checkpoint-file | fresh-init
        self.ref = ref
        self.ckpt = ckpt
        self.best = best
        self.folder = folder

    @property
    def train_cfg(self) -> Optional[Dict[str, Any]]:
        """The training job's effective config (from best.json, else its config.json)."""
        if self.best and isinstance(self.best.get("config"), dict):
            return self.best["config"]
        if self.folder is not None and (self.folder / "config.json").is_file():
            return read_json(self.folder / "config.json")
        return None

    def describe(self) -> Dict[str, Any]:
        """JSON-able summary for events and reference.json."""
        out: Dict[str, Any] = {"kind": self.kind, "ref": self.ref, "checkpoint": str(self.ckpt) if self.ckpt else None}
        if self.best:
            val = self.best.get("val") or {}
            out.update(
                job=self.best.get("job"),
                epoch=self.best.get("epoch"),
                val={"accuracy": val.get("accuracy"), "macro_f1": val.get("macro_f1"), "samples": val.get("samples")},
            )
        return out


class SourceNet:
    """The network to export with its weights in this process's memory, and where they came from."""

    def __init__(self, source: Source, model: Dict[str, Any], net: Any, train_precision: str):
        self.source = source
        self.model = model  # {"name", "hidden"}
        self.net = net
        self.train_precision = train_precision
        self.sha256: Optional[str] = None  # of the source checkpoint file (None for a fresh net)
        self.clean = True  # False when the file changed after training or did not load whole


def resolve_source(job_dir: Path, value: Optional[str]) -> Source:
    """export.from -> Source: a job id of this session (or <session>/<job>), a folder, or a .ckpt file."""
    from jobs.common.models import resolve_job_ref

    if not value or value == INIT_VALUE:
        return Source("fresh-init", value)
    found = resolve_job_ref(job_dir, "export.from", value)
    if found.is_dir():
        folder = found
        art = found / "artifacts" if (found / "artifacts" / "best.ckpt").is_file() else found
        ckpt = art / "best.ckpt"
        if not ckpt.is_file():
            raise JobFailed(
                "export.from is %r: %s does not exist" % (value, found / "artifacts" / "best.ckpt"),
                hint="a training job writes artifacts/best.ckpt at its best epoch; did it finish an epoch?",
                type_="FileNotFoundError",
            )
        best_path = art / "best.json"
        best = read_json(best_path) if best_path.is_file() else None
        return Source("train-job" if best else "checkpoint-file", value, ckpt, best, folder)
    best_path = found.with_name("best.json")
    best = read_json(best_path) if best_path.is_file() else None
    if best and (best.get("checkpoint") or {}).get("file") != found.name:
        best = None  # a best.json that describes another file says nothing about this one
    return Source(
        "train-job" if best else "checkpoint-file",
        value,
        found,
        best,
        found.parent.parent if best and found.parent.name == "artifacts" else None,
    )


def set_subject(run: ExportRun) -> None:
    """The job's subject from export.from (the source's file hash, or initial weights); a bad reference is left
    for load_source to report."""
    try:
        src = resolve_source(run.ctx.dir, run.export["from"])
        run.ctx.subject = INITIAL_WEIGHTS if src.ckpt is None else checkpoint_subject(sha256_file(src.ckpt))
    except (JobFailed, OSError):
        pass


def load_source(run: ExportRun) -> SourceNet:
    """Resolve export.from, build the same network, load the weights in memory (or initialise)."""
    import mindspore as ms

    from jobs.common.models import build_net

    src = resolve_source(run.ctx.dir, run.export["from"])
    run.ctx.subject = INITIAL_WEIGHTS if src.ckpt is None else checkpoint_subject(sha256_file(src.ckpt))
    if src.ckpt is not None:
        reverify_checkpoint(run.ctx, Path(src.ckpt), "export.from")
    model_cfg = dict(run.cfg.model)
    if src.best and isinstance(src.best.get("model"), dict):
        model_cfg.update({k: src.best["model"][k] for k in ("name", "hidden") if k in src.best["model"]})
    elif src.train_cfg:
        model_cfg.update({k: src.train_cfg["model"][k] for k in ("name", "hidden")})
    model = {"name": model_cfg["name"], "hidden": model_cfg["hidden"]}
    precision = ((src.train_cfg or {}).get("train") or {}).get("precision") or "fp32"
    if src.kind == "fresh-init":
        seed = run.cfg.train.seed
        ms.set_seed(seed)
        loaded = SourceNet(src, model, build_net(model["name"], model["hidden"]), precision)
        run.check(
            "source",
            "export source",
            Evidence.NOT_RUN,
            "export.from=%s: exporting a freshly initialised %s (hidden %d, seed %d) — initial weights, "
            "random; these artefacts test the export path only and never count for acceptance"
            % (src.ref or "init", model["name"], model["hidden"], seed),
            evidence={"source": src.describe(), "model": model, "seed": seed},
            hint="freeze a candidate (`ms-workbench freeze`) and leave export.from unset to export trained weights",
        )
        loaded.net.set_train(False)
        return loaded
    assert src.ckpt is not None  # every source but fresh-init names a checkpoint (resolve_source)
    digest = sha256_file(src.ckpt)
    recorded = ((src.best or {}).get("checkpoint") or {}).get("sha256")
    evidence = {
        "source": src.describe(),
        "model": model,
        "sha256": digest,
        "bytes": src.ckpt.stat().st_size,
        "recorded_sha256": recorded,
    }
    clean = True
    if recorded and recorded != digest:
        run.check(
            "source",
            "export source",
            Evidence.FAIL,
            "%s has SHA-256 %s but best.json recorded %s: the file changed after training"
            % (src.ckpt, digest, recorded),
            evidence=evidence,
            hint="re-run the training job or point export.from at the right file",
        )
        clean = False
    elif src.kind == "train-job":
        assert src.best is not None  # a checkpoint is a train-job's when a best.json came with it (resolve_source)
        run.check(
            "source",
            "export source",
            Evidence.PASS,
            "best checkpoint of %s (epoch %s, val macro-F1 %s): %s, SHA-256 matches best.json"
            % (
                src.best.get("job") or src.ref,
                src.best.get("epoch"),
                fmt((src.best.get("val") or {}).get("macro_f1")),
                src.ckpt.name,
            ),
            evidence=evidence,
        )
    else:
        run.check(
            "source",
            "export source",
            Evidence.PASS,
            "checkpoint file %s (no best.json beside it: no training metrics to compare)" % src.ckpt,
            evidence=evidence,
        )
    loaded = SourceNet(src, model, build_net(model["name"], model["hidden"]), precision)
    loaded.sha256 = digest
    loaded.clean = load_in_memory(run, loaded) and clean
    return loaded


def load_in_memory(run: ExportRun, loaded: SourceNet) -> bool:
    """load_checkpoint + load_param_into_net in this process; any unloaded name is a failure (returns False)."""
    import mindspore as ms

    ckpt, model = loaded.source.ckpt, loaded.model
    try:
        params = ms.load_checkpoint(str(ckpt))
    except Exception as exc:  # MindSpore's text names the file; keep it
        text = short(exc)
        run.check(
            "source-load",
            "source checkpoint loads",
            Evidence.FAIL,
            "%s cannot be read: %s" % (ckpt, text),
            evidence={"file": str(ckpt), "error": text},
            hint="the file may be truncated or not a MindSpore checkpoint",
        )
        raise JobFailed(
            "checkpoint %s cannot be read by mindspore.load_checkpoint: %s" % (ckpt, text),
            hint="the file may be truncated or not a MindSpore checkpoint",
            type_=type(exc).__name__,
        )
    try:
        param_not_load, ckpt_not_load = ms.load_param_into_net(loaded.net, params, strict_load=True)
    except Exception as exc:  # a shape mismatch raises
        text = short(exc)
        run.check(
            "source-load",
            "source checkpoint loads",
            Evidence.FAIL,
            "%s does not fit %s: %s" % (ckpt, model, text),
            evidence={"file": str(ckpt), "error": text},
            hint="model.name and model.hidden must match the run that wrote it",
        )
        raise JobFailed(
            "checkpoint %s does not fit the network %s: %s" % (ckpt, model, text),
            hint="model.name and model.hidden must match the run that wrote it",
            type_=type(exc).__name__,
        )
    param_not_load, ckpt_not_load = list(param_not_load or []), list(ckpt_not_load or [])
    loaded.net.set_train(False)
    evidence = {
        "file": str(ckpt),
        "tensors": len(params),
        "param_not_load": param_not_load,
        "ckpt_not_load": ckpt_not_load,
        "strict_load": True,
    }
    if param_not_load or ckpt_not_load:
        run.check(
            "source-load",
            "source checkpoint loads",
            Evidence.FAIL,
            "load_param_into_net(strict_load=True) in this process: network parameters not loaded %s; "
            "checkpoint entries not used %s (MindSpore only warns; those weights stay random)"
            % (param_not_load, ckpt_not_load),
            evidence=evidence,
            hint="layer names differ between the checkpoint and build_net(%r): rename them back or "
            "export from the training job that wrote this network" % model["name"],
        )
        return False
    run.check(
        "source-load",
        "source checkpoint loads",
        Evidence.PASS,
        "all %d tensors loaded into %s in this process (param_not_load [], ckpt_not_load [])"
        % (len(params), model["name"]),
        evidence=evidence,
    )
    return True
