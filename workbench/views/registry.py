"""Which model serves which screen."""

from __future__ import annotations

from workbench.views.kind import KindView
from workbench.views.session import SessionView

VIEWS = {
    "environment": lambda: KindView("env"),
    "data": lambda: KindView("data"),
    "training": lambda: KindView("train", "test"),
    "alignment": lambda: KindView("align"),
    "export": lambda: KindView("export"),
    "session": SessionView,
}
