"""Put MindSpore on the asked-for device first, read back what it uses, never fall back to CPU.

Feature-detected across MindSpore 2.4 .. 2.10: `ms.set_device(target, id)` where it exists
(2.5 and newer; `set_context(device_target=...)` is deprecated there), else
`ms.set_context(device_target=..., device_id=...)`; the mode is set afterwards.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional

from jobs.common import device_activity
from workbench.events.protocol import Evidence
from workbench.jobkit.context import JobContext, JobFailed

MODES = ("graph", "pynative")
CPP_STACK = "- C++ Call Stack"  # where MindSpore's error text turns into its C++ frames
# With these MS_ROLE values MindSpore quietly moves an Ascend request to CPU (INFO log only).
SERVER_ROLES = ("MS_PSERVER", "MS_SERVER", "MS_SCHED")
DEFAULT_HINT = (
    "check the device is visible (npu-smi info), that CANN's set_env.sh was sourced in the "
    "environment that starts jobs, and that this MindSpore wheel supports the target; "
    "the job does not retry on CPU"
)
CPU_ONLY_MEMORY_NOTE = (
    "MindSpore's memory counters report 0 on CPU, which is not a measurement; peak_host_rss_mb is this process's figure"
)


def mode_constant(ms, mode: str) -> int:
    """MindSpore's constant for `graph` or `pynative`."""
    if mode == "graph":
        return ms.GRAPH_MODE
    if mode == "pynative":
        return ms.PYNATIVE_MODE
    raise JobFailed("mode is %r; expected graph or pynative" % (mode,), type_="ConfigError")


def mode_name(ms, value: Any) -> str:
    """`graph` / `pynative` for MindSpore's mode constant (the raw value when unknown)."""
    if value == ms.GRAPH_MODE:
        return "graph"
    if value == ms.PYNATIVE_MODE:
        return "pynative"
    return str(value)


def explain_error(text: str) -> str:
    """A hint for a device error: the known-error table's cause and next check, else the default."""
    try:
        from workbench.ascend.errors import explain  # optional module; absent in older trees
    except ImportError:
        return DEFAULT_HINT
    try:
        found = explain(text)
    except Exception:  # a broken table must not hide the device error itself
        return DEFAULT_HINT
    parts = []
    for entry in found[:3]:
        if isinstance(entry, dict):
            parts.append("%s; next: %s" % (entry.get("cause"), entry.get("next_check")))
    return " | ".join(parts) + " (the job does not retry on CPU)" if parts else DEFAULT_HINT


