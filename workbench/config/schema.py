"""The config schema: every key, its type, default, range and what it means."""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from workbench.analysis.shift import OWN, SETS
from workbench.session.refs import check_job_ref, job_ref_expected

USER_FILE = Path(os.path.expanduser("~/.config/ms-workbench/config.yaml"))
TARGETS = ("auto", "CPU", "GPU", "Ascend")
PRECISIONS = ("fp32", "fp16", "amp-O1", "amp-O2")
CPU_ISA_CAPS = (
    "auto",
    "none",
    "SSE41",
    "AVX",
    "AVX2",
    "AVX2_VNNI",
    "AVX512_CORE",
    "AVX512_CORE_VNNI",
    "AVX512_CORE_BF16",
    "AVX512_CORE_AMX",
    "ALL",
)  # ONEDNN_MAX_CPU_ISA values; jobs/train/cpu_isa.py
SHIFT_SETS = tuple(SETS)
SHIFT_OWN = OWN
EXPORT_FORMATS = ("ckpt", "mindir")  # what jobs/export writes; MindSpore Lite is tried whenever it imports


class ConfigError(Exception):
    """A configuration value is unknown, of the wrong type or out of range."""


@dataclass
class Field:
    """One typed config key: its default and what is allowed."""

    default: Any
    types: Tuple[type, ...]
    choices: Optional[Sequence[Any]] = None
    min: Optional[float] = None
    max: Optional[float] = None
    nullable: bool = False
    doc: str = ""
    open_dict: bool = False  # a free-form mapping (not checked key by key)
    item_types: Optional[Tuple[type, ...]] = None
    item_choices: Optional[Sequence[Any]] = None
    item_min: Optional[float] = None
    item_max: Optional[float] = None
    # A last check on the typed value (a path that must exist...): returns the value to keep,
    # raises ValueError saying why not; `expects` then describes what the key accepts.
    check: Optional[Callable[[Any], Any]] = None
    expects: str = ""
    above: Optional[float] = None  # an exclusive lower bound (lr > 0)

    def expected(self) -> str:
        """Describe what the key accepts."""
        parts = [self.expects or "/".join(t.__name__ for t in self.types)]
        if self.item_types:
            parts[0] += " of " + "/".join(t.__name__ for t in self.item_types)
            items = _limits(self.item_choices, self.item_min, self.item_max)
            if items:
                parts.append("each " + " ".join(items))
        parts += _limits(self.choices, self.min, self.max)
        if self.above is not None:
            parts.append("> %s" % self.above)
        if self.nullable:
            parts.append("or null")
        return " ".join(parts)


def _limits(choices: Optional[Sequence[Any]], low: Optional[float], high: Optional[float]) -> List[str]:
    parts = []
    if choices:
        parts.append("one of " + ", ".join(map(str, choices)))
    if low is not None:
        parts.append(">= %s" % low)
    if high is not None:
        parts.append("<= %s" % high)
    return parts


def _f(default, *types, **kw) -> Field:
    return Field(default, types or (type(default),), **kw)


def _existing_dir(value: str) -> str:
    """An explicit folder must exist: the search order is only for the default (null)."""
    path = os.path.abspath(os.path.expanduser(value))  # jobs run in their own folder: relative means the caller's cwd
    if not os.path.isdir(path):
        raise ValueError(
            "%s %s; only data.dir null searches the usual places"
            % (path, "is not a folder" if os.path.exists(path) else "does not exist")
        )
    return path


def _interpreter(value: str) -> str:
    """An interpreter given by path must be an executable file; a bare name must be on PATH."""
    if os.sep in value:
        path = os.path.expanduser(value)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ValueError("%s is not an executable file" % path)
        return path
    if shutil.which(value) is None:
        raise ValueError("no %s on PATH" % value)
    return value


def _shift_drops(value: Any) -> Any:
    """A drop in [0, 1] for every set, or {set: drop} naming built-in sets or `own`."""
    items = value.items() if isinstance(value, dict) else [(None, value)]
    for key, drop in items:
        if key is not None and key not in SHIFT_SETS + (SHIFT_OWN,):
            raise ValueError("%r is not a shift set (known: %s)" % (key, ", ".join(SHIFT_SETS + (SHIFT_OWN,))))
        if isinstance(drop, bool) or not isinstance(drop, (int, float)) or not 0 <= drop <= 1:
            raise ValueError("%r is not a macro-F1 drop between 0 and 1" % (drop,))
    return {str(k): float(v) for k, v in value.items()} if isinstance(value, dict) else float(value)


