"""The Environment screen: every check with its evidence level, the selected check in full, the devices."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from screens.base import WorkbenchScreen
from screens.widgets.evidence import badge
from screens.widgets.textgrid import Cell
from screens.widgets.words import clip_words
from workbench.ascend.chipstatus import CHIP_COLUMNS
from workbench.views.environment import EnvironmentView

HEALTH_STYLE = {"OK": "green", "Warning": "bold yellow"}
MIN_DETAIL_CHARS = 16  # of the one-line detail in the table; the pane shows it whole
LEVEL_CHARS = 7  # "NOT RUN", "BLOCKED"
TABLE_CHROME = 8  # cell padding of three columns and the vertical scrollbar
WIDE_FROM = 110  # terminal columns from which the detail pane sits beside the table
RAW_KEYS = ("raw",)


def _num(value: Any, fmt: str) -> str:
    return fmt % value if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _pair(value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return "%s / %s" % (_num(value[0], "%.0f"), _num(value[1], "%.0f"))
    return "—"


def health_text(health: str, plain: bool) -> Text:
    """A device's health, coloured (reverse video in low-bandwidth mode when not OK)."""
    if health == "OK":
        return Text(health, style="" if plain else HEALTH_STYLE["OK"])
    return Text(health, style="reverse" if plain else HEALTH_STYLE.get(health, "bold red"))


def compact_json(value: Any, indent: int = 0) -> str:
    """JSON with one key per line, but lists and dicts of plain values kept on one line."""
    pad = "  " * indent
    if isinstance(value, dict) and value and not _flat(value):
        inner = ",\n".join(
            "%s  %s: %s" % (pad, json.dumps(str(k)), compact_json(v, indent + 1)) for k, v in value.items()
        )
        return "{\n%s\n%s}" % (inner, pad)
    if isinstance(value, list) and value and not _flat(value):
        inner = ",\n".join("%s  %s" % (pad, compact_json(v, indent + 1)) for v in value)
        return "[\n%s\n%s]" % (inner, pad)
    return json.dumps(value, ensure_ascii=False, default=str)


def _flat(value: Any) -> bool:
    """A short container of plain values (fits one line)."""
    items = list(value.values()) if isinstance(value, dict) else list(value)
    plain = all(not isinstance(v, (dict, list)) for v in items)
    return plain and len(json.dumps(value, ensure_ascii=False, default=str)) <= 60


DEVICE_LABELS = ("NPU", "chip", "name", "health", "temp °C", "power W", "AICore %", "memory MB", "HBM MB")


def _labels(*names: str) -> List[Text]:
    """Column labels as text: DataTable reads a str label as markup, and its first markup loads rich's emoji table."""
    return [Text(name) for name in names]


def check_detail(check: Dict[str, Any]) -> Group:
    """The selected check in full: level, detail, hint, evidence and raw output, failed or not."""
    status = str(check.get("status"))
    head = Text()
    head.append_text(badge(status))
    head.append("  %s" % (check.get("title") or check.get("id")), style="bold")
    head.append("  [%s]" % check.get("id"), style="dim")
    parts: List[Any] = [head, Text(str(check.get("detail") or ""))]
    if check.get("hint"):
        hint = Text("next: ", style="bold yellow" if status in ("observed-fail", "blocked") else "bold")
        hint.append(str(check["hint"]))
        parts.append(hint)
    evidence = check.get("evidence")
    raw = None
    if isinstance(evidence, dict):
        raw = next((evidence[k] for k in RAW_KEYS if evidence.get(k)), None)
        evidence = {k: v for k, v in evidence.items() if k not in RAW_KEYS}
    if evidence:
        parts.append(Text("evidence", style="bold underline"))
        parts.append(Text(compact_json(evidence)))
    if raw:
        parts.append(Text("raw output", style="bold underline"))
        parts.append(Text(str(raw), style="dim"))
    return Group(*parts)


