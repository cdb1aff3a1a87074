"""The one rule for numeric command-line arguments: a finite number in its range, refused before anything acts."""

from __future__ import annotations

import argparse
import math
from typing import Callable, Optional, Union

Number = Union[int, float]


def number(
    low: Optional[Number] = None, high: Optional[Number] = None, integer: bool = False
) -> Callable[[str], Number]:
    """An argparse `type` that accepts only a finite number within [low, high] (an int when `integer`)."""
    what = "an integer" if integer else "a finite number"
    if low is not None and high is not None:
        what += " from %s to %s" % (low, high)
    elif low is not None:
        what += " >= %s" % low
    elif high is not None:
        what += " <= %s" % high

    def parse(text: str) -> Number:
        try:
            value: Number = int(text, 10) if integer else float(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError("%r is not %s" % (text, what))
        if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError("%r is not %s" % (text, what))
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse
