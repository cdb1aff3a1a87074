"""The Alignment screen."""

from __future__ import annotations

from screens.kind_screen import KindScreen


class AlignmentScreen(KindScreen):
    """Alignment: follows the latest `align` job."""

    view_name = "alignment"
    job_kind = "align"
    title_text = "Alignment"
