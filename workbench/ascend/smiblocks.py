"""Split `npu-smi info -t <type> -i N [-c C]` output into one record per chip, the MCU apart.

On a card with several chips (310P Duo, 310 x4, A3) these outputs print a header (NPU ID,
Chip Count), then one block per chip and often an MCU block, all with the same keys, so a
flat key/value read lets the last block win. The vendor's layouts differ by type: `common`
and `health` start a chip's block with "Chip ID", `usages`, `temp` and `power` end it with
"Chip ID"; the MCU block carries "Chip Name : mcu" (or "MCU") at its start or its end.
Blocks are normally separated by blank lines; when they are not, a repeated key or a second
"Chip ID" starts the next record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

HEADER_KEYS = ("NPU ID", "Chip Count", "Total Count")
# Values that are codes, never quantities: '80E01801' would read as 8e1801 (infinity).
TEXT_KEYS = ("Error Code", "Error Codes")
_DECIMAL_RE = re.compile(r"[+-]?\d+(?:\.\d+)?")
MCU_NAMES = ("mcu",)


@dataclass
class ChipRecords:
    """One `-t` output: the card's header and fields, a record per chip, and the MCU's record."""

    npu: Optional[int] = None
    chip_count: Optional[int] = None
    card: Dict[str, Any] = field(default_factory=dict)
    chips: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    mcu: Optional[Dict[str, Any]] = None
    unparsed: List[str] = field(default_factory=list)


def decimal(text: str) -> Optional[float]:
    """Float of a plain decimal such as 45.2 or -3; None for NA, hex codes ('80E01801'), '1e5' and the like."""
    return float(text) if _DECIMAL_RE.fullmatch(text.strip()) else None


def _value(text: str, numbers: bool, key: str = "") -> Any:
    """The printed value; a float when `numbers` and it is a plain decimal (NA and codes stay text)."""
    number = decimal(text) if numbers and key not in TEXT_KEYS else None
    return text if number is None else number


def _blocks(text: str, unparsed: List[str]) -> List[List[Tuple[str, str]]]:
    """(key, value) runs between blank lines; '#' lines are skipped, other lines without ':' noted."""
    blocks: List[List[Tuple[str, str]]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            blocks.append([])
            continue
        if stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition(":")
        if not sep or not key.strip():
            unparsed.append(line.rstrip())
            continue
        blocks[-1].append((key.strip(), value.strip()))
    return [block for block in blocks if block]


def _is_mcu(record: List[Tuple[str, str]]) -> bool:
    """Does this record describe the card's MCU (Chip Name or Chip Type 'mcu')?"""
    return any(k in ("Chip Name", "Chip Type") and v.strip().lower() in MCU_NAMES for k, v in record)


def _records(block: List[Tuple[str, str]]) -> List[List[Tuple[str, str]]]:
    """Cut one block into records: at a repeated key, at a leading "Chip ID" after another,
    after a trailing "Chip ID", and before an MCU name that follows a chip's record."""
    records: List[List[Tuple[str, str]]] = []
    current: List[Tuple[str, str]] = []
    for key, value in block:
        keys = [k for k, _ in current]
        leading = bool(current) and current[0][0] == "Chip ID"
        new_mcu = key == "Chip Name" and value.lower() in MCU_NAMES and "Chip ID" in keys and "Chip Type" not in keys
        if current and (key in keys or new_mcu):
            records.append(current)
            current = []
        current.append((key, value))
        if key == "Chip ID" and len(current) > 1 and not leading:
            records.append(current)  # trailing Chip ID: it closes this chip's record
            current = []
    if current:
        records.append(current)
    return records


def parse_chip_records(text: str, chip: Optional[int] = None, numbers: bool = False) -> ChipRecords:
    """Parse a `-t` output into ChipRecords.

    `chip` is the `-c C` that was asked for: such outputs print one chip without a "Chip ID"
    line, and their fields then belong to that chip (unless they describe the MCU).
    """
    out = ChipRecords()
    for block in _blocks(text, out.unparsed):
        body = []
        for key, value in block:
            if key in HEADER_KEYS:
                number = _value(value, True)
                if key == "NPU ID" and isinstance(number, float):
                    out.npu = int(number)
                elif key == "Chip Count" and isinstance(number, float):
                    out.chip_count = int(number)
                else:
                    out.card[key] = _value(value, numbers)
            else:
                body.append((key, value))
        for record in _records(body):
            fields = {k: _value(v, numbers, k) for k, v in record if k != "Chip ID"}
            chip_ids = [v for k, v in record if k == "Chip ID"]
            if _is_mcu(record):
                out.mcu = dict(out.mcu or {}, **fields)
            elif chip_ids and chip_ids[0].isdigit():
                out.chips.setdefault(int(chip_ids[0]), {}).update(fields)
            elif chip is not None:
                out.chips.setdefault(int(chip), {}).update(fields)
            else:
                out.card.update(fields)
    return out
