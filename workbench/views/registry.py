"""Which model serves which screen."""

from __future__ import annotations

from workbench.views.alignment import AlignmentView
from workbench.views.data import DataView
from workbench.views.environment import EnvironmentView
from workbench.views.export import ExportView
from workbench.views.session import SessionView
from workbench.views.shift import ShiftView
from workbench.views.training import TrainingView

VIEWS = {
    "environment": EnvironmentView,
    "data": DataView,
    "training": TrainingView,
    "alignment": AlignmentView,
    "export": ExportView,
    "session": SessionView,
    "shift": ShiftView,
}
