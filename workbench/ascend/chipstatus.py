"""Per-chip status from `npu-smi info -t common|usages|health -i N`: health, temperature, power, AI Core, memory.

One call per sub-command and card (the all-chips form: some boards reject `-c`), then one
record per chip. The MCU's values (card temperature, card power on 310P) are kept apart and
never stand for a chip's. The env job calls read_card_status once per NPU; a telemetry
sampler calls read_chip_status for its own device, with the kinds it can afford.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from workbench.ascend.npusmi import classify_failure, error_text, parse_usages
from workbench.ascend.smiblocks import ChipRecords

RunNpuSmi = Callable[[Sequence[str]], Tuple[int, str, str, float]]
KINDS = ("common", "usages", "health")
TEMPERATURE_KEYS = ("Temperature(C)", "NPU Temperature (C)", "Chip Temperature(C)")
POWER_KEYS = ("NPU Real-time Power(W)", "Power Dissipation(W)")
HEALTH_KEYS = ("Health", "Health Status")
ERROR_CODE_KEYS = ("Error Code", "Error Codes")
AICORE_KEYS = ("Aicore Usage Rate(%)",)
# (field, capacity key, usage-rate key): -t usages prints a capacity and a rate, not used MB.
MEMORY_KINDS = (
    ("hbm_mb", "HBM Capacity(MB)", "HBM Usage Rate(%)"),
    ("memory_mb", "DDR Capacity(MB)", "DDR Usage Rate(%)"),
)
CHIP_COLUMNS = (
    ("device", "Device"),
    ("health", "Health"),
    ("temp", "Temp"),
    ("power", "Power"),
    ("aicore", "AI Core"),
    ("memory", "Memory used / total"),
)
DASH = "—"


def _first(record: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The first of `keys` present in the record with a usable value (NA counts as absent)."""
    for key in keys:
        value = record.get(key)
        if value is not None and value != "NA":
            return value
    return None


def _number(value: Any) -> Optional[float]:
    """A float, or None for text such as NA."""
    return value if isinstance(value, float) else None


def _used_total(records: Sequence[Mapping[str, Any]], capacity_key: str, rate_key: str) -> Optional[List[float]]:
    """[used, total] MB from a capacity and a usage rate (either record may hold the rate); None when no capacity."""
    capacity = next((_number(r.get(capacity_key)) for r in records if _number(r.get(capacity_key))), None)
    rate = next((_number(r.get(rate_key)) for r in records if _number(r.get(rate_key)) is not None), None)
    if not capacity or rate is None:
        return None
    return [float(round(capacity * rate / 100.0)), capacity]


def _code(value: Any) -> Optional[str]:
    """A health/error code as npu-smi printed it (text such as '80E01801'); None for none or NA."""
    text = None if value is None else str(value).strip()
    return text if text and text.upper() not in ("NA", "0", "00000000") else None


def _mcu_view(mcu: Mapping[str, Any]) -> Dict[str, Any]:
    """The MCU's own values."""
    return {
        "health": _first(mcu, HEALTH_KEYS),
        "error_code": _code(_first(mcu, ERROR_CODE_KEYS)),
        "temperature_c": _number(_first(mcu, TEMPERATURE_KEYS)),
        "power_w": _number(_first(mcu, POWER_KEYS)),
    }


def _chip_view(
    npu: int, chip: int, parts: Mapping[str, ChipRecords], mcu: Optional[Dict[str, Any]], errors: Dict[str, str]
) -> Dict[str, Any]:
    """One chip's status from the per-kind records."""
    rec = {kind: parts[kind].chips.get(chip, {}) for kind in parts}
    ordered = [rec.get(kind, {}) for kind in ("common", "usages", "health")]
    merged: Dict[str, Any] = {}
    for record in reversed(ordered):  # common wins over usages over health for a key both print
        merged.update(record)
    out = {
        "npu": npu,
        "chip": chip,
        "health": _first(rec.get("health", {}), HEALTH_KEYS),
        "error_code": _code(_first(rec.get("health", {}), ERROR_CODE_KEYS)),
        "temperature_c": _number(_first(merged, TEMPERATURE_KEYS)),
        "power_w": _number(_first(merged, POWER_KEYS)),
        "card_power_w": (mcu or {}).get("power_w"),
        "aicore_pct": _number(_first(merged, AICORE_KEYS)),
        "mcu": mcu,
        "errors": dict(errors),
    }
    for name, capacity_key, rate_key in MEMORY_KINDS:
        out[name] = _used_total([rec.get("usages", {}), rec.get("common", {})], capacity_key, rate_key)
    return out


