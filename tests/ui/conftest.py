"""UI tests run with animations off, at fixed sizes; they wait on conditions (`until`, `settled`), never on time."""

from __future__ import annotations

import os

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
