"""Layered, typed configuration: defaults < user file < --config FILE < --set key=value."""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

USER_FILE = Path(os.path.expanduser("~/.config/ms-workbench/config.yaml"))
TARGETS = ("auto", "CPU", "GPU", "Ascend")
PRECISIONS = ("fp32", "fp16", "amp-O1", "amp-O2")


class ConfigError(Exception):
    """A configuration value is unknown, of the wrong type or out of range."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads 1e-3 as a float (YAML 1.2), the way people write learning rates."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


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

    def expected(self) -> str:
        """Describe what the key accepts."""
        parts = ["/".join(t.__name__ for t in self.types)]
        if self.item_types:
            parts[0] += " of " + "/".join(t.__name__ for t in self.item_types)
        if self.choices:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.min is not None:
            parts.append(">= %s" % self.min)
        if self.max is not None:
            parts.append("<= %s" % self.max)
        if self.nullable:
            parts.append("or null")
        return " ".join(parts)


def _f(default, *types, **kw) -> Field:
    return Field(default, types or (type(default),), **kw)


def _path(target: str, mode: str, precision: str) -> Dict[str, Field]:
    return {
        "target": _f(target, str, choices=TARGETS),
        "id": _f(0, int, min=0),
        "mode": _f(mode, str, choices=("graph", "pynative")),
        "precision": _f(precision, str, choices=PRECISIONS),
    }


SCHEMA: Dict[str, Any] = {
    "python": _f(None, str, nullable=True, doc="interpreter that runs jobs (default: this one)"),
    "glog_v": _f(3, int, min=0, max=4, doc="GLOG_v for jobs"),
    "device": {
        "target": _f("auto", str, choices=TARGETS),
        "id": _f(0, int, min=0),
    },
    "data": {
        "dir": _f(None, str, nullable=True),
        "source": _f("official", str, choices=("official", "synthetic")),
        "val_fraction": _f(0.1, float, min=0.001, max=0.5),
        "split_seed": _f(37, int, min=0),
        "scale": _f("/255", str, choices=("/255",)),
        "from": _f(None, str, nullable=True, doc="data job id or split path to reuse"),
        "synthetic_train": _f(2000, int, min=20),
        "synthetic_test": _f(500, int, min=10),
        "preview_per_class": _f(4, int, min=1, max=16),
    },
    "model": {
        "name": _f("mlp", str, choices=("mlp", "cnn")),
        "hidden": _f(128, int, min=1, max=65536),
    },
    "train": {
        "mode": _f("graph", str, choices=("graph", "pynative")),
        "epochs": _f(5, int, min=1, max=10000),
        "batch_size": _f(64, int, min=1, max=65536),
        "lr": _f(0.001, float, min=0.0),
        "optimizer": _f("adam", str, choices=("adam", "sgd")),
        "momentum": _f(0.9, float, min=0.0, max=1.0),
        "precision": _f("fp32", str, choices=PRECISIONS),
        "seed": _f(1, int, min=0),
        "warmup_steps": _f(10, int, min=0),
        "max_steps": _f(0, int, min=0, doc="0 = no limit (per epoch)"),
        "feed": _f("numpy", str, choices=("numpy", "dataset")),
        "train_limit": _f(0, int, min=0, doc="0 = whole split; else first N train samples"),
        "val_limit": _f(0, int, min=0),
        "resume_from": _f(None, str, nullable=True),
        "profile": {"steps": _f(0, int, min=0, max=1000)},
        "parallel": {
            "workers": _f(1, int, min=1, max=1024),
            "local_workers": _f(0, int, min=0, max=1024, doc="0 = same as workers"),
            "master_addr": _f("127.0.0.1", str),
            "master_port": _f(8118, int, min=1, max=65535),
            "node_rank": _f(0, int, min=0),
            "crash_rank": _f(None, int, nullable=True, min=0,
                             doc="tests only: this rank is killed by SIGSEGV after its 2nd training step"),
        },
    },
    "test": {"from": _f(None, str, nullable=True)},
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
        "weights_from": _f(None, str, nullable=True),
    },
    "export": {
        "from": _f(None, str, nullable=True),
        "formats": _f(["ckpt", "mindir"], list, item_types=(str,)),
        "batch_sizes": _f([64, 1, 32], list, item_types=(int,)),
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


def defaults(schema: Dict[str, Any] = SCHEMA) -> Dict[str, Any]:
    """Return the built-in defaults as a plain nested dict."""
    out = {}
    for key, spec in schema.items():
        out[key] = defaults(spec) if isinstance(spec, dict) else copy.deepcopy(spec.default)
    return out


def _check(spec: Field, key: str, value: Any, source: str) -> Any:
    def fail(why: str) -> ConfigError:
        return ConfigError("%s: key %r has value %r; expected %s%s" % (
            source, key, value, spec.expected(), (" (" + why + ")") if why else ""))

    if value is None:
        if spec.nullable:
            return None
        raise fail("null not allowed")
    if isinstance(value, bool) and bool not in spec.types:
        raise fail("got a boolean")
    if isinstance(value, int) and not isinstance(value, bool) and float in spec.types and int not in spec.types:
        value = float(value)
    if not isinstance(value, spec.types):
        raise fail("got %s" % type(value).__name__)
    if spec.choices is not None and value not in spec.choices:
        raise fail("")
    if spec.min is not None and value < spec.min:
        raise fail("too small")
    if spec.max is not None and value > spec.max:
        raise fail("too large")
    if spec.item_types and any(not isinstance(v, spec.item_types) or isinstance(v, bool) for v in value):
        raise fail("an item has the wrong type")
    return value


def merge(base: Dict[str, Any], layer: Any, source: str, schema: Dict[str, Any] = SCHEMA,
          prefix: str = "") -> Dict[str, Any]:
    """Merge one layer into `base` in place, validating every key against the schema."""
    if layer is None:
        return base
    if not isinstance(layer, dict):
        raise ConfigError("%s: %s must be a mapping, got %r" % (source, prefix.rstrip(".") or "the top level", layer))
    for key, value in layer.items():
        full = prefix + str(key)
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise ConfigError("%s: unknown key %r with value %r (known here: %s)" % (source, full, value, known))
        spec = schema[key]
        if isinstance(spec, dict):
            merge(base.setdefault(key, {}), value, source, spec, full + ".")
        else:
            base[key] = _check(spec, full, value, source)
    return base


def parse_set(item: str) -> Dict[str, Any]:
    """Turn 'a.b.c=value' into a nested dict, the value parsed as a YAML scalar."""
    if "=" not in item:
        raise ConfigError("--set %r: expected key.path=value" % item)
    key, raw = item.split("=", 1)
    if not key.strip():
        raise ConfigError("--set %r: empty key" % item)
    try:
        value = yaml.load(raw, Loader=_Loader) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError("--set %r: value is not valid YAML: %s" % (item, exc))
    out: Dict[str, Any] = {}
    node = out
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def load_file(path: Path) -> Any:
    """Read a YAML config file, naming it in any error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("%s: cannot read config file: %s" % (path, exc.strerror or exc))
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ConfigError("%s: not valid YAML: %s" % (path, exc))


def load(config_file: Optional[str] = None, sets: Sequence[str] = (), user_file: Optional[Path] = None,
         extra: Optional[List[Tuple[str, Dict[str, Any]]]] = None) -> Dict[str, Any]:
    """Build the effective config from all layers."""
    cfg = defaults()
    user = USER_FILE if user_file is None else user_file
    if user and Path(user).is_file():
        merge(cfg, load_file(Path(user)), str(user))
    if config_file:
        merge(cfg, load_file(Path(config_file)), str(config_file))
    for source, layer in extra or []:
        merge(cfg, layer, source)
    for item in sets:
        merge(cfg, parse_set(item), "--set %s" % item)
    if cfg["data"]["dir"]:  # jobs run in their own folder: a relative path means the caller's cwd
        cfg["data"]["dir"] = os.path.abspath(os.path.expanduser(cfg["data"]["dir"]))
    return cfg


def get(cfg: Dict[str, Any], dotted: str) -> Any:
    """Read a dotted key from a config dict."""
    node: Any = cfg
    for part in dotted.split("."):
        node = node[part]
    return node


def dump(cfg: Dict[str, Any]) -> str:
    """Serialise a config as YAML, keys in schema order."""
    return yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)