def ms_role_warning(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Why MS_ROLE may have moved the work to CPU, or None when it is not a server role."""
    env = os.environ if env is None else env
    role = env.get("MS_ROLE")
    if role in SERVER_ROLES:
        return (
            "MS_ROLE=%s: with this parameter-server/scheduler role MindSpore switches an Ascend "
            "request to CPU without an error; unset MS_ROLE for single-device jobs" % role
        )
    return None


def set_device(target: str, device_id: int, mode: str) -> Dict[str, Any]:
    """Select target and id (first, before any tensor op), then the mode; JobFailed on error.

    Returns how it was done: {"api": ..., "mode_api": ...}.
    """
    import mindspore as ms

    how: Dict[str, Any] = {}
    try:
        if hasattr(ms, "set_device"):
            ms.set_device(target, int(device_id))
            how["api"] = "mindspore.set_device(%r, %d)" % (target, device_id)
        else:
            ms.set_context(device_target=target, device_id=int(device_id))
            how["api"] = "mindspore.set_context(device_target=%r, device_id=%d)" % (target, device_id)
    except Exception as exc:  # MindSpore raises RuntimeError/ValueError here; its text is the evidence
        text = "%s: %s" % (type(exc).__name__, exc)
        raise JobFailed(
            "cannot use device %s:%s: %s" % (target, device_id, cut_cpp_stack(text, 1500)),
            hint=explain_error(text),
            type_="DeviceError",
        )
    try:
        ms.set_context(mode=mode_constant(ms, mode))
        how["mode_api"] = "mindspore.set_context(mode=%s)" % ("GRAPH_MODE" if mode == "graph" else "PYNATIVE_MODE")
    except JobFailed:
        raise
    except Exception as exc:
        text = "%s: %s" % (type(exc).__name__, exc)
        raise JobFailed(
            "cannot set %s mode on %s:%s: %s" % (mode, target, device_id, cut_cpp_stack(text, 1500)),
            hint=explain_error(text),
            type_="DeviceError",
        )
    return how


def cut_cpp_stack(text: str, limit: Optional[int] = None) -> str:
    """MindSpore's message without its C++ call stack section; over `limit` characters, cut and marked ' ...'."""
    cut = text.find(CPP_STACK)
    if cut > 0:
        text = text[:cut].rstrip("- \n")
    return text if limit is None or len(text) <= limit else text[:limit] + " ..."


def short_error(exc: BaseException, limit: int = 2000) -> str:
    """An exception as 'Type: message' without MindSpore's C++ call stack section, bounded in length."""
    return cut_cpp_stack("%s: %s" % (type(exc).__name__, exc), limit)


def effective_device() -> Dict[str, Any]:
    """MindSpore's own answer: {target, device_id, mode, source}."""
    import mindspore as ms

    out: Dict[str, Any] = {}
    if hasattr(ms, "get_current_device"):
        try:
            current = ms.get_current_device()
            out["target"] = getattr(current, "device_target", None) or current[0]
            out["device_id"] = int(getattr(current, "device_id", current[1]))
            out["source"] = "mindspore.get_current_device()"
        except Exception:  # older signatures: fall through to get_context
            out = {}
    if not out:
        out["target"] = ms.get_context("device_target")
        out["device_id"] = int(ms.get_context("device_id"))
        out["source"] = "mindspore.get_context('device_target'/'device_id')"
    out["mode"] = mode_name(ms, ms.get_context("mode"))
    return out


def device_mismatches(requested: Dict[str, Any], observed: Dict[str, Any]) -> List[str]:
    """The rule of "runs where asked": where MindSpore's read-back differs from the request (target, device_id, mode)."""
    return [
        "%s: asked %s, MindSpore reports %s" % (key, requested.get(key), observed.get(key))
        for key in ("target", "device_id", "mode")
        if str(observed.get(key)) != str(requested.get(key))
    ]


def effective_config_check(ctx: JobContext, requested: Dict[str, Any]) -> Dict[str, Any]:
    """Emit the `effective config` check comparing the request with MindSpore's read-back."""
    observed = effective_device()
    mismatches = device_mismatches(requested, observed)
    role = ms_role_warning()
    evidence = {"requested": requested, "observed": observed, "ms_role": os.environ.get("MS_ROLE")}
    if mismatches:
        ctx.check(
            "effective-config",
            "effective config",
            Evidence.FAIL,
            "; ".join(mismatches),
            evidence=evidence,
            hint=role or "the run would not mean what the config says; stop and fix it",
        )
    else:
        detail = "MindSpore reports %s:%s, %s mode" % (observed["target"], observed["device_id"], observed["mode"])
        ctx.check("effective-config", "effective config", Evidence.PASS, detail, evidence=evidence, hint=role)
    return {"observed": observed, "mismatches": mismatches}


def require_device(
    ctx: JobContext, target: str, device_id: int, mode: str, after_set: Optional[Callable[[], Any]] = None
) -> Dict[str, Any]:
    """Select the device, read back what MindSpore uses (the `effective-config` check), fail unless it matches.

    `after_set` runs between the two (a data-parallel rank joins its cluster there). Returns the
    effective device {target, device_id, mode, source, set_with}.
    """
    how = set_device(target, device_id, mode)
    if after_set is not None:
        after_set()
    effective = effective_config_check(ctx, {"target": target, "device_id": device_id, "mode": mode})
    if effective["mismatches"]:
        raise JobFailed(
            "MindSpore does not run where asked: %s" % "; ".join(effective["mismatches"]),
            hint=ms_role_warning() or "check the environment that starts jobs",
            type_="DeviceError",
        )
    return dict(effective["observed"], set_with=how)


def peak_device_memory_mb(target: str) -> Dict[str, Any]:
    """{peak_device_mb, device_memory_note}: a real figure where the API gives one, else None + why."""
    if target == "CPU":
        return {"peak_device_mb": None, "device_memory_note": CPU_ONLY_MEMORY_NOTE}
    import mindspore as ms

    getter = None
    for holder in ("runtime", "hal"):  # runtime in 2.5+, hal in 2.3-2.4
        mod = getattr(ms, holder, None)
        if mod is not None and hasattr(mod, "max_memory_allocated"):
            getter = (mod.max_memory_allocated, "mindspore.%s.max_memory_allocated()" % holder)
            break
    if getter is None:
        return {"peak_device_mb": None, "device_memory_note": "this MindSpore has no max_memory_allocated API"}
    try:
        value = float(getter[0]())
    except Exception as exc:
        return {"peak_device_mb": None, "device_memory_note": "%s failed: %s" % (getter[1], exc)}
    if value <= 0:
        return {"peak_device_mb": None, "device_memory_note": "%s returned %s, not a measurement" % (getter[1], value)}
    return {"peak_device_mb": value / (1024.0 * 1024.0), "device_memory_note": "from " + getter[1]}


def sample_device_activity(ctx: JobContext) -> Dict[str, Any]:
    """Emit the `device activity` check now (jobs.common.device_activity): npu-smi process evidence on Ascend, not-run elsewhere."""
    env = ctx.cfg.env
    return device_activity.sample_device_activity(
        ctx,
        ctx.device,
        npu_smi=env.npu_smi,
        timeout_s=env.npu_smi_timeout_s,
        artifact_name="npu-smi-during-%s.txt" % ctx.meta.get("kind", "job"),
    )
