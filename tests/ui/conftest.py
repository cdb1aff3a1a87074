"""UI tests run with animations off, at fixed sizes."""

import os

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
