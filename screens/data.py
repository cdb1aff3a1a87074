"""The Data screen."""

from __future__ import annotations

from screens.kind_screen import KindScreen


class DataScreen(KindScreen):
    """Data: follows the latest `data` job."""

    view_name = "data"
    job_kind = "data"
    title_text = "Data"
