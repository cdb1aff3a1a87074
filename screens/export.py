"""The Export screen."""

from __future__ import annotations

from screens.kind_screen import KindScreen


class ExportScreen(KindScreen):
    """Export: follows the latest `export` job."""

    view_name = "export"
    job_kind = "export"
    title_text = "Export"
