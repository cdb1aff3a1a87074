"""The Environment screen."""

from __future__ import annotations

from screens.kind_screen import KindScreen


class EnvironmentScreen(KindScreen):
    """Environment: follows the latest `env` job."""

    view_name = "environment"
    job_kind = "env"
    title_text = "Environment"
