"""Which model serves which screen."""

from __future__ import annotations

from workbench.views.kind import KindView
from workbench.views.session import SessionView
from workbench.views.training import TrainingView

VIEWS = {
    "environment": lambda: KindView("env"),
    "data": lambda: KindView("data"),
    "training": TrainingView,
    "alignment": lambda: KindView("align"),
    "export": lambda: KindView("export"),
    "session": SessionView,
}
