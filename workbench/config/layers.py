"""Layered, typed configuration: defaults < user file < --config FILE < --set key=value."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from workbench.config import keys
from workbench.config.schema import (  # noqa: F401  (the schema's names, re-exported for callers)
    CPU_ISA_CAPS,
    EXPORT_FORMATS,
    PRECISIONS,
    SCHEMA,
    TARGETS,
    USER_FILE,
    ConfigError,
    Field,
)
from workbench.data.sizes import OFFICIAL_TRAIN, balanced, train_split_size


def defaults(schema: Dict[str, Any] = SCHEMA) -> Dict[str, Any]:
    """Return the built-in defaults as a plain nested dict."""
    out = {}
    for key, spec in schema.items():
        out[key] = defaults(spec) if isinstance(spec, dict) else copy.deepcopy(spec.default)
    return out


def _show(value: Any, limit: int = 200) -> str:
    """repr() of a value, cut short: an error message never grows with the input."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _scalar_problem(
    value: Any, types: Tuple[type, ...], choices: Optional[Sequence[Any]], low: Optional[float], high: Optional[float]
) -> Optional[str]:
    """Why a (coerced) scalar does not fit, or None."""
    if isinstance(value, bool) and bool not in types:
        return "got a boolean"
    if not isinstance(value, types):
        return "got %s" % type(value).__name__
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    if choices is not None and value not in choices:
        return ""
    number: Any = value  # one of `types`: a number wherever a key has bounds
    if low is not None and number < low:
        return "too small"
    if high is not None and number > high:
        return "too large"
    return None


def _coerce(value: Any, types: Tuple[type, ...]) -> Any:
    """An int where only a float is allowed becomes that float (lr=1 means 1.0)."""
    if isinstance(value, int) and not isinstance(value, bool) and float in types and int not in types:
        return float(value)
    return value


def _check(spec: Field, key: str, value: Any, source: str) -> Any:
    def fail(why: str) -> ConfigError:
        return ConfigError(
            "%s: key %r has value %s; expected %s%s"
            % (source, key, _show(value), spec.expected(), (" (" + why + ")") if why else "")
        )

    if value is None:
        if spec.nullable:
            return None
        raise fail("null not allowed")
    value = _coerce(value, spec.types)
    why = _scalar_problem(value, spec.types, spec.choices, spec.min, spec.max)
    if why is None and spec.above is not None and not value > spec.above:
        why = "too small"
    if why is not None:
        raise fail(why)
    if spec.item_types:
        items = [_coerce(v, spec.item_types) for v in value]
        for index, item in enumerate(items):
            why = _scalar_problem(item, spec.item_types, spec.item_choices, spec.item_min, spec.item_max)
            if why is not None:
                raise fail("item %d is %s: %s" % (index, _show(item), why or "not an allowed value"))
        value = items
    where = _non_finite(value)
    if where is not None:  # one rule at any depth: a mapping's or list's numbers are finite too
        raise fail("%s is not a finite number" % where)
    if spec.check is not None:
        try:
            value = spec.check(value)
        except ValueError as exc:
            raise fail(str(exc))
    return value


def _non_finite(value: Any, where: str = "the value") -> Optional[str]:
    """Where a NaN or infinity sits inside a value (a mapping's or list's item), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite(item, "item [%r]" % (key,) if where == "the value" else "%s[%r]" % (where, key))
        if found is not None:
            return found
    return None


def merge(
    base: Dict[str, Any], layer: Any, source: str, schema: Dict[str, Any] = SCHEMA, prefix: str = ""
) -> Dict[str, Any]:
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


MAX_KEY_DEPTH = 16  # the schema's deepest key has a handful of levels


def parse_set(item: str) -> Dict[str, Any]:
    """Turn 'a.b.c=value' into a nested dict, the value parsed as a YAML scalar."""
    if "=" not in item:
        raise ConfigError("--set %r: expected key.path=value" % item)
    key, raw = item.split("=", 1)
    if not key.strip():
        raise ConfigError("--set %r: empty key" % item)
    from workbench.config import safe_yaml as config_yaml  # YAML is loaded only when a layer is read (start-up)

    try:
        value = config_yaml.parse(raw) if raw.strip() else None
    except config_yaml.YamlError as exc:
        raise ConfigError("--set %r: value is %s" % (item, exc))
    parts = key.strip().split(".")
    if len(parts) > MAX_KEY_DEPTH:
        raise ConfigError(
            "--set %s: a key %d levels deep; no config key has more than %d"
            % (_show(key, 80), len(parts), MAX_KEY_DEPTH)
        )
    return keys.nest([(key.strip(), value)])


def load_file(path: Path) -> Any:
    """Read a YAML config file, naming it in any error."""
    from workbench.config import safe_yaml as config_yaml  # YAML is loaded only when a layer is read (start-up)

    try:
        return config_yaml.read(Path(path))
    except OSError as exc:
        raise ConfigError("%s: cannot read config file: %s" % (path, exc.strerror or exc))
    except config_yaml.YamlError as exc:
        raise ConfigError("%s: %s" % (path, exc))


def load(
    config_file: Optional[str] = None,
    sets: Sequence[str] = (),
    user_file: Optional[Path] = None,
    extra: Optional[List[Tuple[str, Dict[str, Any]]]] = None,
) -> Dict[str, Any]:
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
    check_effective(cfg)
    return cfg


def check_effective(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """Rules between keys, checked once all layers are merged."""
    export = cfg["export"]
    if "mindir" in export["formats"] and not export["batch_sizes"]:
        raise ConfigError(
            "the effective config: key 'export.batch_sizes' is empty while 'export.formats' has mindir; "
            "expected at least one size (the first is the MindIR's input signature), for example "
            "[64, 1, 32]"
        )
    problem = batch_problem(cfg)
    if problem is not None:
        raise ConfigError("the effective config: " + problem)
    return cfg


def train_images(cfg: Dict[str, Any]) -> Optional[Tuple[int, str]]:
    """Images one training epoch sees, and where that number comes from; None with data.from (the job knows)."""
    data, train = cfg["data"], cfg["train"]
    if data.get("from") is not None:
        return None
    total = OFFICIAL_TRAIN if data["source"] == "official" else data["synthetic_train"]
    n = train_split_size(balanced(total), data["val_fraction"])
    where = "the %s set's %d less data.val_fraction %s" % (data["source"], total, data["val_fraction"])
    limit = train["train_limit"]
    if limit and limit < n:
        return limit, "train.train_limit: the first %d of its %d" % (limit, n)
    return n, where


def batch_problem(cfg: Dict[str, Any]) -> Optional[str]:
    """Why train.batch_size cannot fill one batch from the train split (None when it can, or it is not known here)."""
    known = train_images(cfg)
    batch = cfg["train"]["batch_size"]
    if known is None or batch <= known[0]:
        return None
    return "train.batch_size %d > %d images in the train split (%s); expected at most %d" % (
        batch,
        known[0],
        known[1],
        known[0],
    )


def schema_field(dotted: str) -> Field:
    """The schema's Field of a dotted key (KeyError for a key the schema does not have)."""
    spec = keys.get(SCHEMA, dotted)
    if not isinstance(spec, Field):
        raise KeyError(dotted)
    return spec


def check_value(dotted: str, value: Any, source: str) -> Any:
    """`value` for a dotted key, checked and coerced as a config layer's would be; ConfigError names key and source."""
    return _check(schema_field(dotted), dotted, value, source)


def dump(cfg: Dict[str, Any]) -> str:
    """Serialise a config as YAML, keys in schema order."""
    import yaml

    return yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)
