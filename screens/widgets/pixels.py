"""A grey image drawn with half blocks: two pixel rows per terminal row (▀ = upper fg, lower bg)."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:  # numpy is imported where an image is drawn: a Data screen without a preview never needs it
    import numpy as np

UPPER_HALF = "▀"
# Low-bandwidth mode: no colours, a few brightness levels, darkest first.
ASCII_RAMP = " .:+*#@"


def half_block_lines(pixels: np.ndarray) -> List[List[Segment]]:
    """Segments of a uint8 [H, W] image: each row is ▀ with fg = upper pixel grey, bg = lower pixel grey."""
    import numpy as np

    grey = _as_uint8(pixels)
    if grey.shape[0] % 2:
        grey = np.vstack([grey, np.zeros((1, grey.shape[1]), dtype=np.uint8)])
    lines = []
    for y in range(0, grey.shape[0], 2):
        pairs = list(zip(grey[y].tolist(), grey[y + 1].tolist()))
        segments: List[Segment] = []
        start = 0
        # One segment per run of equal pixel pairs: the dark background becomes a few long runs.
        for x in range(1, len(pairs) + 1):
            if x == len(pairs) or pairs[x] != pairs[start]:
                upper, lower = pairs[start]
                style = Style(color=Color.from_rgb(upper, upper, upper), bgcolor=Color.from_rgb(lower, lower, lower))
                segments.append(Segment(UPPER_HALF * (x - start), style))
                start = x
        lines.append(segments)
    return lines


def ascii_lines(pixels: np.ndarray, ramp: str = ASCII_RAMP) -> List[str]:
    """Plain characters of a uint8 [H, W] image: one character per two pixel rows, by their mean brightness."""
    import numpy as np

    grey = _as_uint8(pixels).astype(np.int32)
    if grey.shape[0] % 2:
        grey = np.vstack([grey, np.zeros((1, grey.shape[1]), dtype=np.int32)])
    mean = (grey[0::2] + grey[1::2]) / 2.0
    level = np.minimum((mean * len(ramp) / 256.0).astype(np.int64), len(ramp) - 1)
    return ["".join(ramp[i] for i in row) for row in level.tolist()]


def _as_uint8(pixels: np.ndarray) -> np.ndarray:
    import numpy as np

    grey = np.asarray(pixels)
    if grey.ndim != 2 or grey.dtype != np.uint8:
        raise ValueError("an image must be uint8 [H, W], got %s %s" % (grey.dtype, grey.shape))
    return grey


class HalfBlockImage(Widget):
    """Shows one grey uint8 image at its real pixel values (28×28 -> 28 columns × 14 rows)."""

    DEFAULT_CSS = """
    HalfBlockImage { width: 28; height: 14; }
    """

    def __init__(self, pixels: Optional[np.ndarray] = None, plain: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self._strips: List[Strip] = []
        self._width = 0
        self.show(pixels, plain)

    def show(self, pixels: Optional[np.ndarray], plain: bool = False) -> None:
        """Draw `pixels` (None clears); plain=True uses the ASCII ramp without colours."""
        if pixels is None:
            self._strips, self._width = [], 0
        else:
            if plain:
                self._strips = [Strip([Segment(line)]) for line in ascii_lines(pixels)]
            else:
                self._strips = [Strip(line) for line in half_block_lines(pixels)]
            self._width = int(_as_uint8(pixels).shape[1])
        self.refresh()

    def render_line(self, y: int) -> Strip:
        """Row y of the image, cropped or padded to the widget's width."""
        width = self.size.width
        if y < len(self._strips):
            strip = self._strips[y]
            return strip if width == self._width else strip.adjust_cell_length(width)
        return Strip.blank(width)
