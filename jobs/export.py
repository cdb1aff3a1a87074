"""The `export` job: hand over a checkpoint and a MindIR that load in a fresh process and agree.

Course §9: a checkpoint needs the network code to rebuild it; a MindIR carries the graph but
is bound by its input signature (exporting with a [64, 1, 28, 28] example proves nothing about
[1, 1, 28, 28]); load checks run in a new process, because parameters still in memory can hide
a wrong or stale file; load_param_into_net reports what did not load and does not raise for it.

Every load runs in `jobs.export_load`, started with exec, and is compared with the outputs this
job computed in memory on the reference samples. MindSpore Lite, when it imports in the jobs
interpreter, builds the MindIR on CPU and then on the target, each in its own process.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from workbench.atomic import read_json, sha256_file, write_bytes, write_json
from workbench.compare import DEFAULT_TOLERANCES, MATCH_RULE, class_flips, diff_tensors
from workbench.jobkit import JobContext, JobFailed, run
from workbench.lite_gate import GATE_HINT, describe_gate, parse_lite_version_gate

from jobs import msdevice
from jobs.export_load import short_error

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXPORT_MODE = "graph"  # the formal execution path (course §2); the loaders use it too
FORMATS = ("ckpt", "mindir")
CONFUSED_PAIRS = 3  # most-confused (true, predicted) class pairs added to the reference samples
PREPROCESSING = "/255, float32, NCHW [N,1,28,28]"
REFERENCE_FORMAT = "ms-workbench reference v1"
TOLERANCE = DEFAULT_TOLERANCES["float32"]
# Accuracy of the exported weights on the training job's validation selection vs best.json:
# equal up to a few argmax flips from a different batch shape (fp32), looser after fp16 training.
ACCURACY_TOLERANCE = {"fp32": 0.002, "other": 0.01}
LITE_HINT = ("MindSpore Lite is a separate runtime with per-Python wheels (boards install the vendor's cp39 "
             "aarch64 wheel); PyPI's mindspore-lite has only 2.0.0 for cp37, nothing for this Python")
DEVICE_CONTEXT_NOTE = ("a loader that does not return may be starved by this job's own device context "
                       "(seen on a 310B board: a child doing device work while the parent holds the "
                       "device does not return)")


class Source:
    """Where the weights come from: a training job's best checkpoint, a checkpoint file, or fresh init."""

    def __init__(self, kind: str, ref: Optional[str] = None, ckpt: Optional[Path] = None,
                 best: Optional[Dict[str, Any]] = None, folder: Optional[Path] = None):
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
        out: Dict[str, Any] = {"kind": self.kind, "ref": self.ref,
                               "checkpoint": str(self.ckpt) if self.ckpt else None}
        if self.best:
            val = self.best.get("val") or {}
            out.update(job=self.best.get("job"), epoch=self.best.get("epoch"),
                       val={"accuracy": val.get("accuracy"), "macro_f1": val.get("macro_f1"),
                            "samples": val.get("samples")})
        return out


def resolve_source(job_dir: Path, value: Optional[str]) -> Source:
    """export.from -> Source: a job id of this session (or <session>/<job>), a folder, or a .ckpt file."""
    from jobs.models import resolve_job_ref

    if not value:
        return Source("fresh-init")
    found = resolve_job_ref(job_dir, "export.from", value)
    if found.is_dir():
        folder = found
        art = found / "artifacts" if (found / "artifacts" / "best.ckpt").is_file() else found
        ckpt = art / "best.ckpt"
        if not ckpt.is_file():
            raise JobFailed("export.from is %r: %s does not exist" % (value, found / "artifacts" / "best.ckpt"),
                            hint="a training job writes artifacts/best.ckpt at its best epoch; did it finish "
                                 "an epoch?", type_="FileNotFoundError")
        best_path = art / "best.json"
        best = read_json(best_path) if best_path.is_file() else None
        return Source("train-job" if best else "checkpoint-file", value, ckpt, best, folder)
    best_path = found.with_name("best.json")
    best = read_json(best_path) if best_path.is_file() else None
    if best and (best.get("checkpoint") or {}).get("file") != found.name:
        best = None  # a best.json that describes another file says nothing about this one
    return Source("train-job" if best else "checkpoint-file", value, found, best,
                  found.parent.parent if best and found.parent.name == "artifacts" else None)


def find_confusion(best: Optional[Dict[str, Any]]) -> Optional[List[List[int]]]:
    """The validation confusion matrix (rows = true) recorded in best.json, if any."""
    if not best:
        return None
    for holder in (best.get("val"), (best.get("metrics") or {}).get("val"), best.get("metrics")):
        if isinstance(holder, dict) and isinstance(holder.get("confusion"), list):
            return holder["confusion"]
    return None


def choose_samples(labels: np.ndarray, pred: Optional[np.ndarray], per_class: int,
                   pairs: Sequence[Tuple[int, int, int]], n_classes: int = 10
                   ) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Fixed reference samples: the first `per_class` of every class (pool order), then for each
    confused pair (true, pred, count) the first other sample of class `true` predicted `pred`.

    Returns (samples with pool position and role, one record per pair saying which sample or none).
    """
    labels = np.asarray(labels)
    chosen: List[Dict[str, Any]] = []
    used = set()
    for cls in range(n_classes):
        for pos in np.flatnonzero(labels == cls)[:per_class]:
            chosen.append({"pos": int(pos), "role": "class", "label": cls})
            used.add(int(pos))
    records = []
    for true_cls, pred_cls, count in pairs:
        record = {"true": int(true_cls), "pred": int(pred_cls), "count": int(count), "row": None}
        if pred is not None:
            hits = [int(p) for p in np.flatnonzero((labels == true_cls) & (np.asarray(pred) == pred_cls))
                    if int(p) not in used]
            if hits:
                record["row"] = len(chosen)
                chosen.append({"pos": hits[0], "role": "confused", "label": int(true_cls),
                               "pair": [int(true_cls), int(pred_cls)]})
                used.add(hits[0])
        records.append(record)
    return chosen, records


def npy_bytes(array: np.ndarray) -> bytes:
    """An array as .npy file bytes (no pickle)."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


