"""The acceptance table: one row per layer (verdict, observed on, what decided it) and what to run next."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from screens.widgets.evidence import badge
from screens.widgets.words import Clipped

MISSING_SHOWN = 2  # lines of "what to run next" (the jobs table keeps its rows at 120x36); the rest is counted


def _deciding(layer: Dict[str, Any]) -> str:
    """The layer's summary without its repeated level prefix."""
    summary = str(layer.get("summary") or "")
    prefix = str(layer.get("verdict")) + ": "
    return summary[len(prefix) :] if summary.startswith(prefix) else summary


def acceptance_renderable(acc: Optional[Dict[str, Any]], shown: int = MISSING_SHOWN) -> Any:
    """The table and `shown` next steps as a rich renderable (a line saying why when there is nothing to judge).

    shown=0: the next steps are listed elsewhere (the Session screen's runnable list).
    """
    if not acc:
        return Text("acceptance: no jobs yet", style="dim")
    target = acc.get("target") or {}
    table = Table(box=None, expand=True, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("layer", width=11, no_wrap=True)
    table.add_column("verdict", width=8, no_wrap=True)
    table.add_column("on", width=11, no_wrap=True, overflow="ellipsis")
    table.add_column("deciding evidence", ratio=1, no_wrap=True, overflow="ellipsis")
    for layer in acc.get("layers") or []:
        table.add_row(
            str(layer.get("layer")),
            badge(str(layer.get("verdict"))),
            Clipped(",".join(layer.get("observed_on") or []) or "-"),
            Clipped(_deciding(layer)),
        )
    asked = "asked %s" % target.get("requested") if target.get("requested") else "no job has resolved a device yet"
    title = Text.assemble(
        ("Acceptance ", "bold"),
        badge(str(acc.get("overall"))),
        ("  target %s (%s)" % (target.get("device"), asked), "dim"),
    )
    missing, seen = [], set()
    for lay in acc.get("layers") or []:
        for need in lay.get("missing") or []:
            how = (need.get("key") or need.get("command"), need.get("command"))
            if how not in seen:  # one line per key: `s` on the Training screen produces several checks
                seen.add(how)
                missing.append((lay["layer"], need))
    if shown and len(missing) > shown:
        title.append("  · %d more to run: ms-workbench accept" % (len(missing) - shown), style="dim")
    lines: List[Any] = [title, table]
    for layer, need in missing[:shown]:
        how = need.get("key") or need.get("command")
        text = Text.assemble(
            ("  next (%s) " % layer, "dim"),
            (str(how), "bold cyan"),
            ("  %s" % need.get("command") if need.get("key") else "", "dim"),
        )
        text.no_wrap, text.overflow = True, "ellipsis"
        lines.append(text)
    return Group(*lines)


class AcceptanceTable(Static):
    """The session's acceptance, redrawn only when the verdict data changed."""

    DEFAULT_CSS = """
    AcceptanceTable { height: auto; max-height: 11; padding: 0 1; border-bottom: solid $primary-darken-2; }
    """

    def __init__(self, shown: int = MISSING_SHOWN, **kwargs: Any) -> None:
        super().__init__(acceptance_renderable(None), **kwargs)
        self.shown = shown  # next-step lines drawn under the table
        self.acceptance: Optional[Dict[str, Any]] = None
        """The acceptance dict last shown (workbench.acceptance.verdict.evaluate's shape)."""

    def show(self, acc: Optional[Dict[str, Any]]) -> None:
        """Show this acceptance (a no-op when it is what is already shown)."""
        if acc == self.acceptance:
            return
        self.acceptance = acc
        self.update(acceptance_renderable(acc, self.shown))
