"""The Training screen's live device panel: the job's own NPU chip as npu-smi sees it, one sparkline per reading."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from rich.text import Text
from textual.widgets import Static

from screens.widgets.spark import bar_rows, buckets

# (label, event field, unit, format); memory is drawn as used MB with the total beside the latest value
ROWS: Tuple[Tuple[str, str, str, str], ...] = (
    ("AI Core", "ai_core_pct", "%", "%.0f"),
    ("memory", "mem_used_mb", "MB", "%.0f"),
    ("temp", "temp_c", "°C", "%.0f"),
    ("power", "power_w", "W", "%.1f"),
)
# Shown only when a sample carries it: 310P cards measure power for the whole card, not per chip.
CARD_ROWS: Tuple[Tuple[str, str, str, str], ...] = (("card pwr", "card_power_w", "W", "%.1f"),)
SPARK_WIDTH = 40


def _series(samples: Sequence[Dict[str, Any]], field: str) -> List[float]:
    """The numeric readings of one field, oldest first (missing readings are skipped)."""
    return [float(s[field]) for s in samples if isinstance(s.get(field), (int, float))]


def panel_text(samples: Sequence[Dict[str, Any]], target: Optional[str], width: int = SPARK_WIDTH) -> Text:
    """The panel's text: a not-run line off Ascend, else a title and one sparkline row per reading."""
    text = Text()
    text.append("Device (npu-smi)", style="bold")
    if target is not None and target != "Ascend":
        text.append("  not-run: target %s" % target, style="dim")
        return text
    if not samples:
        text.append("  no sample yet" if target == "Ascend" else "  no training job", style="dim")
        return text
    last = samples[-1]
    health = "  health %s" % last["health"] if last.get("health") else ""
    text.append(
        "  NPU %s chip %s%s  %d samples, one a second at most"
        % (last.get("npu"), last.get("chip"), health, len(samples)),
        style="dim",
    )
    card_rows = tuple(row for row in CARD_ROWS if _series(samples, row[1]))
    for label, field, unit, fmt in ROWS + card_rows:
        values = _series(samples, field)
        text.append("\n%-8s " % label)
        if not values:
            text.append("—", style="dim")
            continue
        text.append(bar_rows(buckets(values, width), 1)[0].ljust(width), style="cyan")
        latest = (fmt % values[-1]) + " " + unit
        if field == "mem_used_mb" and isinstance(last.get("mem_total_mb"), (int, float)):
            latest = "%s / %.0f MB" % (fmt % values[-1], last["mem_total_mb"])
        text.append(" %s" % latest)
    return text


class DevicePanel(Static):
    """Live AI Core, memory, temperature and power of the training job's chip; `not-run` off Ascend."""

    DEFAULT_CSS = "DevicePanel { height: auto; padding: 0 1; display: none; }"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self._shown: Optional[Tuple[Any, ...]] = None

    def show(self, samples: Sequence[Dict[str, Any]], target: Optional[str]) -> None:
        """Redraw when the samples or the target changed (a cheap key: count, last sample, target)."""
        key = (len(samples), id(samples[-1]) if samples else None, target)
        if key == self._shown:
            return
        self._shown = key
        self.display = target is not None or bool(samples)  # no training job yet: nothing to say
        self.update(panel_text(samples, target))
