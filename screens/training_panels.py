"""The Training screen's panels as rich renderables: perf, epochs, per-class, profile, chart labels, test result."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from rich.table import Table
from rich.text import Text

from screens.widgets.confusion import SHORT_NAMES
from screens.widgets.evidence import badge
from screens.widgets.spark import CLIPPED
from screens.widgets.textgrid import Cell, text_grid
from workbench.analysis.metrics import weakest_class
from workbench.analysis.trainstate import describe as describe_flag
from workbench.views.chart import WindowStats, YRange
from workbench.views.training import TrainingView

EPOCH_ROWS = 12  # epochs shown before the panel has a size (the latest, and the best when it is older)


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
    rows: List[Tuple[str, Cell]] = [("per rank", ranks)]
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
    t.add_row(
        "compile",
        _f(compile_s, "%.2f", " s")
        + ("  (+%d recompile)" % (len(view.compile_ms) - 1) if len(view.compile_ms) > 1 else ""),
    )
    live = view.step_window()  # the step chart's own figures, so the pane and the chart never disagree
    t.add_row(live.window, "median %s  p95 %s" % (_f(live.median, "%.2f", " ms"), _f(live.p95, "%.2f", " ms")))
    if steady:  # the job's own figures, over a window it names
        scope = perf.get("scope") or "run"
        t.add_row(
            "job, %s" % ("epoch %s" % perf.get("epoch") if scope == "epoch" else scope),
            "median %s  p95 %s  (%s steps of the %s)"
            % (
                _f(steady.get("median_ms"), "%.2f", " ms"),
                _f(steady.get("p95_ms"), "%.2f", " ms"),
                steady.get("n"),
                scope,
            ),
        )
    # In a data-parallel run these figures are rank 0's; the rank rows follow at once, inside the
    # panel's first lines, because the panel is cut at the chart height.
    t.add_row(
        "r0 images/s" if view.rank_step_ms else "images/s",
        _f(steady.get("images_per_s"), "%.0f")
        + ("  (n=%s, warm-up %s)" % (steady.get("n"), perf.get("warmup_steps")) if steady else ""),
    )
    for label, value in rank_rows(view, plain):
        t.add_row(label, value)
    t.add_row("host RSS", _f(perf.get("peak_host_rss_mb"), "%.0f", " MB (peak)"))
    dev = perf.get("peak_device_mb")
    t.add_row(
        "device mem",
        _f(dev, "%.0f", " MB")
        if dev is not None
        else Text(
            str(perf.get("device_memory_note") or "not measured"), style="dim", no_wrap=True, overflow="ellipsis"
        ),
    )
    t.add_row("sync", str(perf.get("sync") or "—"))
    for check in view.checks.values():
        row = Text(no_wrap=True, overflow="ellipsis")
        row.append_text(badge(str(check.get("status"))))
        row.append(" " + str(check.get("detail") or ""))
        t.add_row(str(check.get("title") or check.get("id"))[:14], row)
    return t


def weakest_shown(val: Dict[str, Any]) -> Optional[int]:
    """The shown epoch's class with the lowest F1 by workbench.analysis.metrics' rule (None when none, or all tie)."""
    rows = val.get("per_class") or []
    f1 = [r.get("f1") for r in rows]
    if not rows or any(type(x) not in (int, float) for x in f1) or min(f1) == max(f1):
        return None
    return weakest_class(val)


def per_class_table(val: Dict[str, Any], plain: bool, weakest: Optional[int] = None) -> Text:
    """Precision, recall, F1 and support per class; the weakest class highlighted."""
    rows = val.get("per_class") or []
    cells: List[List[Cell]] = []
    for i, r in enumerate(rows):
        style = ("reverse" if plain else "bold red") if i == weakest else ""
        cells.append(
            [
                Text(SHORT_NAMES[i] if i < len(SHORT_NAMES) else str(i), style=style),
                "%.3f" % r.get("precision", 0),
                "%.3f" % r.get("recall", 0),
                Text("%.3f" % r.get("f1", 0), style=style),
                str(r.get("support", "")),
            ]
        )
    return text_grid(["class", "P", "R", "F1", "n"], cells, [7, 5, 5, 5, 5], [False, True, True, True, True])


def profile_table(profile: Dict[str, Any]) -> Optional[Table]:
    """The top operators of a profiled window, when the run had one."""
    ops = profile.get("top_ops") or []
    if not ops:
        return None
    t = Table(
        title="profiled window: %s steps — %s" % (profile.get("steps"), profile.get("note") or ""),
        box=None,
        header_style="bold",
        title_justify="left",
    )
    for name in ("operator", "type", "count", "total ms", "mean µs", "share"):
        t.add_column(name, justify="left" if name in ("operator", "type") else "right")
    for op in ops[:10]:
        t.add_row(
            str(op.get("name"))[:40],
            str(op.get("type", "")),
            str(op.get("count", "")),
            _f(op.get("total_ms"), "%.2f"),
            _f(op.get("mean_us"), "%.1f"),
            _f(op.get("share"), "%.1f%%")
            if op.get("share") is None or op.get("share") > 1
            else _f(100 * op.get("share"), "%.1f%%"),
        )
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
        cells.append(
            [
                str(ev.get("epoch")),
                _f(ev.get("train_loss"), "%.4f"),
                _f(val.get("accuracy"), "%.4f"),
                _f(val.get("macro_f1"), "%.4f"),
                _f(ev.get("epoch_s"), "%.1f"),
                "★" if ev is best else "",
            ]
        )
        styles.append(("reverse" if plain else "bold") if ev is best else "")
    text = text_grid(
        ["epoch", "train loss", "val acc", "macro-F1", "epoch s", "best"],
        cells,
        [5, 10, 7, 8, 7, 4],
        [False, True, True, True, True, False],
        row_styles=styles,
    )
    earlier = len(view.epochs) - len(shown)
    if not view.epochs:
        text.append("\nno epoch ended yet", style="dim")
    elif earlier:
        text.append("\n%d earlier epoch%s in the session record" % (earlier, "" if earlier == 1 else "s"), style="dim")
    return text


def loss_label(view: TrainingView, scale: Optional[YRange] = None) -> str:
    """The loss chart's caption: what a point is, the last value, the y-range drawn (taken from the points after
    compile and warm-up) and how many of those first points lie above it, marked with CLIPPED."""
    points = list(view.loss)
    per = view.loss.per_point
    lo, hi = (scale.lo, scale.hi) if scale is not None else (min(points, default=None), max(points, default=None))
    text = "loss, a point = %s: last %s y %s–%s" % (
        "1 step" if per == 1 else "mean of %d steps" % per,
        _f(points[-1] if points else None, "%.3f"),
        _f(lo, "%.3f"),
        _f(hi, "%.3f"),
    )
    if scale is not None and scale.clipped:
        text += " %s %d warm-up" % (CLIPPED, scale.clipped)
    return text


def step_label(stats: WindowStats, width: int = 0) -> str:
    """The step-time chart's caption: its window (steady steps: compile and warm-up left out), what a bar is,
    the y-range and the window's median and p95: the figures of the perf pane's first steady row."""
    per = -(-stats.n // width) if width and stats.n > width else 1
    return "step ms, %s, bar = %s: %s–%s med %s p95 %s" % (
        stats.window,
        "1 step" if per == 1 else "max of %d" % per,
        _f(stats.min, "%.1f"),
        _f(stats.max, "%.1f"),
        _f(stats.median, "%.1f"),
        _f(stats.p95, "%.1f"),
    )


def epochs_summary(view: TrainingView) -> Text:
    """One line that is always on screen: the best epoch and the newest one."""
    line = Text(no_wrap=True, overflow="ellipsis")
    if not view.epochs:
        line.append("no epoch ended yet", style="dim")
        return line
    best, newest = view.best, view.epochs[-1]
    for label, ev, style in (("best", best, "bold"), ("newest", newest, "")):
        if ev is None:
            continue
        if label == "newest" and ev is best:
            line.append("  (newest is the best)", style="dim")
            break
        val = ev.get("val") or {}
        line.append(
            "%s%s: epoch %s acc %s F1 %s"
            % (
                " │ " if label == "newest" else "",
                label,
                ev.get("epoch"),
                _f(val.get("accuracy"), "%.4f"),
                _f(val.get("macro_f1"), "%.4f"),
            ),
            style=style,
        )
    return line


def matrix_epoch(view: TrainingView, best: bool) -> Optional[Dict[str, Any]]:
    """The epoch whose confusion matrix is shown: the best one or the last one."""
    if not view.epochs:
        return None
    return (view.best or view.epochs[-1]) if best else view.epochs[-1]


def matrix_label(view: TrainingView, best: bool) -> str:
    """Which epoch the confusion matrix shows, and the key that toggles it."""
    ev = matrix_epoch(view, best)
    if ev is None:
        return "confusion matrix (validation): no epoch yet"
    return "confusion (validation), epoch %s = the %s epoch  (b: %s)" % (
        ev.get("epoch"),
        "best" if best else "last",
        "last" if best else "best",
    )


def test_results(view: TrainingView) -> List[Dict[str, Any]]:
    """The test-set evaluations of the followed run, oldest first."""
    return [t for t in view.tests if t.get("from") in (view.jid, None)]


def test_line(view: TrainingView) -> Text:
    """The followed run's test-set result: accuracy, macro-F1, checkpoint, epoch and how many evaluations."""
    results = test_results(view)
    line = Text()  # wraps at word boundaries on narrow terminals (the line is two rows high there)
    if not results:
        line.append("test set: not evaluated (t: the best checkpoint, once per session)", style="dim")
        return line
    last = results[-1]
    ckpt = str((last.get("checkpoint") or {}).get("path") or "best.ckpt").rsplit("/", 1)[-1]
    count = last.get("test_evaluations") or len(results)
    line.append("test set: ", style="bold")
    line.append(
        "acc %s  macro-F1 %s" % (_f(last.get("accuracy"), "%.4f"), _f(last.get("macro_f1"), "%.4f")), style="bold"
    )
    line.append("  evaluated %s×" % count, style="bold yellow" if isinstance(count, int) and count > 1 else "")
    line.append(
        "  %s, epoch %s of %s (%s)" % (ckpt, last.get("best_epoch"), last.get("from") or view.jid, last.get("jid"))
    )
    return line


