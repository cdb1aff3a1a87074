"""The comparison of two runs as plain text lines (the `compare` command, compare.md and the TUI overlay)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


def num(value: Optional[float], fmt: str = "%.4f") -> str:
    """A number, or '-' when it is unknown."""
    return "-" if value is None else fmt % value


def signed(value: Optional[float], fmt: str = "%+.4f") -> str:
    """A delta with its sign, or '-'."""
    return "-" if value is None else fmt % value


def config_lines(result: Dict[str, Any]) -> List[str]:
    """'train.lr: 0.001 -> 0.01' for each differing key; one line saying so when none differs."""
    diff = result["config_diff"]
    if not diff:
        return ["config: identical"]
    return ["%s: %r -> %r%s" % (d["key"], d["a"], d["b"], "" if d["training"] else "  (how it ran)") for d in diff]


def environment_lines(result: Dict[str, Any]) -> List[str]:
    """The environment items that differ, or one line saying the environments match."""
    diff = result["environment"]["diff"]
    if not diff:
        env = result["environment"]["a"]
        return ["environment: same (%s)" % ", ".join("%s %s" % (k, env[k]) for k in env if env[k])]
    return ["%s: %s -> %s" % (d["item"], d["a"] or "?", d["b"] or "?") for d in diff]


def epoch_table(result: Dict[str, Any]) -> List[str]:
    """Epoch rows: train loss, val accuracy and macro-F1 of A and B with B - A (fits 80 columns)."""
    lines = ["%-3s" % "ep" + "".join(" %6s %6s %7s" % (n + " A", n + " B", "delta") for n in ("loss", "acc", "F1"))]
    for row in result["epochs"]:
        cells = "".join(
            " %6s %6s %7s" % (num(row[k]["a"]), num(row[k]["b"]), signed(row[k]["delta"]))
            for k in ("train_loss", "val_accuracy", "val_macro_f1")
        )
        lines.append("%-3d" % row["epoch"] + cells)
    return lines


def class_lines(result: Dict[str, Any]) -> List[str]:
    """Per-class F1 at the best epochs, with B - A."""
    return [
        "%-12s %7s %7s %8s" % (c["name"][:12], num(c["a"]), num(c["b"]), signed(c["delta"]))
        for c in result["per_class_f1"]["classes"]
    ]


def confusion_lines(result: Dict[str, Any]) -> List[str]:
    """The confusion-matrix difference B - A (rows = true class), '.' for no change."""
    matrix = result["confusion_diff"]["matrix"]
    if matrix is None:
        return ["confusion difference: not available (a best epoch without a confusion matrix)"]
    names = result["a"].get("class_names") or [str(i) for i in range(len(matrix))]
    head = "%-9s" % "true\\pred" + "".join("%5s" % str(i) for i in range(len(matrix)))
    lines = [head]
    for i, row in enumerate(matrix):
        lines.append(
            "%-9s" % ("%d %s" % (i, names[i] if i < len(names) else ""))[:9]
            + "".join("%5s" % ("." if v == 0 else "%+d" % v) for v in row)
        )
    return lines


def frozen_test_lines(result: Dict[str, Any]) -> List[str]:
    """Frozen-test accuracy and macro-F1 of both sides (the first evaluation of each)."""
    out = []
    for side in ("a", "b"):
        t = result["test"][side]
        if t is None:
            out.append("test %s: not evaluated" % side.upper())
        else:
            out.append(
                "test %s: %s  accuracy %s  macro-F1 %s  (%d evaluation%s)"
                % (
                    side.upper(),
                    t["jid"],
                    num(t["accuracy"]),
                    num(t["macro_f1"]),
                    t["evaluations"],
                    "" if t["evaluations"] == 1 else "s",
                )
            )
    return out


def throughput_lines(result: Dict[str, Any]) -> List[str]:
    """Steady images/s of both, the ratio, and both spreads."""
    tp = result["throughput"]
    out = []
    for side in ("a", "b"):
        s = tp[side]
        out.append(
            "steady %s: %s images/s, median %s ms, P95 %s ms, spread %s"
            % (
                side.upper(),
                num(s["images_per_s"], "%.0f"),
                num(s["median_ms"], "%.2f"),
                num(s["p95_ms"], "%.2f"),
                num(s["spread"], "%.2f"),
            )
        )
    out.append("throughput B / A: %s: %s" % (num(tp["ratio"], "%.3f"), tp.get("verdict") or ""))
    return out


def render_text(result: Dict[str, Any]) -> str:
    """The whole comparison for a terminal."""
    a, b = result["a"], result["b"]
    parts = [
        "%s  %s  (%s, %s%s)"
        % (side.upper(), run["ref"], run["device"], run["status"] or "?", ", imported" if run.get("imported") else "")
        for side, run in (("a", a), ("b", b))
    ]
    parts += ["", "## config (keys that differ)"] + config_lines(result)
    parts += ["", "## environment"] + environment_lines(result)
    parts += ["", "## epochs (delta = B - A)"] + epoch_table(result)
    parts += ["", "## per-class F1 at the best epochs (A epoch %s, B epoch %s)" % (a["best_epoch"], b["best_epoch"])]
    parts += class_lines(result)
    parts += ["", "## confusion difference at the best epochs (B - A)"] + confusion_lines(result)
    parts += ["", "## frozen test set"] + frozen_test_lines(result)
    if result.get("test_selection"):
        parts += ["warning: " + result["test_selection"]]
    parts += ["", "## throughput"] + throughput_lines(result)
    if result.get("cross_device"):
        parts += ["", "cross-device pair: same training config on %s and %s" % (a["device"], b["device"])]
    parts += ["", "verdict: " + result["verdict"]["summary"]]
    return "\n".join(parts)