def _tolerances_by_batch(value: Dict[Any, Any]) -> Dict[int, float]:
    """{batch size: max abs diff}; keys may arrive as strings from YAML or --set."""
    out = {}
    for key, tol in value.items():
        try:
            size = int(key)
        except (TypeError, ValueError):
            raise ValueError("batch size %r is not an integer" % (key,))
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0 or size < 1:
            raise ValueError("entry %r: %r must be a batch size >= 1 mapped to a number >= 0" % (key, tol))
        out[size] = float(tol)
    return out


def _job_ref(key: str, doc: str = "") -> Field:
    # BadReference is a ValueError: _check turns it into a ConfigError naming the key and the source.
    return _f(
        None, str, nullable=True, check=functools.partial(check_job_ref, key), expects=job_ref_expected(key), doc=doc
    )


CANDIDATE_DOC = "null: the session's frozen candidate (`ms-workbench freeze`); the job stops when none is frozen"


def _recorded_decision() -> Dict[str, Field]:
    """Keys the runner writes beside a decided target; a job's config.yaml fed back with --config still loads."""
    return {
        "requested": _f(
            None,
            str,
            nullable=True,
            choices=TARGETS,
            doc="written by the runner: the target asked for before `auto` was decided; not read",
        ),
        "why": _f(None, str, nullable=True, doc="written by the runner: why the target was chosen; not read"),
    }


def _path(target: str, mode: str, precision: str) -> Dict[str, Field]:
    return {
        "target": _f(target, str, choices=TARGETS),
        "id": _f(0, int, min=0),
        "mode": _f(mode, str, choices=("graph", "pynative")),
        "precision": _f(precision, str, choices=PRECISIONS),
        **_recorded_decision(),
    }


