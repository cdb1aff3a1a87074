"""The Training screen: run form, live curves, perf panel, epochs, confusion matrix, per-class."""

from __future__ import annotations

import time
from statistics import fmean
from typing import Any, Dict, List, Optional

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.widgets import Button, Input, Select, Static

from screens.base import WorkbenchScreen
from screens.widgets.confusion import SHORT_NAMES, ConfusionGrid
from screens.widgets.evidence import badge
from screens.widgets.panel import Panel
from screens.widgets.spark import Spark
from screens.widgets.textgrid import text_grid
from workbench.metrics import upper_median
from workbench.views.training import TrainingView

SPARK_POINTS = 60  # short sparklines: cheap to redraw over SSH
EPOCH_ROWS = 12  # epochs shown before the panel has a size (the latest, and the best when it is older)
LIVE_PERF_S = 1.0  # the live step-time figures before the first perf event change at most this often


def _f(value: Any, fmt: str, unit: str = "") -> str:
    return (fmt % value) + unit if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def rank_rows(view: TrainingView, plain: bool = False) -> List[tuple]:
    """Data-parallel rows: each rank's recent step time (the slowest highlighted) and the global images/s."""
    if not view.rank_step_ms:
        return []
    slowest = view.slowest_rank
    ranks = Text()
    for n, (rank, ms) in enumerate(sorted(view.rank_step_ms.items())):
        if n:
            ranks.append("  ")
        style = ("reverse" if plain else "bold red") if rank == slowest else ""
        ranks.append("r%d %s" % (rank, _f(ms, "%.1f", " ms")), style=style)
    rows = [("per rank", ranks)]
    total = view.global_images_per_s()
    if total is not None:
        rows.append(("all ranks", "%.0f images/s (sum of %d)" % (total, len(view.rank_images_per_s()))))
    return rows


def perf_panel(view: TrainingView, plain: bool = False) -> Table:
    """Compile time, steady step times, throughput, memory, per-rank times and the evidence checks."""
    perf = view.perf
    steady = perf.get("steady") or {}
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True, min_width=14)
    t.add_column(no_wrap=True, overflow="ellipsis")
    compile_s = perf.get("first_step_s")
    if compile_s is None and view.compile_ms:
        compile_s = view.compile_ms[0] / 1000.0
    t.add_row("compile", _f(compile_s, "%.2f", " s") + ("  (+%d recompile)" % (len(view.compile_ms) - 1)
                                                         if len(view.compile_ms) > 1 else ""))
    t.add_row("steady", "median %s  p95 %s" % (_f(steady.get("median_ms", upper_median(view.step_ms)), "%.2f", " ms"),
                                               _f(steady.get("p95_ms"), "%.2f", " ms")))
    # In a data-parallel run these figures are rank 0's; the rank rows follow at once, inside the
    # panel's first lines, because the panel is cut at the chart height.
    t.add_row("r0 images/s" if view.rank_step_ms else "images/s", _f(steady.get("images_per_s"), "%.0f") + (
        "  (n=%s, warm-up %s)" % (steady.get("n"), perf.get("warmup_steps")) if steady else ""))
    for label, value in rank_rows(view, plain):
        t.add_row(label, value)
    t.add_row("host RSS", _f(perf.get("peak_host_rss_mb"), "%.0f", " MB (peak)"))
    dev = perf.get("peak_device_mb")
    t.add_row("device mem", _f(dev, "%.0f", " MB") if dev is not None else
              Text(str(perf.get("device_memory_note") or "not measured"), style="dim", no_wrap=True, overflow="ellipsis"))
    t.add_row("sync", str(perf.get("sync") or "—"))
    for check in view.checks.values():
        row = Text(no_wrap=True, overflow="ellipsis")
        row.append_text(badge(str(check.get("status"))))
        row.append(" " + str(check.get("detail") or ""))
        t.add_row(str(check.get("title") or check.get("id"))[:14], row)
    return t


