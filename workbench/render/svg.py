"""Standalone SVG pictures for the record: loss and step-time curves, the confusion matrix."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

MAX_POINTS = 1500  # a polyline with more points than pixels only makes the file bigger
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"

# A name, x values and y values as recorded (JSON values): a point whose x or y is not a finite number is left out.
Series = Tuple[str, Sequence[Any], Sequence[Any]]


def escape(text: str) -> str:
    """&, < and > as XML entities (what xml.sax.saxutils.escape does, without its import of urllib)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _thin(xs: Sequence[float], ys: Sequence[float], limit: int = MAX_POINTS) -> Tuple[List[float], List[float]]:
    pairs = [(x, y) for x, y in zip(xs, ys) if _finite(x) and _finite(y)]
    if len(pairs) <= limit:
        return [p[0] for p in pairs], [p[1] for p in pairs]
    stride = len(pairs) / float(limit)
    picked = [pairs[int(i * stride)] for i in range(limit)] + [pairs[-1]]
    return [p[0] for p in picked], [p[1] for p in picked]


def nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    """Round tick values covering [low, high]."""
    if not (_finite(low) and _finite(high)) or high <= low:
        return [low] if _finite(low) else []
    raw = (high - low) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    first = math.ceil(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if 1000 <= abs(v) < 1e7:
        return "%.0f" % v
    if abs(v) >= 1e7 or abs(v) < 0.01:
        return "%.3g" % v
    return ("%.2f" % v).rstrip("0").rstrip(".")


def line_chart(
    series: Sequence[Series],
    title: str,
    x_label: str,
    y_label: str,
    width: int = 720,
    height: int = 320,
    y_max: Optional[float] = None,
    notes: Sequence[str] = (),
    shade: Optional[Tuple[float, float, str]] = None,
    dots: Sequence[Series] = (),
) -> str:
    """A line chart (lines for `series`, dots for `dots`) as a standalone SVG document."""
    left, right, top, bottom = 64, 16, 34, 46 + 14 * len(notes)
    plot_w, plot_h = width - left - right, height - top - bottom
    all_x = [x for _, xs, ys in list(series) + list(dots) for x, y in zip(xs, ys) if _finite(x) and _finite(y)]
    all_y = [y for _, xs, ys in list(series) + list(dots) for x, y in zip(xs, ys) if _finite(x) and _finite(y)]
    out = [
        "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d' %s font-size='12'>"
        % (width, height, width, height, FONT),
        "<rect width='100%' height='100%' fill='white'/>",
        "<text x='%d' y='20' font-size='14' font-weight='bold'>%s</text>" % (left, escape(title)),
    ]
    if not all_x:
        out.append("<text x='%d' y='%d' fill='#666'>no data recorded</text>" % (left, top + plot_h // 2))
        out.append("</svg>")
        return "\n".join(out) + "\n"
    x0, x1 = min(all_x), max(all_x)
    y0, y1 = min(all_y), max(all_y)
    if 0 <= y0 < 0.25 * y1:
        y0 = 0.0  # start at zero when the data nearly does: the eye reads heights as ratios
    if y_max is not None and y_max > y0:
        y1 = min(y1, y_max)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def sy(y: float) -> float:
        return top + plot_h - (min(max(y, y0), y1) - y0) / (y1 - y0) * plot_h

    if shade is not None:
        a, b, label = shade
        a, b = max(a, x0), min(b, x1)
        if b > a:
            out.append(
                "<rect x='%.1f' y='%d' width='%.1f' height='%d' fill='#f3e7c9'/>" % (sx(a), top, sx(b) - sx(a), plot_h)
            )
            out.append(
                "<text x='%.1f' y='%d' fill='#8a6d1f' font-size='10'>%s</text>" % (sx(a) + 2, top + 11, escape(label))
            )
    for t in nice_ticks(y0, y1):
        out.append("<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#e5e5e5'/>" % (left, left + plot_w, sy(t), sy(t)))
        out.append("<text x='%d' y='%.1f' text-anchor='end' fill='#444'>%s</text>" % (left - 6, sy(t) + 4, _fmt(t)))
    for t in nice_ticks(x0, x1, 6):
        out.append(
            "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='#999'/>" % (sx(t), sx(t), top + plot_h, top + plot_h + 4)
        )
        out.append(
            "<text x='%.1f' y='%d' text-anchor='middle' fill='#444'>%s</text>" % (sx(t), top + plot_h + 16, _fmt(t))
        )
    out.append("<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#888'/>" % (left, top, plot_w, plot_h))
    for i, (label, xs, ys) in enumerate(series):
        xs, ys = _thin(xs, ys)
        if not xs:
            continue
        color = PALETTE[i % len(PALETTE)]
        points = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in zip(xs, ys))
        out.append(
            "<polyline fill='none' stroke='%s' stroke-width='1.3' points='%s'><title>%s</title></polyline>"
            % (color, points, escape(label))
        )
    for i, (label, xs, ys) in enumerate(dots):
        color = PALETTE[(len(series) + i) % len(PALETTE)]
        for x, y in zip(*_thin(xs, ys)):
            out.append(
                "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'><title>%s %s</title></circle>"
                % (sx(x), sy(y), color, escape(label), _fmt(y))
            )
    legend = [(l, PALETTE[i % len(PALETTE)]) for i, (l, _, _) in enumerate(series)]
    legend += [(l, PALETTE[(len(series) + i) % len(PALETTE)]) for i, (l, _, _) in enumerate(dots)]
    lx = left + plot_w
    for label, color in reversed(legend):
        lx -= 14 + 7 * len(label)
        out.append("<rect x='%d' y='10' width='10' height='10' fill='%s'/>" % (lx, color))
        out.append("<text x='%d' y='19' fill='#222'>%s</text>" % (lx + 13, escape(label)))
    out.append(
        "<text x='%.1f' y='%d' text-anchor='middle' fill='#222'>%s</text>"
        % (left + plot_w / 2, top + plot_h + 32, escape(x_label))
    )
    out.append(
        "<text transform='translate(14 %.1f) rotate(-90)' text-anchor='middle' fill='#222'>%s</text>"
        % (top + plot_h / 2, escape(y_label))
    )
    for i, note in enumerate(notes):
        out.append(
            "<text x='%d' y='%d' fill='#555' font-size='11'>%s</text>"
            % (left, top + plot_h + 46 + 14 * i, escape(note))
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _global_steps(steps: Dict[str, List[Any]]) -> Tuple[List[int], List[int]]:
    """Indices (1-based, rank 0 only) of the recorded steps, and which of them are kept.

    A thinned table (workbench.fold.steptable) carries each kept row's main-rank step number in `x`.
    """
    keep = [i for i, r in enumerate(steps.get("rank") or []) if r in (None, 0)]
    if steps.get("x"):
        return [steps["x"][i] for i in keep], keep
    return list(range(1, len(keep) + 1)), keep


def loss_curve_svg(jid: str, steps: Dict[str, List[Any]], epochs: List[Dict[str, Any]]) -> str:
    """Per-step training loss, with each epoch's sample-weighted train loss as a dot at its end."""
    xs, keep = _global_steps(steps)
    ys = [steps["loss"][i] for i in keep]
    ends: List[float] = []
    epoch_of = [steps["epoch"][i] for i in keep]
    for e in epochs:
        idx = [x for x, ep in zip(xs, epoch_of) if ep == e.get("epoch")]
        ends.append(float(idx[-1]) if idx else float("nan"))
    dots = [("epoch train loss", ends, [e.get("train_loss") for e in epochs])] if epochs else []
    return line_chart([("step loss", xs, ys)], "%s: training loss" % jid, "step", "loss", dots=dots)


def step_time_svg(
    jid: str, steps: Dict[str, List[Any]], warmup_steps: Optional[int], perf: Optional[Dict[str, Any]] = None
) -> str:
    """Wall time per step; the compile step is noted and cut off the scale, warm-up is shaded."""
    xs, keep = _global_steps(steps)
    ys = [steps["step_ms"][i] for i in keep]
    finite = sorted(y for y in ys[1:] if _finite(y))
    notes = []
    y_max = None
    if ys and _finite(ys[0]):
        notes.append("step 1 (compile): %s ms" % _fmt(float(ys[0])))
    if finite:
        p99 = finite[min(len(finite) - 1, int(0.99 * len(finite)))]
        y_max = p99 * 1.5 if p99 > 0 else None
        if y_max is not None and ys and _finite(ys[0]) and ys[0] > y_max:
            notes[-1] += " (off the scale)"
    steady = (perf or {}).get("steady") or {}
    if _finite(steady.get("median_ms")):
        notes.append(
            "steady median %s ms, P95 %s ms over %s steps; sync: %s"
            % (
                _fmt(steady["median_ms"]),
                _fmt(steady.get("p95_ms") or float("nan")),
                steady.get("n"),
                (perf or {}).get("sync", "?"),
            )
        )
    shade = (1.0, 1.0 + float(warmup_steps), "compile + warm-up") if warmup_steps else None
    return line_chart(
        [("step_ms", xs, ys)], "%s: time per step" % jid, "step", "ms", y_max=y_max, notes=notes, shade=shade
    )


def device_svg(jid: str, samples: Sequence[Dict[str, Any]], every: int = 1, seen: Optional[int] = None) -> str:
    """AI Core %, memory used % and temperature of the job's chip over the run (seconds from the first sample).

    `every` > 1: the samples are every `every`-th of the `seen` the run took (a long run's, thinned).
    """
    t0 = next((float(d["t"]) for d in samples if _finite(d.get("t"))), 0.0)
    xs = [float(d["t"]) - t0 if _finite(d.get("t")) else float("nan") for d in samples]

    def pct(d: Dict[str, Any]) -> float:
        if _finite(d.get("mem_used_mb")) and _finite(d.get("mem_total_mb")) and d["mem_total_mb"]:
            return 100.0 * d["mem_used_mb"] / d["mem_total_mb"]
        return float("nan")

    series: List[Series] = [
        ("AI Core %", xs, [d.get("ai_core_pct") for d in samples]),
        ("memory used %", xs, [pct(d) for d in samples]),
        ("temperature °C", xs, [d.get("temp_c") for d in samples]),
    ]
    last = samples[-1] if samples else {}
    shown = (
        "%d npu-smi samples (at most one a second)" % len(samples)
        if every <= 1
        else ("%d of %s npu-smi samples: every %d-th, thinned over the whole run" % (len(samples), seen, every))
    )
    notes = ["NPU %s chip %s, %s" % (last.get("npu"), last.get("chip"), shown)]
    return line_chart(series, "%s: device (npu-smi)" % jid, "seconds", "% / °C", notes=notes)


def confusion_svg(matrix: Sequence[Sequence[Any]], class_names: Sequence[str], title: str) -> str:
    """A heat map of counts, rows true and columns predicted, each cell labelled with its count."""
    n = len(matrix)
    names = [str(class_names[i]) if i < len(class_names) else str(i) for i in range(n)]
    cell = 44
    left, top = 110, 60
    width, height = left + cell * n + 80, top + cell * n + 110
    values = [[float(v) if _finite(v) else 0.0 for v in row] for row in matrix]
    # Diagonal and off-diagonal cells are shaded on their own scales, so the worst confusion stands out.
    peak_diag = max([values[i][i] for i in range(n) if i < len(values[i])] or [0]) or 1.0
    peak_off = max([v for r, row in enumerate(values) for c, v in enumerate(row) if r != c] or [0]) or 1.0
    out = [
        "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d' %s font-size='11'>"
        % (width, height, width, height, FONT),
        "<rect width='100%' height='100%' fill='white'/>",
        "<text x='10' y='20' font-size='14' font-weight='bold'>%s</text>" % escape(title),
        "<text x='%d' y='42' text-anchor='middle' fill='#222'>predicted</text>" % (left + cell * n // 2),
        "<text transform='translate(14 %d) rotate(-90)' text-anchor='middle' fill='#222'>true</text>"
        % (top + cell * n // 2),
    ]
    for r, row in enumerate(matrix):
        out.append(
            "<text x='%d' y='%d' text-anchor='end' fill='#222'>%s</text>"
            % (left - 6, top + r * cell + cell // 2 + 4, escape(names[r]))
        )
        for c, value in enumerate(row):
            v = values[r][c]
            share = v / (peak_diag if r == c else peak_off)
            if r == c:
                fill = "rgb(%d,%d,%d)" % (255 - int(180 * share), 255 - int(90 * share), 255 - int(180 * share))
            else:
                fill = "rgb(255,%d,%d)" % (255 - int(200 * share), 255 - int(200 * share))
            x, y = left + c * cell, top + r * cell
            out.append(
                "<rect x='%d' y='%d' width='%d' height='%d' fill='%s' stroke='#ddd'/>" % (x, y, cell, cell, fill)
            )
            out.append(
                "<text x='%d' y='%d' text-anchor='middle' fill='%s'>%s</text>"
                % (x + cell // 2, y + cell // 2 + 4, "#fff" if share > 0.6 else "#111", escape(str(value)))
            )
    for c in range(n):
        x = left + c * cell + cell // 2
        y = top + n * cell + 8
        out.append("<text transform='translate(%d %d) rotate(45)' fill='#222'>%s</text>" % (x, y, escape(names[c])))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def heat_map_svg(rows: Sequence[str], columns: Sequence[str], grid: Sequence[Sequence[Any]], title: str) -> str:
    """A table of values in [0, 1] shaded from red (0) to green (1), each cell labelled; None cells left blank."""
    cell_w, cell_h, left, top = 56, 24, 130, 50
    width, height = left + cell_w * len(columns) + 20, top + cell_h * len(rows) + 20
    out = [
        "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d' %s font-size='11'>"
        % (width, height, width, height, FONT),
        "<rect width='100%' height='100%' fill='white'/>",
        "<text x='10' y='20' font-size='14' font-weight='bold'>%s</text>" % escape(title),
    ]
    for c, name in enumerate(columns):
        out.append(
            "<text x='%d' y='%d' text-anchor='middle' fill='#222'>%s</text>"
            % (left + c * cell_w + cell_w // 2, top - 8, escape(str(name)))
        )
    for r, name in enumerate(rows):
        y = top + r * cell_h
        out.append(
            "<text x='%d' y='%d' text-anchor='end' fill='#222'>%s</text>" % (left - 6, y + 16, escape(str(name)))
        )
        for c, value in enumerate(grid[r]):
            if not _finite(value):
                continue
            v = min(max(float(value), 0.0), 1.0)
            fill = "rgb(%d,%d,90)" % (int(230 * (1 - v)) + 25, int(200 * v) + 30)
            out.append(
                "<rect x='%d' y='%d' width='%d' height='%d' fill='%s' stroke='white'/>"
                % (left + c * cell_w, y, cell_w, cell_h, fill)
            )
            out.append(
                "<text x='%d' y='%d' text-anchor='middle' fill='white'>%s</text>"
                % (left + c * cell_w + cell_w // 2, y + 16, "%.2f" % v)
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def layers_svg(jid: str, monitor: Dict[str, Any]) -> str:
    """log10 of each parameter's gradient norm over the run (the training-state monitor), with its flags noted."""
    import math

    steps = [s.get("global_step") for s in monitor.get("series") or []]

    def log(v: Any) -> float:
        return math.log10(v) if _finite(v) and v > 0 else float("nan")

    series = [
        ("%s |grad|" % name, steps, [log((s.get("grad_norm") or {}).get(name)) for s in monitor["series"]])
        for name in monitor.get("names") or []
    ]
    stride = monitor.get("stride") or 1
    notes = [
        "%d monitor samples%s; log10 of each parameter's gradient norm"
        % (monitor.get("samples") or 0, "" if stride <= 1 else ", every %d-th drawn" % stride)
    ]
    flags = monitor.get("flags") or []
    notes.append(
        "flags: " + "; ".join("%s %s at step %s" % (f["flag"], f["param"], f["global_step"]) for f in flags[:4])
        if flags
        else "no flag raised"
    )
    return line_chart(series, "%s: per-layer gradient norms" % jid, "global step", "log10 |grad|", notes=notes)


def loss_scale_svg(jid: str, events: Sequence[Dict[str, Any]]) -> str:
    """The dynamic loss scale over the run (a step line), overflow skips as dots."""
    import math

    xs: List[float] = []
    ys: List[float] = []
    for e in events:
        if _finite(e.get("scale")) and e["scale"] > 0:
            xs.append(e["global_step"])
            ys.append(math.log2(e["scale"]))
        if _finite(e.get("next_scale")) and e["next_scale"] > 0:
            xs.append(e["global_step"] + 0.5)
            ys.append(math.log2(e["next_scale"]))
    skips = [e for e in events if e.get("overflow")]
    drawn = [e for e in skips if _finite(e.get("scale")) and e["scale"] > 0]
    dots = [("overflow skip", [e["global_step"] for e in drawn], [math.log2(e["scale"]) for e in drawn])]
    notes = ["%d overflow skips; the scale halves at each, doubles after a window of good steps" % len(skips)]
    return line_chart(
        [("log2 scale", xs, ys)], "%s: loss scale" % jid, "global step", "log2 scale", notes=notes, dots=dots
    )