SCHEMA: Dict[str, Any] = {
    "python": _f(
        None,
        str,
        nullable=True,
        check=_interpreter,
        expects="an executable interpreter",
        doc="interpreter that runs jobs (default: this one)",
    ),
    "glog_v": _f(3, int, min=0, max=4, doc="GLOG_v for jobs"),
    "device": {
        "target": _f("auto", str, choices=TARGETS),
        "id": _f(0, int, min=0),
        **_recorded_decision(),
    },
    "data": {
        "dir": _f(None, str, nullable=True, check=_existing_dir, expects="an existing folder"),
        "source": _f("official", str, choices=("official", "synthetic")),
        "val_fraction": _f(0.1, float, min=0.001, max=0.5),
        "split_seed": _f(37, int, min=0),
        "scale": _f("/255", str, choices=("/255",)),
        "from": _job_ref("data.from"),  # a data job (or a folder holding split.json) whose split is reused
        "synthetic_train": _f(2000, int, min=20),
        "synthetic_test": _f(500, int, min=10),
        "preview_per_class": _f(4, int, min=1, max=16),
    },
    "model": {
        "name": _f("mlp", str, choices=("mlp", "cnn")),
        "hidden": _f(128, int, min=1, max=65536),
        "hidden_gain": _f(
            1.0,
            float,
            int,
            min=1e-30,
            doc="train and numerics only, mlp only: a parameter-free x gain after the first Dense and x 1/gain "
            "after its ReLU; the same function and training, hidden activations gain times larger (1e5 makes an "
            "fp16 run overflow there by construction)",
        ),
    },
    "train": {
        "mode": _f("graph", str, choices=("graph", "pynative")),
        "epochs": _f(5, int, min=1, max=10000),
        "batch_size": _f(64, int, min=1, max=65536),
        "lr": _f(0.001, float, above=0.0, doc="> 0: an lr of 0 never changes the weights"),
        "optimizer": _f("adam", str, choices=("adam", "sgd")),
        "momentum": _f(0.9, float, min=0.0, max=1.0),
        "precision": _f("fp32", str, choices=PRECISIONS),
        "seed": _f(1, int, min=0),
        "warmup_steps": _f(10, int, min=0),
        "max_steps": _f(0, int, min=0, doc="0 = no limit (per epoch)"),
        "feed": _f("numpy", str, choices=("numpy", "dataset")),
        "cpu_isa_cap": _f(
            "auto",
            str,
            choices=CPU_ISA_CAPS,
            doc="oneDNN instruction-set cap on CPU (ONEDNN_MAX_CPU_ISA); auto = AVX2 for the cnn",
        ),
        "train_limit": _f(0, int, min=0, doc="0 = whole split; else first N train samples"),
        "val_limit": _f(0, int, min=0),
        "resume_from": _job_ref("train.resume_from"),
        "input_scale": _f(
            1.0,
            float,
            int,
            min=0.0,
            doc="the images are multiplied by this before training (1 = pixel / 255 as loaded); a large value "
            "pushes an fp16 activation out of range on purpose (the numerics replay's recipe)",
        ),
        "loss_scale": _f(
            "none",
            str,
            choices=("none", "dynamic"),
            doc="dynamic: nn.TrainOneStepWithLossScaleCell with a DynamicLossScaleUpdateCell (start 2**24, x1/2 on "
            "overflow, x2 after 2000 good steps); each change and overflow skip is a loss_scale event",
        ),
        "monitor": {
            "every": _f(
                0,
                int,
                min=0,
                max=100000,
                doc="0 = off; N: every N-th step also returns the gradients it applied (from the compiled step), "
                "reduced on the host to per-parameter weight, gradient and update norms and non-finite shares "
                "(`monitor` events)",
            ),
        },
        "profile": {"steps": _f(0, int, min=0, max=1000)},
        "parallel": {
            "workers": _f(1, int, min=1, max=1024),
            "local_workers": _f(0, int, min=0, max=1024, doc="0 = same as workers"),
            "master_addr": _f("127.0.0.1", str),
            "master_port": _f(8118, int, min=1, max=65535),
            "node_rank": _f(0, int, min=0),
            "crash_rank": _f(
                None,
                int,
                nullable=True,
                min=0,
                doc="tests only: this rank is killed by SIGSEGV after its 2nd training step",
            ),
        },
    },
    "perf": {
        "repeats": _f(
            3,
            int,
            min=1,
            max=100,
            doc="1 = off; k > 1: the train job times its steady window k times "
            "after training (check perf-repeats: median, min-max, IQR, host load); the default 3 costs "
            "3 x perf.repeat_steps extra steps",
        ),
        "repeat_steps": _f(50, int, min=1, max=100000, doc="steps in one timed repeat of the steady window"),
    },
    "overfit": {
        "batch": _f(64, int, min=1, max=65536, doc="images of the train split in the one fixed batch (the first N)"),
        "steps": _f(200, int, min=1, max=100000, doc="most steps on that batch"),
        "factor": _f(10.0, float, int, min=1.0, doc="pass when the loss falls to 1/factor of its first value"),
    },
    "resume": {
        "epochs": _f(
            2,
            int,
            min=2,
            max=1000,
            doc="k: the uninterrupted run trains k epochs; the resumed one "
            "continues from the state saved after epoch k-1",
        ),
        "train_limit": _f(2000, int, min=0, doc="train samples of the legs (0 = train.train_limit)"),
        "tamper": _f(
            "none",
            str,
            choices=("none", "optimizer"),
            doc="tests of the check: 'optimizer' zeroes the optimizer state in the saved state first",
        ),
    },
    "precision_run": {
        "candidate": _f("amp-O2", str, choices=PRECISIONS, doc="precision judged against its fp32 twin"),
        "max_macro_f1_delta": _f(
            0.02,
            float,
            min=0.0,
            max=1.0,
            doc="largest |candidate - fp32| validation macro-F1 of the last epoch that passes",
        ),
    },
    "test": {"from": _job_ref("test.from", CANDIDATE_DOC)},
    "numerics": {  # replay one training step in PyNative and name the first cell out of range (jobs/numerics)
        "from": _job_ref("numerics.from", "a train job; required"),
        "step": _f(
            None,
            int,
            nullable=True,
            min=1,
            doc="global step to replay; null = the step the run failed at (its saved failing case)",
        ),
    },
    "shift": {  # new-distribution sets for the frozen candidate (jobs/shift)
        "from": _f(
            None,
            str,
            nullable=True,
            check=_existing_dir,
            expects="an existing folder of images with labels.csv (file,label), or an IDX pair",
        ),
        "sets": _f(list(SHIFT_SETS), list, item_types=(str,), item_choices=SHIFT_SETS, doc="built-in shifts to run"),
        "severities": _f([1, 2, 3, 4, 5], list, item_types=(int,), item_min=1, item_max=5),
        "per_class": _f(200, int, min=0, max=1000, doc="test images of each class shifted (0 = all 10 000)"),
        "seed": _f(0, int, min=0, doc="draws the images and every random part of a shift"),
        "failures": _f(8, int, min=1, max=32, doc="most confident wrong predictions kept per set"),
        "tolerance": _f(
            0.05, float, min=0.0, max=1.0, doc="macro-F1 drop within which the scope statement says the model holds"
        ),
        "on_bad": _f("error", str, choices=("error", "skip"), doc="an unreadable or unlabelled own image"),
    },
    "align": {
        "reference": _path("CPU", "pynative", "fp32"),
        "candidate": _path("CPU", "graph", "fp32"),
        "atol": _f(None, float, nullable=True),
        "rtol": _f(None, float, nullable=True),
        "layers": _f(True, bool),
        "grads": _f(True, bool),
        "steps": _f(0, int, min=0, max=100, doc="optimizer steps to compare weights after"),
        "batch": _f(64, int, min=1, max=6000),
        "sample_seed": _f(0, int, min=0),
        "weights_from": _job_ref("align.weights_from", CANDIDATE_DOC + "; init: initial weights, never counted"),
    },
    "export": {
        "from": _job_ref("export.from", CANDIDATE_DOC + "; init: initial weights, never counted"),
        "formats": _f(["ckpt", "mindir"], list, item_types=(str,), item_choices=EXPORT_FORMATS),
        "batch_sizes": _f(
            [64, 1, 32],
            list,
            item_types=(int,),
            item_min=1,
            item_max=65536,
            doc="the first size is the MindIR's input signature",
        ),
        "dynamic_batch": _f(False, bool),
        "samples_per_class": _f(2, int, min=1, max=100),
    },
    "env": {
        "probes": _f(True, bool),
        "npu_smi": _f("npu-smi", str, doc="npu-smi command name or path (its basename must be npu-smi)"),
        "npu_smi_timeout_s": _f(20.0, float, int, min=1, doc="time limit of one npu-smi run, lock wait included"),
        "root": _f("/", str, doc="filesystem root under which Ascend paths are looked up (tests: a fake tree)"),
        "only_probes": _f(False, bool, doc="run only the device probes (the Environment screen's p key)"),
        "probe_module": _f("jobs.probe", str, doc="module run as one probe (tests: a stand-in that hangs or crashes)"),
    },
    # Acceptance fields set by this project from its own baseline runs: fill them per task; never a hardware promise.
    "acceptance": {
        "min_val_macro_f1_mlp": _f(
            0.80,
            float,
            min=0.0,
            max=1.0,
            doc="task: best-epoch validation macro-F1 of an "
            "mlp run (this project measured about 0.88 after 5 epochs on the official data)",
        ),
        "min_val_macro_f1_cnn": _f(
            0.85, float, min=0.0, max=1.0, doc="task: best-epoch validation macro-F1 of a cnn run"
        ),
        "min_test_macro_f1_mlp": _f(
            0.80, float, min=0.0, max=1.0, doc="task: frozen-test macro-F1 (first evaluation), mlp"
        ),
        "min_test_macro_f1_cnn": _f(
            0.85, float, min=0.0, max=1.0, doc="task: frozen-test macro-F1 (first evaluation), cnn"
        ),
        "align_max_abs_diff": _f(
            None,
            float,
            nullable=True,
            min=0.0,
            doc="framework: null = the align job's own "
            "rule (|cand - ref| <= atol + rtol*|ref|, align.atol/rtol) decides; a number also "
            "bounds the largest |diff| of any compared tensor",
        ),
        "export_max_abs_diff": _f(
            1e-5,
            float,
            min=0.0,
            doc="framework: largest |diff| of a reloaded artefact's "
            "outputs vs the checkpoint in memory, for every batch size "
            "(ckpt-reload, mindir-b<N>)",
        ),
        "export_max_abs_diff_by_batch": _f(
            {},
            dict,
            open_dict=True,
            check=_tolerances_by_batch,
            expects="a mapping batch size -> max abs diff",
            doc="framework: per-batch-size overrides of export_max_abs_diff, e.g. {1: 1e-4}",
        ),
        "max_shift_drop": _f(
            None,
            float,
            int,
            dict,
            nullable=True,
            open_dict=True,
            check=_shift_drops,
            expects="a macro-F1 drop (every set) or a mapping set -> drop",
            doc="task: the new-distribution check (largest macro-F1 drop of the shift job's sets at their worst "
            "severity); null = results shown as information, never as a pass",
        ),
        "min_steady_images_per_s": _f(
            0.0,
            float,
            int,
            min=0,
            doc="performance: least steady training throughput (Σ images / Σ wall time of the steady steps) of "
            "the judged train run on the target; 0 = not required",
        ),
        "max_steady_median_ms": _f(
            0.0,
            float,
            int,
            min=0,
            doc="performance: largest median steady step time (ms) of the judged train run on the target; "
            "0 = not required",
        ),
        "task_checks": _f(
            ["val-macro-f1", "test-macro-f1", "test-evaluations"],
            list,
            item_types=(str,),
            doc="task layer: val-/test-macro-f1 are judged against the minimums above; "
            "test-evaluations fails when the test set was evaluated more than once; "
            "effect-consistency (optional) compares a run on the target with one on another device",
        ),
        "framework_checks": _f(
            [
                "data:data.shapes",
                "train:finite-loss",
                "align:graph-vs-pynative",
                "export:ckpt-reload",
                "export:mindir-load",
                "export:mindir-b*",
                "overfit-batch",
                "resume-exact",
                "precision-run",
            ],
            list,
            item_types=(str,),
            doc="framework layer: [job kind:]check id, * = every match "
            "(mindir-b* = each export.batch_sizes); align:graph-vs-pynative is the fp32 "
            "alignment on a fixed batch. The course's order: fp32 alignment first, then a "
            "candidate precision is judged by a training run against its fp32 twin "
            "(precision-run); add align:fp32-vs-candidate to also require its per-tensor "
            "alignment at the candidate dtype's tolerances",
        ),
        "device_checks": _f(
            [
                "env:device-setting",
                "env:probe-*",
                "env:npu-smi",
                "train:effective-config",
                "train:device-activity",
                "train:profile",
            ],
            list,
            item_types=(str,),
            doc="device layer (judged only when the target is a device, never CPU): [job kind:]check id",
        ),
    },
    "compare": {  # effect consistency of two training runs (`ms-workbench compare A B`), on the frozen test set
        "max_macro_f1_delta": _f(
            0.02,
            float,
            min=0.0,
            max=1.0,
            doc="largest |test macro-F1 of A - of B| that still counts as the same effect",
        ),
        "max_class_f1_delta": _f(0.05, float, min=0.0, max=1.0, doc="largest |test F1 of A - of B| of any one class"),
        "max_final_loss_rel_delta": _f(
            0.10, float, min=0.0, doc="largest |final train loss of A - of B| / |of A| (last epoch's mean)"
        ),
    },
    "limits": {
        "job_timeout_s": _f(0.0, float, int, min=0, doc="0 = no limit"),
        "stall_s": _f(300.0, float, int, min=0, doc="0 = no watchdog"),
        "probe_timeout_s": _f(120.0, float, int, min=1),
        "grace_s": _f(5.0, float, int, min=0),
    },
    "ui": {
        "refresh_hz": _f(4.0, float, int, min=0.5, max=30),
        "low_bandwidth": _f(False, bool),
        "nice": _f(10, int, min=0, max=19),  # added to the TUI's nice value; jobs it starts are not niced
        "monitor_every": _f(
            10,
            int,
            min=0,
            max=100000,
            doc="the Training screen's `layers every` field (train.monitor.every of a run started there) starts "
            "here when train.monitor.every is 0 and the run's device is CPU: the course flow watches its layers "
            "(about 4 % of the MLP's training time at 10, bench/monitor_overhead.py); on a GPU or NPU the field starts "
            "at 0 (each sample would copy weights and moments to the host: not measured); 0 = never on unless asked",
        ),
    },
    "drill": {
        "steps": _f(20, int, min=0),
        "rate": _f(100.0, float, int, min=0.01),
        "crash_signal": _f(None, str, nullable=True),
        "crash_after": _f(0, int, min=0),
        "hang": _f(False, bool),
        "no_finished": _f(False, bool),
        "torn": _f(False, bool),
        "garbage": _f(False, bool),
        "exit_code": _f(0, int, min=0, max=255),
        "device": _f(False, bool, doc="take the device lock like a device job"),
        "ignore_term": _f(False, bool),
    },
}