SPARK_BLOCKS = "▁▂▃▄▅▆▇█"
LAYER_SPARK = 10  # samples in a layer's gradient-norm sparkline


def log_spark(values: List[float], width: int = LAYER_SPARK) -> str:
    """A one-line sparkline of positive values on a log scale (0 and below drawn as the lowest block)."""
    shown = [v for v in values[-width:]]
    logs = [math.log10(v) if v > 0 else None for v in shown]
    known = [v for v in logs if v is not None]
    if not known:
        return ""
    lo, hi = min(known), max(known)
    span = (hi - lo) or 1.0
    top = len(SPARK_BLOCKS) - 1
    return "".join(SPARK_BLOCKS[0 if v is None else int(round((v - lo) / span * top))] for v in logs)


def _flag_style(plain: bool) -> str:
    return "reverse" if plain else "bold red"


def layers_panel(view: TrainingView, plain: bool = False) -> Text:
    """Per parameter |w|, |grad|, update ratio, non-finite share, a gradient-norm sparkline and flags; loss scale; origin."""
    st = view.train_state
    out = Text(no_wrap=True, overflow="ellipsis")
    if st.count:
        skipped = (
            " (%d skipped by the loss scale, last at step %s: not judged)" % (st.skipped, st.last_skipped)
            if st.skipped
            else ""
        )
        out.append(
            "layers: every %s steps, %d samples to step %s%s; Δw/w = |Δw|/|w| of a step\n"
            % (view.monitor_every or "?", st.count, st.last_step, skipped),
            style="bold",
        )
        cells, styles = [], []
        for name in st.names:
            row = st.latest.get(name) or {}
            share = row.get("nonfinite")
            flags = st.param_flags(name)
            cells.append(
                [
                    name,
                    _f(row.get("weight_norm"), "%.3g"),
                    _f(row.get("grad_norm"), "%.3g"),
                    _f(row.get("update_ratio"), "%.2e"),
                    _f(100 * share, "%.0f%%") if share is not None else "—",
                    log_spark(list(st.grad_history.get(name) or [])),
                    Text(", ".join(flags), style=_flag_style(plain)) if flags else "",
                ]
            )
            styles.append("")
        out.append_text(
            text_grid(
                ["param", "|w|", "|grad|", "Δw/w", "nonfin", "|grad| (log)", "flags"],
                cells,
                [10, 8, 8, 8, 6, LAYER_SPARK, 20],
                [False, True, True, True, True, False, False],
                row_styles=styles,
            )
        )
        first = sorted(st.flags, key=lambda f: f["global_step"] if isinstance(f["global_step"], int) else 0)[:1]
        if first:
            out.append("\nfirst flag: ", style="bold")
            out.append(describe_flag(first[0]), style=_flag_style(plain))
    elif view.monitor_every:
        out.append("layers: every %d steps, no sample yet" % view.monitor_every, style="dim")
    else:
        out.append(
            "layers: not monitored (train.monitor.every=0; the form's `layers every` N samples every N-th step)",
            style="dim",
        )
    scale = view.loss_scale
    if scale:
        last = scale[-1]
        skips = (
            last.get("skipped") if isinstance(last.get("skipped"), int) else sum(1 for e in scale if e.get("overflow"))
        )
        curve: List[float] = [float(e["scale"]) for e in scale if isinstance(e.get("scale"), (int, float))]
        if isinstance(last.get("next_scale"), (int, float)):
            curve.append(last["next_scale"])
        out.append("\nloss scale: ", style="bold")
        out.append(
            "%s now, %s overflow skip%s (last at global step %s)  %s  %s → %s"
            % (
                _f(curve[-1] if curve else None, "%.3g"),
                skips,
                "" if skips == 1 else "s",
                max((e["global_step"] for e in scale if e.get("overflow")), default="—"),
                log_spark(curve, 24),
                _f(curve[0] if curve else None, "%.3g"),
                _f(curve[-1] if curve else None, "%.3g"),
            )
        )
    origin = view.overflow_origin
    if origin:
        out.append("\nfirst non-finite value: ", style="bold")
        out.append_text(badge(str(origin.get("status"))))
        out.append(" " + str(origin.get("detail") or ""))
    return out
