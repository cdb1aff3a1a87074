"""One line under the status bar: the session's frozen candidate (run, epoch, checkpoint), or that none is frozen."""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual.widgets import Static


def candidate_text(app: Any, shown_run: Optional[str] = None) -> Text:
    """'candidate: train-002 epoch 5, checkpoint 3f2a…', and whether the run this screen shows is it."""
    cand = app.candidate()
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append("candidate ", style="bold")
    if cand is None:
        line.append("none frozen", style="yellow")
        line.append(" — " + app.freeze_hint(), style="dim")
        return line
    epoch = "" if cand.epoch is None else " epoch %d" % cand.epoch
    line.append("#%d %s%s · sha %s" % (cand.n, cand.run, epoch, cand.sha256[:10]))  # fits 80 columns with the note
    if shown_run and shown_run != cand.run:
        line.append(" · %s shown: not frozen" % shown_run, style="yellow")
    return line


class CandidateLine(Static):
    """The frozen candidate as one line; redrawn only when its text changes."""

    DEFAULT_CSS = """
    CandidateLine { height: 1; padding: 0 1; }
    """

    def refresh_from(self, app: Any, shown_run: Optional[str] = None) -> None:
        """Rebuild the line from the session's candidate file (the app caches it by size and time)."""
        text = candidate_text(app, shown_run)
        if text.plain != getattr(self, "_plain", None):
            self._plain = text.plain
            self.update(text, layout=False)
