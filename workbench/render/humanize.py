"""Numbers for people: thousands grouped, durations and sizes with units, never 1.514e+04."""

from __future__ import annotations

import math
from typing import Any, Optional

MISSING = "-"


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def grouped(value: Any, decimals: int = 0) -> str:
    """15140.3 -> '15 140' (a space between thousands, as SI writes them)."""
    x = _finite(value)
    if x is None:
        return MISSING
    text = "{:,.{}f}".format(x, decimals)
    return text.replace(",", " ")


def ratio(value: Any, digits: int = 3) -> str:
    """A fraction such as an accuracy or F1: 0.8674 -> '0.867'."""
    x = _finite(value)
    return MISSING if x is None else "%.*f" % (digits, x)


def loss(value: Any) -> str:
    """A loss value with four significant digits, fixed-point: 0.3379, 2.303, 0.0004213."""
    x = _finite(value)
    if x is None:
        return MISSING
    if x == 0 or abs(x) >= 1e-4:
        return ("%.4g" % x) if abs(x) < 1e4 else grouped(x)
    return "%.2e" % x


def ms(value: Any) -> str:
    """Milliseconds: '3.3 ms', '16 ms', '0.42 ms', '1 250 ms'."""
    x = _finite(value)
    if x is None:
        return MISSING
    if abs(x) >= 100:
        return "%s ms" % grouped(x)
    if abs(x) >= 10:
        return "%.0f ms" % x
    if abs(x) >= 1:
        return "%.1f ms" % x
    return "%.2f ms" % x


def seconds(value: Any) -> str:
    """A duration: '0.8 s', '41 s', '3 min 05 s', '1 h 02 min'."""
    x = _finite(value)
    if x is None:
        return MISSING
    if x < 10:
        return "%.1f s" % x
    if x < 60:
        return "%.0f s" % x
    if x < 3600:
        return "%d min %02d s" % (int(x // 60), int(round(x % 60)) % 60)
    return "%d h %02d min" % (int(x // 3600), int((x % 3600) // 60))


def rate(value: Any, unit: str = "images/s") -> str:
    """A throughput: '15 140 images/s'."""
    x = _finite(value)
    return MISSING if x is None else "%s %s" % (grouped(x), unit)


def mebibytes(value: Any) -> str:
    """A memory figure in MB: '562 MB'."""
    x = _finite(value)
    return MISSING if x is None else "%s MB" % grouped(x)


def size(n_bytes: Any) -> str:
    """A file size: '25.0 kB', '1.2 MB', '812 B'."""
    x = _finite(n_bytes)
    if x is None:
        return MISSING
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if x >= scale:
            return "%.1f %s" % (x / scale, unit)
    return "%d B" % x


def percent(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage: 0.043 -> '4.3 %'."""
    x = _finite(value)
    return MISSING if x is None else "%.*f %%" % (digits, 100 * x)


def count(value: Any) -> str:
    """An integer count, grouped: '54 000'."""
    return grouped(value) if _finite(value) is not None else (MISSING if value is None else str(value))


def sci(value: Any) -> str:
    """A tolerance or a tiny difference: '1e-05', '3.2e-07', '0' (scientific is right here)."""
    x = _finite(value)
    if x is None:
        return MISSING
    return "0" if x == 0 else "%.2g" % x