def per_class_table(val: Dict[str, Any], plain: bool, weakest: Optional[int] = None) -> Text:
    """Precision, recall, F1 and support per class; the weakest class highlighted."""
    rows = val.get("per_class") or []
    cells = []
    for i, r in enumerate(rows):
        style = ("reverse" if plain else "bold red") if i == weakest else ""
        cells.append([Text(SHORT_NAMES[i] if i < len(SHORT_NAMES) else str(i), style=style),
                      "%.3f" % r.get("precision", 0), "%.3f" % r.get("recall", 0),
                      Text("%.3f" % r.get("f1", 0), style=style), str(r.get("support", ""))])
    return text_grid(["class", "P", "R", "F1", "n"], cells, [7, 5, 5, 5, 5], [False, True, True, True, True])


def profile_table(profile: Dict[str, Any]) -> Optional[Table]:
    """The top operators of a profiled window, when the run had one."""
    ops = profile.get("top_ops") or []
    if not ops:
        return None
    t = Table(title="profiled window: %s steps — %s" % (profile.get("steps"), profile.get("note") or ""),
              box=None, header_style="bold", title_justify="left")
    for name in ("operator", "type", "count", "total ms", "mean µs", "share"):
        t.add_column(name, justify="left" if name in ("operator", "type") else "right")
    for op in ops[:10]:
        t.add_row(str(op.get("name"))[:40], str(op.get("type", "")), str(op.get("count", "")),
                  _f(op.get("total_ms"), "%.2f"), _f(op.get("mean_us"), "%.1f"), _f(op.get("share"), "%.1f%%") if
                  op.get("share") is None or op.get("share") > 1 else _f(100 * op.get("share"), "%.1f%%"))
    return t


def epochs_table(view: TrainingView, plain: bool, rows: int = EPOCH_ROWS) -> Text:
    """The latest epochs (the best one kept on top when it scrolled out), one row each."""
    best = view.best
    shown = view.epochs[-rows:]
    if best is not None and best not in shown:
        shown = [best] + shown[1:]
    cells, styles = [], []
    for ev in shown:
        val = ev.get("val") or {}
        cells.append([str(ev.get("epoch")), _f(ev.get("train_loss"), "%.4f"), _f(val.get("accuracy"), "%.4f"),
                      _f(val.get("macro_f1"), "%.4f"), _f(ev.get("epoch_s"), "%.1f"), "★" if ev is best else ""])
        styles.append(("reverse" if plain else "bold") if ev is best else "")
    text = text_grid(["epoch", "train loss", "val acc", "macro-F1", "epoch s", "best"], cells,
                     [5, 10, 7, 8, 7, 4], [False, True, True, True, True, False], row_styles=styles)
    earlier = len(view.epochs) - len(shown)
    if not view.epochs:
        text.append("\nno epoch ended yet", style="dim")
    elif earlier:
        text.append("\n%d earlier epoch%s in the session record" % (earlier, "" if earlier == 1 else "s"), style="dim")
    return text