def read_card_status(run_npusmi: RunNpuSmi, npu: int, kinds: Sequence[str] = KINDS) -> Dict[str, Any]:
    """Every chip of NPU `npu`: {npu, chips: [status per chip], mcu, errors}.

    `run_npusmi(args)` returns (rc, stdout, stderr, elapsed_s), e.g. a functools.partial of
    npusmi.run_npu_smi with its lock, time limit and command bound. A kind whose run fails
    is named in `errors` (code and npu-smi's words) and its values stay None.
    """
    parts: Dict[str, ChipRecords] = {}
    errors: Dict[str, str] = {}
    for kind in kinds:
        rc, out, err, _ = run_npusmi(["info", "-t", kind, "-i", str(int(npu))])
        failure = classify_failure(rc, out, err)
        records = parse_usages(out) if failure is None else ChipRecords()
        if failure is None and not records.chips and records.mcu is None:
            failure = {"code": "no-chip-record", "cause": "no chip record in the output"}
        if failure is not None:
            errors[kind] = "%s: %s" % (failure["code"], error_text(out, err) or failure["cause"])
        parts[kind] = records
    mcu_fields: Dict[str, Any] = {}
    for kind in ("health", "usages", "common"):  # common's MCU values win (temperature, card power)
        mcu_fields.update((parts.get(kind) or ChipRecords()).mcu or {})
    mcu = _mcu_view(mcu_fields) if mcu_fields else None
    chip_ids = sorted({c for records in parts.values() for c in records.chips})
    return {
        "npu": int(npu),
        "chips": [_chip_view(int(npu), c, parts, mcu, errors) for c in chip_ids],
        "mcu": mcu,
        "errors": errors,
    }


def read_chip_status(run_npusmi: RunNpuSmi, npu: int, chip: int, kinds: Sequence[str] = KINDS) -> Dict[str, Any]:
    """One chip's {npu, chip, health, error_code, temperature_c, power_w, card_power_w, aicore_pct, hbm_mb, memory_mb, mcu, errors}.

    `power_w` is the chip's own reading; on cards that report power only for the whole card
    (310P) it is None and `card_power_w` holds the MCU's. Memory values are [used, total] MB.
    """
    card = read_card_status(run_npusmi, npu, kinds)
    found = next((c for c in card["chips"] if c["chip"] == int(chip)), None)
    if found is not None:
        return found
    empty = {"common": ChipRecords()}
    errors = dict(card["errors"])
    if not errors:
        errors["chip"] = "npu-smi printed no record for NPU %d chip %d" % (int(npu), int(chip))
    return _chip_view(int(npu), int(chip), empty, card["mcu"], errors)


def _text(value: Optional[float], unit: str) -> str:
    """'74 °C', '45.2 W', or a dash."""
    return DASH if value is None else "%g %s" % (value, unit)


def _memory_text(status: Mapping[str, Any]) -> str:
    """'2867 / 8192 MB' (HBM first, where a chip has it)."""
    pair = status.get("hbm_mb") or status.get("memory_mb")
    return DASH if not pair else "%g / %g MB" % (pair[0], pair[1])


def chip_status_rows(cards: Sequence[Mapping[str, Any]]) -> List[Dict[str, str]]:
    """The Environment screen's per-chip rows (CHIP_COLUMNS keys), each card's MCU after its chips."""
    rows = []
    for card in cards:
        for status in card["chips"]:
            power = _text(status["power_w"], "W")
            if status["power_w"] is None and status.get("card_power_w") is not None:
                power = "%g W (card)" % status["card_power_w"]
            health = status["health"] or DASH
            if status.get("error_code"):
                health += " (%s)" % status["error_code"]
            rows.append(
                {
                    "device": "NPU %s chip %s" % (status["npu"], status["chip"]),
                    "health": health,
                    "temp": _text(status["temperature_c"], "°C"),
                    "power": power,
                    "aicore": _text(status["aicore_pct"], "%"),
                    "memory": _memory_text(status),
                }
            )
        mcu = card.get("mcu")
        if mcu:
            rows.append(
                {
                    "device": "NPU %s MCU" % card["npu"],
                    "health": mcu["health"] or DASH,
                    "temp": _text(mcu["temperature_c"], "°C"),
                    "power": _text(mcu["power_w"], "W"),
                    "aicore": DASH,
                    "memory": DASH,
                }
            )
    return rows