class EnvironmentScreen(WorkbenchScreen):
    """Is the stack what we think, and does the device really compute? Checks, detail, devices."""

    view_name = "environment"
    title_text = "Environment"
    CSS_PATH = "environment.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_FROM, "-wide")]
    BINDINGS = [Binding("r", "run_checks", "Re-run checks"), Binding("p", "run_probes", "Probes only")]
    # Nothing focused while composed, the checks at once when mounted: the body (focusable, first) used to take the
    # focus and give it up to the checks, two restyles of the whole screen before its first frame.
    AUTO_FOCUS: ClassVar[Optional[str]] = ""

    selected: Optional[str] = None

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="env-body"):
            yield Static("", id="env-runline")
            with Horizontal(id="env-main"):
                table: DataTable[Cell] = DataTable(id="env-checks", cursor_type="row", zebra_stripes=True)
                table.add_columns(*_labels("level", "check", "detail"))
                yield table
                with VerticalScroll(id="env-detail-box"):
                    yield Static("", id="env-detail")
            yield Static("", id="env-devices-title")  # the devices table goes under it once there are devices
            yield Static("", id="env-chips-title")  # and the chips table under this one
            yield Static("", id="env-processes")

    def on_mount(self) -> None:
        self.set_focus(self.query_one("#env-checks", DataTable), scroll_visible=False)  # arrows move through the checks
        self.AUTO_FOCUS = None  # type: ignore[misc]  # from now on Textual's default, as before

    # -- actions -------------------------------------------------------------------------------
    def action_run_checks(self) -> None:
        """Run the env job again (all checks, probes first)."""
        self.wb_app.start_job("env")

    def action_run_probes(self) -> None:
        """Run only the device probes (config override env.only_probes=true)."""
        self.wb_app.start_job("env", {"env": {"only_probes": True, "probes": True}})

    def select_check(self, check_id: str) -> None:
        """Show this check in the detail pane and put the table cursor on it."""
        self.selected = check_id
        table = self.query_one("#env-checks", DataTable)
        try:
            table.move_cursor(row=table.get_row_index(check_id))
        except Exception:  # not in the table (yet): the pane still follows the choice
            pass
        self._show_detail(self.view)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "env-checks" or getattr(self, "_filling", False):
            return
        self.selected = str(event.row_key.value)
        self._show_detail(self.view)

    # -- drawing -------------------------------------------------------------------------------
    def render_view(self, view: EnvironmentView) -> None:
        plain = self.wb_app.low_bandwidth
        self.query_one("#env-runline", Static).update(self._runline(view))
        self._fill_checks(view)
        self._show_detail(view)
        self._fill_devices(view, plain)
        self._fill_chips(view, plain)

    def _runline(self, view: EnvironmentView) -> Text:
        line = Text()
        if not view.jid:
            line.append(
                "no env job yet — r runs every check (device probes first), p runs only the device probes", style="dim"
            )
            return line
        line.append("%s " % view.jid, style="bold")
        line.append_text(badge(view.state or "running"))
        failed = view.counts().get("observed-fail", 0)
        if view.state == "ok" and failed:
            # "ok" says the job ran to its end; its checks are what it found
            line.append(
                " · the job ran to its end; %d check%s failed" % (failed, "" if failed == 1 else "s"), style="red"
            )
        if view.scope == "probes":
            line.append(" (probes only; other checks from %s)" % (view.full_jid or "no full run"), style="dim")
        dev = view.device
        if dev:
            line.append("  target %s:%s" % (dev.get("resolved"), dev.get("id")), style="bold")
            line.append(" — requested %s; %s" % (dev.get("requested"), dev.get("why")))
        counts = view.counts()
        line.append("\n")
        for status in ("observed-pass", "observed-fail", "blocked", "not-run"):
            line.append_text(badge(status))
            line.append(" %d  " % counts.get(status, 0))
        if view.progress:
            line.append("  %s" % view.progress.get("phase", ""), style="cyan")
        if view.error:
            # the message's head only: its whole text is the failing check's detail below
            line.append(
                "  %s: %s" % (view.error.get("type"), str(view.error.get("message")).split(": ")[0][:80]), style="red"
            )
        if view.notice:
            line.append("  %s" % view.notice, style="yellow")
        return line

    def _rows(self, view: EnvironmentView) -> List[Tuple[str, str, str, str]]:
        return [
            (
                str(c.get("id")),
                str(c.get("status")),
                str(c.get("title") or c.get("id")),
                " ".join(str(c.get("detail") or "").split()),
            )
            for c in view.ordered_checks()
        ]

    def on_resize(self, event: events.Resize) -> None:
        if self.app.size == getattr(self, "_filled_size", None):
            return  # the size the table was just filled at (the first resize after the mount)
        self._last_rows: Optional[Tuple[List[Tuple[str, str, str, str]], int]] = (
            None  # the detail column is cut to the terminal's width: cut it again
        )
        if self.is_mounted and self.app.screen is self:
            self._fill_checks(self.view)

    def _table_chars(self) -> int:
        """The checks table's width, from the terminal's (as the CSS lays it out), not from a layout pass."""
        width = self.app.size.width or 80
        if width >= WIDE_FROM:
            return (width - 3) * 3 // 5  # 3fr of the row, less the detail pane's border
        return width - 2

    def _fill_checks(self, view: EnvironmentView) -> None:
        """Rebuild the table only when a row changed; keep the cursor on the selected check."""
        table = self.query_one("#env-checks", DataTable)
        rows = self._rows(view)
        title_chars = max([len(r[2]) for r in rows] or [5])
        detail_chars = max(MIN_DETAIL_CHARS, self._table_chars() - LEVEL_CHARS - title_chars - TABLE_CHROME)
        if (rows, detail_chars) == getattr(self, "_last_rows", None):
            return
        self._last_rows = (rows, detail_chars)
        self._filled_size = self.app.size
        self._filling = True
        try:
            table.clear()
            for cid, status, title, detail in rows:
                short = clip_words(detail, detail_chars)
                table.add_row(badge(status), title, short, key=cid)
            ids = [r[0] for r in rows]
            if self.selected not in ids:
                self.selected = view.first_failing() or (ids[0] if ids else None)
            if self.selected in ids:
                table.move_cursor(row=ids.index(self.selected), animate=False)
        finally:
            self._filling = False

    def _show_detail(self, view: EnvironmentView) -> None:
        check = view.checks.get(self.selected or "")
        pane = self.query_one("#env-detail", Static)
        if check is None:
            pane.update(Text("select a check to see its evidence, raw output and hint", style="dim"))
            return
        pane.update(check_detail(check))

    def _fill_devices(self, view: EnvironmentView, plain: bool) -> None:
        devices = view.devices
        smi = view.checks.get("npu-smi") or {}
        title = Text("Devices (npu-smi)", style="bold")
        if not devices:
            title.append("  none listed", style="dim")
            if smi:
                title.append(" — ")
                title.append_text(badge(str(smi.get("status"))))
                title.append(" %s" % (smi.get("detail") or ""))
        self.query_one("#env-devices-title", Static).update(title)
        table = self._table("env-devices", DEVICE_LABELS, bool(devices))
        if table is not None:
            for d in devices:
                table.add_row(
                    str(d.get("npu")),
                    str(d.get("chip")),
                    str(d.get("name")),
                    health_text(str(d.get("health")), plain),
                    _num(d.get("temp_c"), "%.0f"),
                    _num(d.get("power_w"), "%.1f"),
                    _num(d.get("aicore_pct"), "%.0f"),
                    _pair(d.get("memory_mb")),
                    _pair(d.get("hbm_mb")),
                )
            table.display = bool(devices)
        procs = view.processes
        text = ""
        if procs:
            text = "processes: " + ", ".join(
                "NPU %s%s pid %s %s %s MB"
                % (
                    p.get("npu"),
                    "" if p.get("chip") is None else " chip %s" % p.get("chip"),
                    p.get("pid"),
                    p.get("name"),
                    _num(p.get("memory_mb"), "%.0f"),
                )
                for p in procs[:8]
            )
            if len(procs) > 8:
                text += " … (%d more)" % (len(procs) - 8)
        elif devices:
            text = "processes: none on the devices"
        self.query_one("#env-processes", Static).update(text)

    def _fill_chips(self, view: EnvironmentView, plain: bool) -> None:
        """Per chip (each card's MCU after its chips): health, temperature, power, AI Core, memory used/total."""
        rows = view.chip_rows
        title = Text("Chips (npu-smi info -t common|usages|health)", style="bold")
        errors = view.chip_errors
        if errors:
            title.append("  " + "; ".join(errors[:3]), style="dim")
        title_box = self.query_one("#env-chips-title", Static)
        title_box.update(title)
        title_box.display = bool(rows or errors)
        table = self._table("env-chips", [label for _, label in CHIP_COLUMNS], bool(rows))
        if table is not None:
            for row in rows:
                table.add_row(
                    *(health_text(row[key], plain) if key == "health" else row[key] for key, _ in CHIP_COLUMNS)
                )
            table.display = bool(rows)

    def _table(self, table_id: str, labels: Sequence[str], rows: bool) -> Optional[DataTable[Cell]]:
        """The devices or chips table, emptied; made and mounted under its title the first time it has rows (None
        until then): the screen of a machine without devices builds neither (both were built and hidden before)."""
        found = self.query("#" + table_id)
        if found:
            table = found.first(DataTable)
            table.clear()
            return table
        if not rows:
            return None
        table = DataTable(id=table_id, cursor_type="none", zebra_stripes=True, show_cursor=False)
        table.add_columns(*_labels(*labels))
        self.query_one("#env-body").mount(table, after="#%s-title" % table_id)
        return table