class Exporter:
    """One export run: source, in-memory outputs, artefacts, fresh-process loads, summary."""

    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.cfg = ctx.cfg
        self.x = ctx.cfg["export"]
        self.target = str(ctx.device["resolved"])
        self.device_id = int(ctx.device["id"])
        self.checks: List[Dict[str, Any]] = []
        self.artifacts: List[Dict[str, Any]] = []
        self.loaders: Dict[str, Dict[str, Any]] = {}
        self.timing_s: Dict[str, float] = {}
        self.loads = ctx.dir / "loads"
        self.ref_dir = ctx.artifacts / "reference"
        self.inputs: Optional[np.ndarray] = None
        self.logits: Optional[np.ndarray] = None
        self.inputs_path: Optional[Path] = None
        self.reference: Dict[str, Any] = {}
        self.reference_written = False
        self.ckpt_sha256: Optional[str] = None
        self.source_clean = True
        self.mindir_signature: Optional[List[int]] = None
        self.mindir_info: Dict[str, Any] = {}
        self.lite_reason: Optional[str] = None
        self.formats, self.batch_sizes = self.validate_config()

    # ----- helpers ---------------------------------------------------------------------

    def validate_config(self) -> Tuple[List[str], List[int]]:
        """export.formats and export.batch_sizes checked here (the schema only knows their types)."""
        formats = list(self.x["formats"])
        unknown = [f for f in formats if f not in FORMATS]
        if unknown:
            raise JobFailed("export.formats is %r: unknown %s; expected a list of %s" % (
                formats, unknown, ", ".join(FORMATS)), type_="ConfigError")
        sizes: List[int] = []
        for size in self.x["batch_sizes"]:
            if int(size) < 1:
                raise JobFailed("export.batch_sizes is %r: %r is not a batch size (>= 1)" % (
                    self.x["batch_sizes"], size), type_="ConfigError")
            if int(size) not in sizes:
                sizes.append(int(size))
        if not sizes and "mindir" in formats:
            raise JobFailed("export.batch_sizes is empty; the first size is the MindIR signature",
                            hint="for example [64, 1, 32]", type_="ConfigError")
        return formats, sizes

    def check(self, id_: str, title: str, status: str, detail: str, evidence: Optional[Dict[str, Any]] = None,
              hint: Optional[str] = None, **extra: Any) -> Dict[str, Any]:
        """Emit a check and keep it for the summary."""
        ev = self.ctx.check(id_, title, status, detail, evidence=evidence or {}, hint=hint, **extra)
        self.checks.append(ev)
        return ev

    def artifact(self, path: Path, kind: str, **extra: Any) -> Dict[str, Any]:
        """Emit an artifact event (bytes and SHA-256 of the written file) and keep it for the summary."""
        ev = self.ctx.artifact(path, kind, **extra)
        self.artifacts.append({k: ev[k] for k in ("kind", "path", "bytes", "sha256")})
        return ev

    def phase(self, done: int, name: str) -> None:
        """Progress between phases (also keeps the stall watchdog fed)."""
        self.ctx.raise_if_cancelled()
        self.ctx.progress(done, 6, "phase", name)

    def run_loader(self, name: str, what: str, args: List[str]) -> Dict[str, Any]:
        """Run jobs.export_load in a new process (exec); return its report plus how the process ended."""
        self.loads.mkdir(exist_ok=True)
        report_path = self.loads / ("%s.json" % name)
        argv = [sys.executable, "-m", "jobs.export_load", what, "--out", str(report_path),
                "--target", self.target, "--device-id", str(self.device_id), "--ms-mode", EXPORT_MODE] + args
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
        timeout_s = float(self.cfg["limits"]["probe_timeout_s"])
        t0 = time.perf_counter()
        outcome: Dict[str, Any] = {"argv": argv, "timeout_s": timeout_s, "timed_out": False}
        with open(str(self.loads / ("%s.stdout.log" % name)), "wb") as out, \
                open(str(self.loads / ("%s.stderr.log" % name)), "wb") as err:
            try:
                proc = subprocess.run(argv, cwd=str(self.loads), env=env, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=err, timeout=timeout_s)
                outcome["returncode"] = proc.returncode
            except subprocess.TimeoutExpired:
                outcome.update(timed_out=True, returncode=None)
        outcome["wall_s"] = time.perf_counter() - t0
        try:
            report = read_json(report_path)
        except (OSError, ValueError):
            report = None
        outcome["report"] = report
        outcome["report_path"] = os.path.relpath(str(report_path), str(self.ctx.dir))
        outcome["stderr_tail"] = self.tail(self.loads / ("%s.stderr.log" % name))
        pid = (report or {}).get("pid")
        outcome["pids"] = {"job": os.getpid(), "loader": pid, "loader_parent": (report or {}).get("ppid")}
        self.loaders[name] = {"pid": pid, "returncode": outcome.get("returncode"), "wall_s": outcome["wall_s"],
                              "timed_out": outcome["timed_out"], "report": outcome["report_path"]}
        self.loader_device_check(name, report)
        return outcome

    def loader_device_check(self, name: str, report: Optional[Dict[str, Any]]) -> None:
        """`effective-config.<loader>`: what MindSpore in the fresh process reports (target, id, mode)."""
        device = (report or {}).get("device") or {}
        eff = device.get("effective")
        if not eff:
            return  # the loader never set a MindSpore device (Lite, or it failed before): its own check says so
        want = {"target": self.target, "device_id": self.device_id, "mode": EXPORT_MODE}
        wrong = ["%s: asked %s, MindSpore reports %s" % (k, v, eff.get(k)) for k, v in want.items()
                 if str(eff.get(k)) != str(v)]
        evidence = {"requested": want, "observed": eff, "pid": (report or {}).get("pid"), "set_with": device.get("set_with")}
        if wrong:
            self.check("effective-config." + name, "effective config (%s loader)" % name, "observed-fail",
                       "; ".join(wrong), evidence, hint="the load did not run where asked: its outputs prove nothing")
        else:
            self.check("effective-config." + name, "effective config (%s loader)" % name, "observed-pass",
                       "MindSpore in loader pid %s reports %s:%s, %s mode" % (
                           evidence["pid"], eff.get("target"), eff.get("device_id"), eff.get("mode")), evidence)

    @staticmethod
    def tail(path: Path, max_bytes: int = 8192) -> str:
        """The end of a log file as text."""
        try:
            with open(str(path), "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - max_bytes))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    @staticmethod
    def not_fresh(outcome: Dict[str, Any], what: str) -> Optional[str]:
        """Why a load did not happen in a new child process of this job (None when it did)."""
        pids = outcome["pids"]
        if outcome["report"] is None or (pids["loader"] != pids["job"] and pids["loader_parent"] == pids["job"]):
            return None
        return "%s ran in process %s (parent %s), not in a new child of this job (%s): the check proves nothing" % (
            what, pids["loader"], pids["loader_parent"], pids["job"])

    def loader_problem(self, outcome: Dict[str, Any], what: str) -> Optional[Tuple[str, str, Optional[str]]]:
        """(status, detail, hint) when the loader process itself did not run to the end, else None."""
        report, pids = outcome["report"], outcome["pids"]
        if outcome["timed_out"]:
            return ("blocked", "%s did not return within %.0f s (limits.probe_timeout_s); killed" % (
                what, outcome["timeout_s"]), DEVICE_CONTEXT_NOTE)
        if report is None:
            return ("observed-fail", "%s ended with return code %s and wrote no report; stderr: %s" % (
                what, outcome.get("returncode"), outcome["stderr_tail"][-400:].strip()), None)
        if not report.get("done"):
            code = outcome.get("returncode")
            how = ("killed by signal %d" % -code) if isinstance(code, int) and code < 0 else "return code %s" % code
            return ("observed-fail", "%s stopped before finishing (%s); steps done: %d" % (
                what, how, len(report.get("steps") or [])), None)
        return None

    # ----- phases ----------------------------------------------------------------------

    def start(self) -> None:
        """Import MindSpore, emit `started`, select the device first, check what MindSpore reports."""
        import mindspore as ms

        self.ms = ms
        self.ctx.started(mindspore={"version": ms.__version__, "path": os.path.dirname(ms.__file__)},
                         mode=EXPORT_MODE, source=self.x["from"], formats=self.formats,
                         batch_sizes=self.batch_sizes, dynamic_batch=bool(self.x["dynamic_batch"]),
                         samples_per_class=int(self.x["samples_per_class"]))
        how = msdevice.set_device(self.target, self.device_id, EXPORT_MODE)
        effective = msdevice.effective_config_check(
            self.ctx, {"target": self.target, "device_id": self.device_id, "mode": EXPORT_MODE})
        self.effective = dict(effective["observed"], set_with=how)
        if effective["mismatches"]:
            raise JobFailed("MindSpore does not run where asked: %s" % "; ".join(effective["mismatches"]),
                            hint=msdevice.ms_role_warning() or "check the environment that starts jobs",
                            type_="DeviceError")

    def load_source(self) -> None:
        """Resolve export.from, build the same network, load the weights in memory (or initialise)."""
        from jobs.models import build_net

        src = self.source = resolve_source(self.ctx.dir, self.x["from"])
        model_cfg = dict(self.cfg["model"])
        if src.best and isinstance(src.best.get("model"), dict):
            model_cfg.update({k: src.best["model"][k] for k in ("name", "hidden") if k in src.best["model"]})
        elif src.train_cfg:
            model_cfg.update({k: src.train_cfg["model"][k] for k in ("name", "hidden")})
        self.model = {"name": str(model_cfg["name"]), "hidden": int(model_cfg["hidden"])}
        train_cfg = src.train_cfg or {}
        self.train_precision = str(((train_cfg.get("train") or {}).get("precision")) or "fp32")
        if src.kind == "fresh-init":
            seed = int(self.cfg["train"]["seed"])
            self.ms.set_seed(seed)
            self.net = build_net(self.model["name"], self.model["hidden"])
            self.check("source", "export source", "not-run",
                       "no training job given (export.from is null): exporting a freshly initialised %s "
                       "(hidden %d, seed %d) — random weights; these artefacts test the export path only" % (
                           self.model["name"], self.model["hidden"], seed),
                       evidence={"source": src.describe(), "model": self.model, "seed": seed},
                       hint="set export.from to a training job id (e.g. train-001) to export trained weights")
            self.net.set_train(False)
            return
        digest = sha256_file(src.ckpt)
        self.source_sha256 = digest
        recorded = ((src.best or {}).get("checkpoint") or {}).get("sha256")
        evidence = {"source": src.describe(), "model": self.model, "sha256": digest, "bytes": src.ckpt.stat().st_size,
                    "recorded_sha256": recorded}
        if recorded and recorded != digest:
            self.check("source", "export source", "observed-fail",
                       "%s has SHA-256 %s but best.json recorded %s: the file changed after training" % (
                           src.ckpt, digest, recorded), evidence=evidence,
                       hint="re-run the training job or point export.from at the right file")
            self.source_clean = False
        elif src.kind == "train-job":
            self.check("source", "export source", "observed-pass",
                       "best checkpoint of %s (epoch %s, val macro-F1 %s): %s, SHA-256 matches best.json" % (
                           src.best.get("job") or src.ref, src.best.get("epoch"),
                           _fmt((src.best.get("val") or {}).get("macro_f1")), src.ckpt.name),
                       evidence=evidence)
        else:
            self.check("source", "export source", "observed-pass",
                       "checkpoint file %s (no best.json beside it: no training metrics to compare)" % src.ckpt,
                       evidence=evidence)
        self.net = build_net(self.model["name"], self.model["hidden"])
        self.load_in_memory(src.ckpt)

    def load_in_memory(self, ckpt: Path) -> None:
        """load_checkpoint + load_param_into_net in this process; any unloaded name is a failure."""
        ms = self.ms
        try:
            params = ms.load_checkpoint(str(ckpt))
        except Exception as exc:  # MindSpore's text names the file; keep it
            text = _short(exc)
            self.check("source-load", "source checkpoint loads", "observed-fail",
                       "%s cannot be read: %s" % (ckpt, text), evidence={"file": str(ckpt), "error": text},
                       hint="the file may be truncated or not a MindSpore checkpoint")
            raise JobFailed("checkpoint %s cannot be read by mindspore.load_checkpoint: %s" % (ckpt, text),
                            hint="the file may be truncated or not a MindSpore checkpoint", type_=type(exc).__name__)
        try:
            param_not_load, ckpt_not_load = ms.load_param_into_net(self.net, params, strict_load=True)
        except Exception as exc:  # a shape mismatch raises
            text = _short(exc)
            self.check("source-load", "source checkpoint loads", "observed-fail",
                       "%s does not fit %s: %s" % (ckpt, self.model, text), evidence={"file": str(ckpt), "error": text},
                       hint="model.name and model.hidden must match the run that wrote it")
            raise JobFailed("checkpoint %s does not fit the network %s: %s" % (ckpt, self.model, text),
                            hint="model.name and model.hidden must match the run that wrote it",
                            type_=type(exc).__name__)
        param_not_load, ckpt_not_load = list(param_not_load or []), list(ckpt_not_load or [])
        self.net.set_train(False)
        evidence = {"file": str(ckpt), "tensors": len(params), "param_not_load": param_not_load,
                    "ckpt_not_load": ckpt_not_load, "strict_load": True}
        if param_not_load or ckpt_not_load:
            self.source_clean = False
            self.unloaded = {"param_not_load": param_not_load, "ckpt_not_load": ckpt_not_load}
            self.check("source-load", "source checkpoint loads", "observed-fail",
                       "load_param_into_net(strict_load=True) in this process: network parameters not loaded %s; "
                       "checkpoint entries not used %s (MindSpore only warns; those weights stay random)" % (
                           param_not_load, ckpt_not_load), evidence=evidence,
                       hint="layer names differ between the checkpoint and build_net(%r): rename them back or "
                            "export from the training job that wrote this network" % self.model["name"])
        else:
            self.check("source-load", "source checkpoint loads", "observed-pass",
                       "all %d tensors loaded into %s in this process (param_not_load [], ckpt_not_load [])" % (
                           len(params), self.model["name"]), evidence=evidence)

    def reference_pool(self) -> Dict[str, Any]:
        """The validation split the reference samples come from (the training job's, verified)."""
        from jobs import datafeed
        from jobs.models import read_job_config, resolve_job_ref
        from workbench.data import load_split, stratified_split
        from workbench.data.split import index_sha256

        src = self.source
        cfg = src.train_cfg or self.cfg
        base_dir = src.folder or self.ctx.dir
        data_from = cfg["data"].get("from")
        if data_from:
            ref = resolve_job_ref(base_dir, "data.from", data_from)
            record = datafeed.find_split_record(ref)
            if record is None:
                raise JobFailed("data.from of the training run is %r: %s holds no split.json" % (data_from, ref),
                                type_="DataError")
            settings = datafeed.data_settings(cfg, read_job_config(ref) if ref.is_dir() else None)
            split = load_split(record)
            if split.meta.get("synthetic"):
                settings["source"] = "synthetic"
            data = datafeed.load_source(settings)
            val_idx, seed, fraction = split.val_idx, split.seed, split.val_fraction
            how = "split %s (index hashes verified)" % record
        else:
            settings = dict(cfg["data"])
            data = datafeed.load_source(settings)
            seed, fraction = int(settings["split_seed"]), float(settings["val_fraction"])
            _, val_idx = stratified_split(data.train_labels, fraction, seed)
            how = "stratified split with split_seed=%d, val_fraction=%s (the training run's rule)" % (seed, fraction)
        val_sha = index_sha256(val_idx)
        recorded = ((src.best or {}).get("data") or {}).get("val_idx_sha256")
        if recorded and recorded != val_sha:
            raise JobFailed("the validation split made here (SHA-256 %s) is not the training run's (%s in best.json)"
                            % (val_sha, recorded), hint="use the same data.dir / data.from as the training run",
                            type_="DataError")
        val_limit = int(((cfg.get("train") or {}).get("val_limit")) or 0)
        return {"images": data.train_images[val_idx], "labels": data.train_labels[val_idx].astype(np.int64),
                "indices": val_idx, "val_limit": val_limit, "how": how,
                "data": {"source": "synthetic" if data.synthetic else "official", "split": "validation",
                         "split_seed": seed, "val_fraction": fraction, "val_idx_sha256": val_sha,
                         "n_val": int(val_idx.size), "val_idx_verified_against_best_json": bool(recorded),
                         "source_files": [{"name": f["name"], "sha256": f["sha256"]} for f in data.files]}}

    def build_reference(self) -> None:
        """Pick the fixed samples, compute their logits in memory, write the reference package."""
        from mindspore import Tensor

        from jobs.models import predict
        from workbench.data import CLASS_NAMES, scale
        from workbench.metrics import classification_report, confusion_matrix, most_confused_pairs

        pool = self.reference_pool()
        t0 = time.perf_counter()
        pred = predict(self.net, scale(pool["images"]), 1000) if self.source.kind != "fresh-init" else None
        self.timing_s["predict_val_s"] = time.perf_counter() - t0
        if pred is not None:
            self.metrics_check(pool, pred, confusion_matrix, classification_report)
        confusion = find_confusion(self.source.best)
        pairs = most_confused_pairs(confusion, CONFUSED_PAIRS) if confusion is not None else []
        chosen, pair_records = choose_samples(pool["labels"], pred, int(self.x["samples_per_class"]), pairs,
                                              len(CLASS_NAMES))
        positions = np.array([c["pos"] for c in chosen], dtype=np.int64)
        self.inputs = scale(pool["images"][positions])
        t0 = time.perf_counter()
        self.logits = self.net(Tensor(self.inputs)).asnumpy().astype(np.float32)
        self.timing_s["reference_forward_s"] = time.perf_counter() - t0
        predicted = self.logits.argmax(axis=1)
        samples = []
        for row, c in enumerate(chosen):
            entry = {"row": row, "index": int(pool["indices"][c["pos"]]), "label": int(c["label"]),
                     "class": CLASS_NAMES[int(c["label"])], "predicted": int(predicted[row]), "role": c["role"]}
            if "pair" in c:
                entry["pair"] = c["pair"]
            samples.append(entry)
        covered = sorted({s["label"] for s in samples})
        self.reference = {
            "format": REFERENCE_FORMAT,
            "created_by": {"job": self.ctx.meta.get("jid"), "session": self.ctx.meta.get("session")},
            "source": self.source.describe(),
            "model": self.model,
            "preprocessing": PREPROCESSING,
            "class_names": list(CLASS_NAMES),
            "tolerance": {"atol": TOLERANCE.atol, "rtol": TOLERANCE.rtol, "rule": MATCH_RULE, "dtype": "float32"},
            "inputs": {"file": "inputs.npy", "dtype": "float32", "shape": list(self.inputs.shape)},
            "logits": {"file": "logits.npy", "dtype": "float32", "shape": list(self.logits.shape),
                       "computed_by": "the export job in memory: %s, %s mode, set_train(False), one batch of %d" % (
                           self.target, EXPORT_MODE, len(samples))},
            "samples_per_class": int(self.x["samples_per_class"]),
            "classes_covered": covered,
            "confused_pairs": [dict(r, true_class=CLASS_NAMES[r["true"]], pred_class=CLASS_NAMES[r["pred"]])
                               for r in pair_records],
            "confused_pairs_from": "best.json val.confusion" if confusion is not None else None,
            "samples": samples,
            "data": pool["data"],
            "mindspore": self.ms.__version__,
            "device": {"target": self.target, "id": self.device_id},
        }
        self.pair_records = pair_records

    def metrics_check(self, pool: Dict[str, Any], pred: np.ndarray, confusion_matrix, classification_report) -> None:
        """The loaded weights score what best.json says on the training run's validation selection."""
        best_val = (self.source.best or {}).get("val") or {}
        limit = pool["val_limit"]
        labels = pool["labels"][:limit] if limit else pool["labels"]
        ours = pred[:limit] if limit else pred
        report = classification_report(confusion_matrix(labels, ours, 10))
        accuracy = float(np.mean(labels == ours)) if labels.size else None
        tol = ACCURACY_TOLERANCE["fp32" if self.train_precision == "fp32" else "other"]
        evidence = {"accuracy": accuracy, "macro_f1": report.get("macro_f1"), "samples": int(labels.size),
                    "recorded": {k: best_val.get(k) for k in ("accuracy", "macro_f1", "samples")},
                    "tolerance": tol, "train_precision": self.train_precision}
        if best_val.get("accuracy") is None:
            self.check("source-metrics", "weights score as recorded", "not-run",
                       "no validation metrics beside the checkpoint to compare with", evidence=evidence)
            return
        if best_val.get("samples") not in (None, int(labels.size)):
            self.check("source-metrics", "weights score as recorded", "observed-fail",
                       "validation selection differs: %d samples here, %s in best.json" % (
                           labels.size, best_val.get("samples")), evidence=evidence)
            return
        delta = abs(accuracy - float(best_val["accuracy"]))
        status = "observed-pass" if delta <= tol else "observed-fail"
        self.check("source-metrics", "weights score as recorded", status,
                   "val accuracy %.4f here vs %.4f in best.json (|Δ| %.4f, tolerance %.3f), macro-F1 %.4f vs %s, "
                   "%d samples" % (accuracy, float(best_val["accuracy"]), delta, tol, report.get("macro_f1"),
                                   _fmt(best_val.get("macro_f1")), labels.size), evidence=evidence,
                   hint=None if status == "observed-pass" else "the checkpoint is not the one that scored these "
                                                                 "metrics: stale or replaced file?")

    def write_reference(self) -> None:
        """inputs.npy, logits.npy, reference.json (each atomic), one artifact event each."""
        self.ref_dir.mkdir(parents=True, exist_ok=True)
        inputs_path = write_bytes(self.ref_dir / "inputs.npy", npy_bytes(self.inputs))
        logits_path = write_bytes(self.ref_dir / "logits.npy", npy_bytes(self.logits))
        self.reference["inputs"]["sha256"] = sha256_file(inputs_path)
        self.reference["logits"]["sha256"] = sha256_file(logits_path)
        self.reference["checkpoint_sha256"] = self.ckpt_sha256
        json_path = write_json(self.ref_dir / "reference.json", self.reference)
        n = len(self.reference["samples"])
        self.artifact(inputs_path, "reference-inputs", shape=list(self.inputs.shape), dtype="float32")
        self.artifact(logits_path, "reference-logits", shape=list(self.logits.shape), dtype="float32")
        self.artifact(json_path, "reference-json", samples=n)
        self.inputs_path = inputs_path
        self.reference_written = True
        covered = self.reference["classes_covered"]
        pairs_found = sum(1 for r in self.pair_records if r["row"] is not None)
        status = "observed-pass" if len(covered) == 10 else "observed-fail"
        self.check("reference", "reference package", status,
                   "%d samples covering %d/10 classes (%d per class) + %d of %d most-confused pairs; tolerance "
                   "atol %g rtol %g; preprocessing %s" % (
                       n, len(covered), self.reference["samples_per_class"], pairs_found, len(self.pair_records),
                       TOLERANCE.atol, TOLERANCE.rtol, PREPROCESSING),
                   evidence={"samples": n, "classes_covered": covered, "pairs": self.reference["confused_pairs"],
                             "files": ["artifacts/reference/inputs.npy", "artifacts/reference/logits.npy",
                                       "artifacts/reference/reference.json"]},
                   hint=None if status == "observed-pass" else "the validation pool lacks some classes")

    def write_checkpoint(self) -> Optional[Path]:
        """Copy the source checkpoint (or save the fresh net) into artifacts/model.ckpt."""
        dst = self.ctx.artifacts / "model.ckpt"
        if self.source.kind == "fresh-init":
            tmp = dst.with_name(".model.%d.tmp.ckpt" % os.getpid())
            try:
                self.ms.save_checkpoint(self.net, str(tmp))
                os.replace(str(tmp), str(dst))
            finally:
                if tmp.exists():
                    os.unlink(str(tmp))
            how = {"saved_from": "freshly initialised network (mindspore.save_checkpoint)"}
        else:
            with open(str(self.source.ckpt), "rb") as fh:
                write_bytes(dst, fh.read())
            how = {"copied_from": str(self.source.ckpt), "source_sha256": self.source_sha256}
        ev = self.artifact(dst, "checkpoint", model=self.model, **how)
        if self.source.kind != "fresh-init" and ev["sha256"] != self.source_sha256:
            raise JobFailed("the copy %s has SHA-256 %s, the source %s has %s" % (
                dst, ev["sha256"], self.source.ckpt, self.source_sha256), type_="CopyError")
        self.ckpt_sha256 = ev["sha256"]
        self.ckpt_path = dst
        return dst

    def reload_checkpoint(self) -> None:
        """Rebuild the network in a new process, load the copy, compare its outputs with ours."""
        title = "checkpoint reloads in a fresh process"
        outcome = self.run_loader("ckpt", "ckpt", [
            "--ckpt", str(self.ckpt_path), "--model", self.model["name"], "--hidden", str(self.model["hidden"]),
            "--inputs", str(self.inputs_path)])
        n = int(self.inputs.shape[0])
        base = {"format": "ckpt", "batch_size": n}
        evidence: Dict[str, Any] = {"pids": outcome["pids"], "report": outcome["report_path"],
                                    "wall_s": outcome["wall_s"], "file": "artifacts/model.ckpt"}
        stale = self.not_fresh(outcome, "the checkpoint loader")
        if stale is not None:
            self.check("ckpt-reload", title, "observed-fail", stale, evidence, max_abs=None, **base)
            return
        problem = self.loader_problem(outcome, "the checkpoint loader")
        report = outcome["report"] or {}
        steps = {s.get("step"): s for s in report.get("steps") or []}
        lists = steps.get("load_param_into_net") or {}
        evidence.update(param_not_load=lists.get("param_not_load"), ckpt_not_load=lists.get("ckpt_not_load"))
        forward = steps.get("forward") or {}
        diff = None
        if forward.get("ok"):
            cand = np.load(str(self.loads / forward["outputs"]), allow_pickle=False)
            diff = diff_tensors("checkpoint reload logits", self.logits, cand, TOLERANCE.atol, TOLERANCE.rtol)
            evidence.update(diff=diff, class_flips=class_flips(self.logits, cand)["count"])
        max_abs = diff["max_abs"] if diff else None
        where = "in process %s (this job: %s)" % (outcome["pids"]["loader"], outcome["pids"]["job"])
        if problem is not None and not report.get("error"):
            self.check("ckpt-reload", title, problem[0], problem[1], evidence, hint=problem[2], max_abs=max_abs, **base)
            return
        if report.get("error"):
            self.check("ckpt-reload", title, "observed-fail", "%s %s" % (report["error"]["message"], where),
                       evidence, hint=report["error"].get("hint"), max_abs=max_abs, **base)
            return
        if lists.get("param_not_load") or lists.get("ckpt_not_load"):
            self.check("ckpt-reload", title, "observed-fail",
                       "load_param_into_net %s: network parameters not loaded %s; checkpoint entries not used %s; "
                       "logits max |diff| %s vs this job's outputs" % (
                           where, lists.get("param_not_load"), lists.get("ckpt_not_load"), _fmt(max_abs, "%.3g")),
                       evidence, hint="layer names in the file do not match build_net(%r)" % self.model["name"],
                       max_abs=max_abs, **base)
            return
        status = "observed-pass" if diff and diff["passed"] else "observed-fail"
        self.check("ckpt-reload", title, status,
                   "%s: %d tensors loaded, param_not_load [], ckpt_not_load [], set_train(False); logits of %d "
                   "samples max |diff| %s vs this job's in-memory outputs (atol %g, rtol %g)" % (
                       where, len((steps.get("load_checkpoint") or {}).get("tensors") or []), n,
                       _fmt(max_abs, "%.3g"), TOLERANCE.atol, TOLERANCE.rtol),
                   evidence, hint=None if status == "observed-pass" else (diff or {}).get("reason"),
                   max_abs=max_abs, **base)

    def export_mindir(self) -> Optional[Path]:
        """mindspore.export with the configured signature; the artefact records it."""
        from mindspore import Tensor

        ms = self.ms
        dynamic = bool(self.x["dynamic_batch"])
        signature = [-1 if dynamic else self.batch_sizes[0], 1, 28, 28]
        title = "MindIR export"
        base = {"format": "mindir", "batch_size": None}
        try:
            if dynamic:
                # A None dimension marks the batch as dynamic (feature-detected: older builds reject it).
                example = Tensor(shape=[None, 1, 28, 28], dtype=ms.float32)
            else:
                example = Tensor(np.zeros(signature, dtype=np.float32))
        except Exception as exc:
            self.check("mindir-export", title, "observed-fail",
                       "export.dynamic_batch is true but this MindSpore %s rejects a None batch dimension: %s" % (
                           ms.__version__, _short(exc)), {"signature": signature}, **base)
            return None
        dst = self.ctx.artifacts / "model.mindir"
        stem = self.ctx.artifacts / (".model.%d.tmp" % os.getpid())
        t0 = time.perf_counter()
        try:
            ms.export(self.net, example, file_name=str(stem), file_format="MINDIR")
            written = Path(str(stem) + ".mindir")
            os.replace(str(written), str(dst))
        except Exception as exc:
            self.check("mindir-export", title, "observed-fail", "mindspore.export failed: %s" % _short(exc),
                       {"signature": signature}, **base)
            return None
        finally:
            leftover = Path(str(stem) + ".mindir")
            if leftover.exists():
                os.unlink(str(leftover))
        export_s = time.perf_counter() - t0
        self.timing_s["mindir_export_s"] = export_s
        info = mindir_info(dst)
        ev = self.artifact(dst, "mindir", signature=signature, dynamic_batch=dynamic, export_s=export_s, **info)
        self.mindir_signature = signature
        self.mindir_info = info
        self.check("mindir-export", title, "observed-pass",
                   "wrote %d bytes in %.2f s; input signature %s (%s batch)%s" % (
                       ev["bytes"], export_s, signature, "dynamic" if dynamic else "fixed",
                       "; MindIR version %s" % info["mind_ir_version"] if info.get("mind_ir_version") is not None else ""),
                   {"signature": signature, "mindir": info, "sha256": ev["sha256"]}, **base)
        return dst

    def load_mindir(self, path: Path) -> None:
        """ms.load + nn.GraphCell in a new process; one check per configured batch size."""
        outcome = self.run_loader("mindir", "mindir", [
            "--mindir", str(path), "--inputs", str(self.inputs_path),
            "--batch-sizes", ",".join(str(b) for b in self.batch_sizes)])
        report = outcome["report"] or {}
        steps = report.get("steps") or []
        where = "in process %s (this job: %s)" % (outcome["pids"]["loader"], outcome["pids"]["job"])
        evidence = {"pids": outcome["pids"], "report": outcome["report_path"], "wall_s": outcome["wall_s"],
                    "file": "artifacts/model.mindir"}
        stale = self.not_fresh(outcome, "the MindIR loader")
        if stale is not None:
            self.check("mindir-load", "MindIR loads in a fresh process", "observed-fail", stale, evidence,
                       format="mindir", batch_size=None)
            self.not_run([("mindir-b%d" % b, "MindIR runs batch %d" % b, {"format": "mindir", "batch_size": b})
                          for b in self.batch_sizes], "the MindIR load did not happen in a fresh process")
            return
        problem = self.loader_problem(outcome, "the MindIR loader")
        load = next((s for s in steps if s.get("step") == "load"), None)
        if load is None or not load.get("ok"):
            if report.get("error"):
                status, detail, hint = "observed-fail", "%s %s" % (report["error"]["message"], where), None
            else:
                status, detail, hint = problem or ("observed-fail", "the MindIR loader recorded no load step", None)
            self.check("mindir-load", "MindIR loads in a fresh process", status, detail, evidence, hint=hint,
                       format="mindir", batch_size=None)
            for size in self.batch_sizes:
                self.check("mindir-b%d" % size, "MindIR runs batch %d" % size, "not-run",
                           "the MindIR did not load", {"batch_size": size}, format="mindir", batch_size=size)
            return
        self.check("mindir-load", "MindIR loads in a fresh process", "observed-pass",
                   "mindspore.load + nn.GraphCell %s in %.2f s" % (where, load.get("s") or 0.0), evidence,
                   format="mindir", batch_size=None)
        runs = {s.get("batch_size"): s for s in steps if s.get("step") == "run"}
        signature_batch = self.mindir_signature[0]
        for size in self.batch_sizes:
            self.check_batch(size, runs.get(size), signature_batch, problem, outcome)

    def check_batch(self, size: int, run_step: Optional[Dict[str, Any]], signature_batch: int,
                    problem: Optional[Tuple[str, str, Optional[str]]], outcome: Dict[str, Any]) -> None:
        """One batch size of the MindIR: observed-pass with the diff, or what MindSpore did."""
        id_, title = "mindir-b%d" % size, "MindIR runs batch %d" % size
        if signature_batch == -1:
            relation = "dynamic batch signature"
        elif size == signature_batch:
            relation = "the exported signature"
        else:
            relation = "exported signature is batch %d" % signature_batch
        evidence: Dict[str, Any] = {"batch_size": size, "signature": self.mindir_signature, "relation": relation,
                                    "pids": outcome["pids"], "report": outcome["report_path"]}
        base = {"format": "mindir", "batch_size": size}
        if run_step is None:
            status, detail, hint = problem or ("observed-fail", "the loader has no result for this size", None)
            self.check(id_, title, status, "batch %d (%s): %s" % (size, relation, detail), evidence, hint=hint,
                       max_abs=None, **base)
            return
        evidence.update({k: run_step.get(k) for k in ("calls", "calls_done", "first_call_s", "total_s")})
        if not run_step.get("ok"):
            self.check(id_, title, "observed-fail", "batch %d (%s): MindSpore raised %s" % (
                size, relation, run_step.get("error")), evidence, max_abs=None,
                hint="a fixed-signature MindIR is only proven for its own batch; export with "
                     "export.dynamic_batch or one MindIR per batch size" if relation.startswith("exported") else None,
                **base)
            return
        cand = np.load(str(self.loads / run_step["outputs"]), allow_pickle=False)
        rows = np.load(str(self.loads / run_step["rows"]), allow_pickle=False)
        diff = diff_tensors("MindIR batch %d logits" % size, self.logits[rows], cand, TOLERANCE.atol, TOLERANCE.rtol)
        evidence.update(diff=diff, class_flips=class_flips(self.logits[rows], cand)["count"])
        status = "observed-pass" if diff["passed"] else "observed-fail"
        ran = ("ran anyway on MindSpore %s" % self.ms.__version__) if relation.startswith("exported") else "ran"
        self.check(id_, title, status, "batch %d (%s) %s: %d call(s), first %.2f s, outputs %s, max |diff| %s vs the "
                   "checkpoint outputs (atol %g, rtol %g)" % (
                       size, relation, ran, run_step["calls"], run_step.get("first_call_s") or 0.0,
                       run_step.get("shape"), _fmt(diff["max_abs"], "%.3g"), TOLERANCE.atol, TOLERANCE.rtol),
                   evidence, hint=None if diff["passed"] else diff.get("reason"), max_abs=diff["max_abs"], **base)

    def lite(self, mindir: Optional[Path]) -> None:
        """MindSpore Lite: build on CPU, then on the target — only where mindspore_lite imports."""
        base = {"format": "lite"}
        pairs = (("lite-cpu", "cpu", "MindSpore Lite build (CPU)"),
                 ("lite-target", self.target.lower(), "MindSpore Lite build (target %s)" % self.target))
        if mindir is None:
            for id_, backend, title in pairs:
                self.check(id_, title, "not-run", "no MindIR was exported", {}, backend=backend, batch_size=None,
                           **base)
            return
        probe = self.run_loader("lite-probe", "lite-probe", [])
        lite = (probe["report"] or {}).get("lite") or {}
        python = "%s (Python %s)" % (sys.executable, "%d.%d" % sys.version_info[:2])
        if not lite.get("imported"):
            reason = "mindspore_lite does not import in the jobs interpreter %s: %s" % (
                python, lite.get("error") or "the probe process reported nothing")
            self.ctx.log("MindSpore Lite not run: " + reason)
            for id_, backend, title in pairs:
                self.check(id_, title, "not-run", reason,
                           {"probe": probe["report_path"], "pids": probe["pids"]}, hint=LITE_HINT,
                           backend=backend, batch_size=None, **base)
            self.lite_reason = reason
            return
        self.lite_build("lite-cpu", "cpu", pairs[0][2], mindir, lite)
        backend = {"Ascend": "ascend", "GPU": "gpu"}.get(self.target)
        if backend is None:
            self.check("lite-target", pairs[1][2], "not-run",
                       "the target is %s: the CPU build above is the target build" % self.target,
                       {"target": self.target}, backend="cpu", batch_size=None, **base)
        else:
            self.lite_build("lite-target", backend, pairs[1][2], mindir, lite)

    def lite_build(self, id_: str, backend: str, title: str, mindir: Path, lite: Dict[str, Any]) -> None:
        """One Lite backend in its own process: build_from_file, predict, diff — or the gate that stopped it."""
        size = self.mindir_signature[0] if self.mindir_signature[0] > 0 else self.batch_sizes[0]
        outcome = self.run_loader(id_, "lite", ["--mindir", str(mindir), "--inputs", str(self.inputs_path),
                                                "--backend", backend, "--batch-size", str(size)])
        report = outcome["report"] or {}
        evidence: Dict[str, Any] = {"lite": lite, "backend": backend, "pids": outcome["pids"],
                                    "report": outcome["report_path"], "mindir": self.mindir_info}
        base = {"format": "lite", "backend": backend, "batch_size": size}
        text = "%s\n%s" % ((report.get("error") or {}).get("message", ""), outcome["stderr_tail"])
        gate = parse_lite_version_gate(text)
        if gate is not None:
            evidence["gate"] = gate
            self.check(id_, title, "observed-fail", describe_gate(gate, backend) + ": " + gate["message"],
                       evidence, hint=GATE_HINT, max_abs=None, **base)
            return
        problem = self.loader_problem(outcome, "the Lite loader (%s)" % backend)
        if report.get("error") or problem is not None:
            detail = report["error"]["message"] if report.get("error") else problem[1]
            self.check(id_, title, "observed-fail" if not outcome["timed_out"] else "blocked", detail, evidence,
                       hint=None if not outcome["timed_out"] else DEVICE_CONTEXT_NOTE, max_abs=None, **base)
            return
        predict = next((s for s in report.get("steps") or [] if s.get("step") == "predict"), {})
        cand = np.load(str(self.loads / predict["outputs"]), allow_pickle=False)
        rows = np.load(str(self.loads / predict["rows"]), allow_pickle=False)
        diff = diff_tensors("Lite %s logits" % backend, self.logits[rows], cand, TOLERANCE.atol, TOLERANCE.rtol)
        evidence["diff"] = diff
        status = "observed-pass" if diff["passed"] else "observed-fail"
        self.check(id_, title, status, "Lite %s built and predicted batch %d: max |diff| %s vs the checkpoint outputs" % (
            lite.get("version"), size, _fmt(diff["max_abs"], "%.3g")), evidence,
            hint=None if diff["passed"] else diff.get("reason"), max_abs=diff["max_abs"], **base)

    def not_run(self, ids_titles: Sequence[Tuple[str, str, Dict[str, Any]]], why: str) -> None:
        """Say plainly which checks were skipped and why."""
        for id_, title, extra in ids_titles:
            self.check(id_, title, "not-run", why, {}, **extra)

    # ----- summary ---------------------------------------------------------------------

    def summary(self) -> Dict[str, Any]:
        """The result event's summary: artefacts, checks per format and batch size, reference."""
        by_format: Dict[str, Any] = {"ckpt": {}, "mindir": {"batches": {}}, "lite": {}, "other": {}}
        for ev in self.checks:
            entry = {"id": ev["id"], "status": ev["status"], "max_abs": ev.get("max_abs"), "detail": ev["detail"]}
            fmt = ev.get("format")
            if fmt == "mindir" and ev.get("batch_size") is not None:
                by_format["mindir"]["batches"][str(ev["batch_size"])] = entry
            elif fmt == "mindir":
                by_format["mindir"][ev["id"].split("-", 1)[1]] = entry
            elif fmt == "ckpt":
                by_format["ckpt"]["reload"] = entry
            elif fmt == "lite":
                by_format["lite"][ev["id"].split("-", 1)[1]] = entry
            else:
                by_format["other"][ev["id"]] = entry
        ref = self.reference
        return {
            "source": self.source.describe() if hasattr(self, "source") else None,
            "model": getattr(self, "model", None),
            "device": {"target": self.target, "id": self.device_id, "mode": EXPORT_MODE},
            "formats": self.formats, "batch_sizes": self.batch_sizes, "dynamic_batch": bool(self.x["dynamic_batch"]),
            "artifacts": self.artifacts,
            "checks": by_format,
            "reference": {
                "dir": "artifacts/reference", "samples": len(ref.get("samples") or []),
                "classes_covered": len(ref.get("classes_covered") or []),
                "samples_per_class": ref.get("samples_per_class"),
                "confused_pairs": ref.get("confused_pairs") or [],
                "tolerance": ref.get("tolerance"), "preprocessing": ref.get("preprocessing"),
                "class_names": ref.get("class_names"),
            } if self.reference_written else None,
            "pids": {"job": os.getpid(), "loaders": self.loaders},
            "lite": {"reason": self.lite_reason},
            "timing_s": self.timing_s,
            "failed": [ev["id"] for ev in self.checks if ev["status"] in ("observed-fail", "blocked")],
        }


def mindir_info(path: Path) -> Dict[str, Any]:
    """Header of a MindIR file read with MindSpore's own proto (feature-detected): versions, input shapes."""
    try:
        from mindspore.train import mind_ir_pb2
    except ImportError as exc:
        return {"mind_ir_version": None, "note": "mindspore.train.mind_ir_pb2 not available: %s" % exc}
    model = mind_ir_pb2.ModelProto()
    with open(str(path), "rb") as fh:
        model.ParseFromString(fh.read())
    has = getattr(model, "HasField", None)
    version = model.mind_ir_version if has is not None and _has_field(model, "mind_ir_version") else None
    return {
        "mind_ir_version": int(version) if version is not None else None,
        "ir_version": model.ir_version or None,
        "producer": model.producer_name or None,
        "producer_version": model.model_version or None,
        "input_shapes": [[list(t.dims) for t in value.tensor] for value in model.graph.input],
    }


def _has_field(message: Any, name: str) -> bool:
    try:
        return bool(message.HasField(name))
    except ValueError:  # not an optional field in this proto version
        return False


def _short(exc: BaseException) -> str:
    return short_error(exc, limit=1500)


def _fmt(value: Any, fmt: str = "%.4f") -> str:
    return fmt % value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def main(ctx: JobContext) -> str:
    """Run the export job."""
    t_start = time.perf_counter()
    ex = Exporter(ctx)
    ex.start()
    ex.phase(0, "source")
    ex.load_source()
    ex.phase(1, "reference")
    try:
        ex.build_reference()
    except JobFailed:
        raise
    except Exception as exc:  # DataError and friends name the file and the expectation
        raise JobFailed(str(exc), hint="the reference samples come from the training run's validation split",
                        type_=type(exc).__name__)
    wants_ckpt, wants_mindir = "ckpt" in ex.formats, "mindir" in ex.formats
    ex.ckpt_sha256 = getattr(ex, "source_sha256", None)
    if wants_ckpt:
        ex.write_checkpoint()
    if ex.source_clean:
        ex.write_reference()
    else:
        # The fresh-process reload still needs the inputs; the package itself is not handed over.
        ex.inputs_path = write_bytes(ex.loads / "inputs.npy", npy_bytes(ex.inputs))
        ex.not_run([("reference", "reference package", {})],
                   "the source checkpoint did not load cleanly: reference logits from partly random weights would "
                   "mislead a deployment check")
    ex.phase(2, "checkpoint reload")
    if wants_ckpt:
        ex.reload_checkpoint()
    else:
        ex.not_run([("ckpt-reload", "checkpoint reloads in a fresh process", {"format": "ckpt", "batch_size": None})],
                   "ckpt is not in export.formats")
    ex.phase(3, "MindIR")
    mindir = None
    if wants_mindir and ex.source_clean:
        mindir = ex.export_mindir()
        if mindir is not None:
            ex.phase(4, "MindIR load")
            ex.load_mindir(mindir)
        else:
            ex.not_run([("mindir-b%d" % b, "MindIR runs batch %d" % b, {"format": "mindir", "batch_size": b})
                        for b in ex.batch_sizes], "the MindIR export failed")
    else:
        why = "mindir is not in export.formats" if not wants_mindir else (
            "the source checkpoint did not load cleanly: a MindIR of partly random weights is not exported")
        ex.not_run([("mindir-export", "MindIR export", {"format": "mindir", "batch_size": None})] +
                   [("mindir-b%d" % b, "MindIR runs batch %d" % b, {"format": "mindir", "batch_size": b})
                    for b in ex.batch_sizes], why)
    ex.phase(5, "MindSpore Lite")
    ex.lite(mindir)
    ex.timing_s["total_s"] = time.perf_counter() - t_start
    summary = ex.summary()
    ctx.result(summary)
    ctx.progress(6, 6, "phase", "done")
    if summary["failed"]:
        failed = [ev for ev in ex.checks if ev["id"] in summary["failed"]]
        raise JobFailed("%d export check(s) failed: %s" % (len(failed), "; ".join(
            "%s: %s" % (ev["id"], ev["detail"][:300]) for ev in failed)),
            hint=failed[0].get("hint"), type_="ExportCheckFailed")
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
