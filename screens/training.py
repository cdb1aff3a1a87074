"""The Training screen."""

from __future__ import annotations

from screens.kind_screen import KindScreen


class TrainingScreen(KindScreen):
    """Training: follows the latest `train` job."""

    view_name = "training"
    job_kind = "train"
    title_text = "Training"