class TrainingScreen(WorkbenchScreen):
    """Start a run and watch it: curves, perf, epochs, confusion matrix and per-class metrics."""

    view_name = "training"
    title_text = "Training"
    CSS_PATH = "training.tcss"
    BINDINGS = [Binding("s", "start", "Start"), Binding("x", "stop", "Stop"),
                Binding("t", "test", "Test set"), Binding("p", "profile", "Profile run"),
                Binding("c", "compare", "Compare")]

    def compose_body(self) -> ComposeResult:
        cfg = self.app.cfg
        with VerticalScroll(id="body"):
            with HorizontalScroll(id="form"):
                yield Select([(m, m) for m in ("mlp", "cnn")], value=cfg["model"]["name"], allow_blank=False, id="f-model")
                yield Select([(m, m) for m in ("graph", "pynative")], value=cfg["train"]["mode"], allow_blank=False, id="f-mode")
                yield Select([(p, p) for p in ("fp32", "fp16", "amp-O1", "amp-O2")], value=cfg["train"]["precision"],
                             allow_blank=False, id="f-precision")
                yield Input(str(cfg["train"]["epochs"]), placeholder="epochs", id="f-epochs", type="integer")
                yield Input(str(cfg["train"]["batch_size"]), placeholder="batch", id="f-batch", type="integer")
                yield Input(str(cfg["train"]["lr"]), placeholder="lr", id="f-lr", type="number")
                yield Select([(d, d) for d in ("auto", "CPU", "GPU", "Ascend")], value=cfg["device"]["target"],
                             allow_blank=False, id="f-device")
                yield Button("Start", id="start", variant="success")
                yield Button("Stop", id="stop", variant="error")
            yield Static("", id="runline")
            yield Static("", id="error")
            with Horizontal(id="charts"):
                with Vertical(id="curves"):
                    yield Static("loss", id="loss-label", classes="chart-label")
                    yield Spark(id="loss", summary=fmean)
                    yield Static("step ms", id="step-label", classes="chart-label")
                    yield Spark(id="steps")
                yield Panel("", id="perf")
            with Horizontal(id="tables"):
                yield Panel(epochs_table(self.view, False), id="epochs")
                with Vertical(id="matrix-box"):
                    yield ConfusionGrid(id="matrix")
                    yield Panel("", id="perclass")
            yield Static("", id="profile")

    def on_resize(self, event) -> None:
        """Stack the panels on narrow terminals (80 columns), side by side on wide ones."""
        self.set_class(event.size.width < 110, "narrow")

    def form_overrides(self) -> Dict[str, Any]:
        """The run form as config overrides."""
        def value(widget_id: str) -> Any:
            return self.query_one("#" + widget_id).value

        def number(widget_id: str, cast):
            raw = value(widget_id)
            try:
                return cast(raw)
            except (TypeError, ValueError):
                return raw  # the config check names the key and the bad value
        return {"model": {"name": value("f-model")},
                "train": {"mode": value("f-mode"), "precision": value("f-precision"), "epochs": number("f-epochs", int),
                          "batch_size": number("f-batch", int), "lr": number("f-lr", float)},
                "device": {"target": value("f-device")}}

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()
        elif event.button.id == "stop":
            self.action_stop()

    def action_start(self, extra: Optional[Dict[str, Any]] = None) -> None:
        """Start a training job from the form."""
        overrides = self.form_overrides()
        if extra:
            overrides["train"].update(extra)
        self.app.start_job("train", overrides)

    def action_profile(self) -> None:
        """Start a run that profiles 20 steady steps after warm-up."""
        self.action_start({"profile": {"steps": 20}})

    def action_stop(self) -> None:
        """Stop the followed training job (it saves a resumable state)."""
        if self.view.jid and self.view.state == "running":
            self.app.cancel_job(self.view.jid)

    def action_test(self) -> None:
        """Evaluate the followed run's best checkpoint on the test set (counted)."""
        if not self.view.jid:
            self.app.notify("no training run to test", severity="warning")
            return
        if self.view.test_count() >= 1:
            self.app.notify("the test set was already evaluated %d time(s) for %s: every evaluation is recorded"
                            % (self.view.test_count(), self.view.jid), severity="warning", timeout=8)
        self.app.start_job("test", {"test": {"from": self.view.jid}})

    def action_compare(self) -> None:
        """Overlay a second run (this session's or an imported one) on the followed one."""
        from screens.compare_overlay import open_compare

        open_compare(self)

    def _changed(self, part: str, key: Any) -> bool:
        """True when a part's inputs differ from its last drawing (redraw only what changed)."""
        keys = self.__dict__.setdefault("_keys", {})
        if keys.get(part) == key:
            return False
        keys[part] = key
        return True

    def render_view(self, view: TrainingView) -> None:
        plain = self.app.low_bandwidth
        if self._changed("runline", (view.jid, view.status, view.state, id(view.progress), view.test_count(),
                                     int(view.eta_s() or 0))):
            self.query_one("#runline", Static).update(self._runline(view), layout=False)  # fixed size: no reflow
        if self._changed("error", (view.jid, id(view.error))):
            error = self.query_one("#error", Static)
            error.display = bool(view.error)
            if view.error:
                message = str(view.error.get("message") or "").split("\n")[0]
                text = Text("%s: %s" % (view.error.get("type"), message[:240] + ("…" if len(message) > 240 else "")),
                            style="bold red")
                if view.error.get("hint"):
                    text.append("\nhint: " + str(view.error["hint"]), style="yellow")
                error.update(text)
        if self._changed("curves", (view.jid, view.steps_seen)):
            self.query_one("#loss", Spark).data = view.loss
            self.query_one("#steps", Spark).data = list(view.step_ms)[-SPARK_POINTS:]
            last_loss = view.last_step.get("loss") if view.last_step else None
            self.query_one("#loss-label", Static).update("loss, whole run (%d step%s a point)  last %s  min %s" % (
                view.loss.per_point, "" if view.loss.per_point == 1 else "s", _f(last_loss, "%.4f"),
                _f(min(view.loss) if len(view.loss) else None, "%.4f")), layout=False)
            self.query_one("#step-label", Static).update(
                "step ms, steady only (compile %s, %d warm-up steps not shown)  last %s" % (
                    _f(view.compile_ms[0] / 1000.0 if view.compile_ms else None, "%.2f", " s"), view.warmup_seen,
                    _f(view.step_ms[-1] if view.step_ms else None, "%.2f")), layout=False)
        perf_key = (view.jid, id(view.perf), plain, tuple((k, c.get("status")) for k, c in view.checks.items()),
                    tuple(sorted(view.rank_step_ms.items())) if hasattr(view.rank_step_ms, "items") else None,
                    None if view.perf else int(time.monotonic() / LIVE_PERF_S))
        if self._changed("perf", perf_key):
            self.query_one("#perf", Panel).update(perf_panel(view, plain), layout=False)
        epochs = self.query_one("#epochs", Panel)
        rows = max(1, epochs.size.height - 2) if epochs.size.height else EPOCH_ROWS  # header and a note line
        if self._changed("epochs", (view.jid, len(view.epochs), plain, rows)):
            # Fixed-size panels updated without layout=True: a reflow repaints the whole screen.
            epochs.update(epochs_table(view, plain, rows), layout=False)
            val = view.latest_val
            rows = val.get("per_class") or []
            weakest = view.weakest_class()  # workbench.metrics' rule; no highlight when every class ties
            self.query_one("#matrix", ConfusionGrid).show(val.get("confusion"), plain=plain, weakest=weakest,
                                                          layout=False)
            self.query_one("#perclass", Panel).update(per_class_table(val, plain, weakest) if rows else "",
                                                      layout=False)
        if self._changed("profile", (view.jid, id(view.result))):
            prof = profile_table((view.result or {}).get("profile") or {})
            self.query_one("#profile", Static).update(prof if prof is not None else "")

    def _runline(self, view: TrainingView) -> Text:
        if not view.jid:
            return Text("no training run yet — set the form and press s (Start)", style="dim")
        started = view.started
        dev = started.get("device") or {}
        line = Text()
        line.append(view.jid + " ", style="bold")
        if ((view.cfg.get("data") or {}).get("source")) == "synthetic":
            line.append("SYNTHETIC DATA ", style="bold black on yellow")
        line.append_text(badge(view.state or "running"))
        line.append(" ")
        if view.status and view.state not in ("ok", "running", "failed") and ":" in view.status:
            line.append(view.status.split(":", 1)[-1].strip()[:60] + " ")
        prog = view.progress
        if prog:
            line.append("%s  %s/%s %s" % (prog.get("phase", ""), prog.get("done"), prog.get("total"), prog.get("unit", "")))
        eta = view.eta_s()
        if eta is not None and view.state == "running":
            line.append("  ETA %ds" % eta)
        line.append("  on %s (asked %s) %s %s" % (dev.get("resolved", "?"), dev.get("requested", "?"),
                                                 started.get("mode", ""), started.get("precision", "")))
        if view.test_count():
            line.append("  test set evaluated %d×" % view.test_count(), style="yellow" if view.test_count() > 1 else "")
        return line

