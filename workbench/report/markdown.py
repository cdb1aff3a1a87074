"""Renders the collected record as report.md, sections in the hand-over order."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from workbench.report.parallel_ranks import parallel_block

MAX_SUMMARY_ROWS = 120
MAX_CELL_CHARS = 240


def num(value: Any, digits: int = 4) -> str:
    """A number for a table cell: '-' for missing, significant digits for floats."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "%.*g" % (digits, value)
    return str(value)


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    elif isinstance(value, float):
        text = num(value, 6)
    else:
        text = "-" if value is None or value == "" else str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS - 1] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> List[str]:
    """A Markdown table (header, separator, rows), followed by a blank line."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return lines + [""]


def flatten(obj: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """Dotted key/value pairs of a nested summary (lists of plain values stay one value)."""
    if isinstance(obj, dict):
        out: List[Tuple[str, Any]] = []
        for key, value in obj.items():
            out += flatten(value, "%s.%s" % (prefix, key) if prefix else str(key))
        return out or [(prefix or "(empty)", "{}")]
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        out = []
        for i, value in enumerate(obj):
            out += flatten(value, "%s[%d]" % (prefix, i))
        return out or [(prefix, "[]")]
    return [(prefix or "value", obj)]


def status_line(rec: Dict[str, Any]) -> str:
    """'Status: ok · device CPU:0' under a job heading."""
    dev = rec.get("device") or {}
    where = "%s:%s" % (dev.get("resolved", "?"), dev.get("id", 0))
    why = dev.get("why")
    return "Status: **%s** · device %s%s" % (rec["label"], where, (" (%s)" % why) if why else "")


def checks_block(checks: List[Dict[str, Any]], heading: str = "####") -> List[str]:
    """Every check of a job with its evidence level, detail and evidence."""
    if not checks:
        return []
    return ["%s Checks" % heading, ""] + table(
        ["evidence", "check", "title", "detail", "evidence data"],
        [(c.get("status"), c.get("id"), c.get("title"), c.get("detail"), c.get("evidence") or "-") for c in checks])


def artifacts_block(artifacts: List[Dict[str, Any]], heading: str = "####") -> List[str]:
    """Artifacts with size, SHA-256 and whether the file on disk still matches."""
    if not artifacts:
        return []
    return ["%s Artifacts" % heading, ""] + table(
        ["path", "kind", "bytes", "sha256", "file on disk"],
        [(a.get("path"), a.get("kind"), a.get("bytes"), a.get("sha256"), a.get("on_disk")) for a in artifacts])


def summary_block(summary: Any, heading: str = "####", title: str = "Summary") -> List[str]:
    """A job's result summary as a key/value table."""
    if summary is None:
        return []
    pairs = flatten(summary)
    rows = pairs[:MAX_SUMMARY_ROWS]
    lines = ["%s %s" % (heading, title), ""] + table(["key", "value"], rows)
    if len(pairs) > MAX_SUMMARY_ROWS:
        lines.insert(-1, "| … | %d more keys in report.json |" % (len(pairs) - MAX_SUMMARY_ROWS))
    return lines


def per_class_block(per_class: List[Dict[str, Any]], names: Sequence[str], title: str) -> List[str]:
    """Per-class precision, recall, F1 and support."""
    rows = [(i, c.get("name") or (names[i] if i < len(names) else i), num(c.get("precision")), num(c.get("recall")),
             num(c.get("f1")), c.get("support")) for i, c in enumerate(per_class or [])]
    return ["#### %s" % title, ""] + table(["label", "class", "precision", "recall", "F1", "support"], rows)


def confusion_block(matrix: List[List[Any]], names: Sequence[str], title: str, figure: Optional[str]) -> List[str]:
    """The confusion matrix as a picture link and a table (rows true, columns predicted)."""
    lines = ["#### %s" % title, ""]
    if figure:
        lines += ["![%s](%s)" % (title, figure), ""]
    heads = ["true \\ predicted"] + [str(i) for i in range(len(matrix))]
    rows = [["%d %s" % (r, names[r] if r < len(names) else "")] + list(row) for r, row in enumerate(matrix)]
    return lines + table(heads, rows)


def epoch_row(e: Dict[str, Any]) -> Tuple[Any, ...]:
    """One row of the per-epoch table."""
    val = e.get("val") or {}
    return (e.get("epoch"), num(e.get("train_loss")), e.get("samples"), num(val.get("accuracy")),
            num(val.get("macro_f1")), num(e.get("epoch_s"), 3), "best" if e.get("is_best") else "")


def error_text(error: Optional[Dict[str, Any]]) -> str:
    """'Type: message' of a finished event's error, or '-'."""
    if not error:
        return "-"
    return "%s: %s" % (error.get("type"), error.get("message"))


class ReportWriter:
    """Builds report.md from the collected dict and the list of files the export wrote."""

    def __init__(self, report: Dict[str, Any]):
        self.r = report
        self.files = report.get("files") or {}
        self.out: List[str] = []

    def add(self, *lines: str) -> None:
        """Append lines."""
        self.out.extend(lines)

    def render(self) -> str:
        """The whole document."""
        s = self.r["session"]
        self.add("# Session record %s" % s["id"], "")
        if self.r["still_running"]:
            self.add("> **Written while jobs were still running** (%s): this record holds what existed at %s; "
                     "export again when they end." % (", ".join(self.r["still_running"]), self.r["generated"]["iso"]), "")
        for section in (self.session, self.environment, self.data, self.training, self.performance,
                        self.alignment, self.export, self.checks, self.jobs_not_ok, self.not_verified, self.record_files):
            section()
        return "\n".join(self.out).rstrip() + "\n"

    def session(self) -> None:
        s = self.r["session"]
        self.add("## 1. Session", "")
        self.add(*table(["field", "value"], [
            ("session id", s["id"]), ("host", s["host"]), ("user", s["user"]),
            ("created", s["created_iso"]), ("last activity", s["last_activity_iso"]),
            ("record written", self.r["generated"]["iso"]), ("workbench version", s["version"]),
            ("versions that ran jobs", ", ".join(s["versions_seen"]) or "-"), ("written by", self.r["generated"]["by"]),
            ("size on disk (bytes)", s["bytes"]), ("session opened by", s["command_line"] or "-"),
        ]))
        self.add("### Jobs", "")
        self.add(*table(["job", "kind", "status", "started", "duration s", "device", "events"],
                        [(j["jid"], j["kind"], j["label"], j["created_iso"], num(j["duration_s"], 3), j["device"], j["events"])
                         for j in s["jobs"]]))
        self.add("### Command lines", "", "```text")
        for c in s["commands"]:
            self.add("%s: %s" % (c["jid"], c["command_line"] or "(not recorded)"))
        self.add("```", "")
        others = self.r["other_jobs"]
        if others:
            self.add("### Other jobs", "")
            self.add(*table(["job", "kind", "status", "steps recorded", "summary"],
                            [(o["jid"], o["kind"], o["label"], o["steps_recorded"], o["summary"]) for o in others]))

    def environment(self) -> None:
        self.add("## 2. Environment", "")
        if not self.r["environment"]:
            self.add("No environment job in this session.", "")
        for e in self.r["environment"]:
            self.add("### %s" % e["jid"], "", status_line(e), "", "Python: `%s`" % (e.get("python") or "-"), "")
            self.add(*checks_block(e["checks"]))
            self.add(*summary_block(e["summary"]))
            self.add("#### Environment variables (allow-list)", "")
            self.add(*table(["name", "value"], sorted((e.get("env") or {}).items())))

    def data(self) -> None:
        self.add("## 3. Data contract", "")
        if not self.r["data"]:
            self.add("No data job in this session.", "")
        for d in self.r["data"]:
            split = d.get("split") or {}
            self.add("### %s" % d["jid"], "", status_line(d), "")
            self.add(*table(["field", "value"], [
                ("source", d.get("source")), ("synthetic", d.get("synthetic")), ("pixel scaling", d.get("scale")),
                ("split seed", split.get("seed")), ("validation fraction", split.get("val_fraction")),
                ("train samples", split.get("n_train")), ("validation samples", split.get("n_val")),
                ("train index sha256", split.get("train_idx_sha256")), ("validation index sha256", split.get("val_idx_sha256")),
                ("index file", split.get("index_file")), ("split record", d.get("split_path") or "not found"),
            ]))
            if split.get("source_files"):
                self.add("#### Source files", "")
                self.add(*table(["file", "sha256"], [(f.get("name"), f.get("sha256")) for f in split["source_files"]]))
            counts = {int(c.get("label")): c for c in split.get("per_class") or [] if isinstance(c.get("label"), int)}
            self.add("#### Class mapping", "")
            self.add(*table(["label", "class", "train", "validation"],
                            [(i, name, (counts.get(i) or {}).get("train"), (counts.get(i) or {}).get("val"))
                             for i, name in enumerate(d["class_names"])]))
            self.add(*checks_block(d["checks"]))
            self.add(*artifacts_block(d["artifacts"]))
            self.add(*summary_block(d["summary"]))

    def training(self) -> None:
        t = self.r["training"]
        self.add("## 4. Training runs", "")
        if not t["runs"]:
            self.add("No training job in this session.", "")
        figures = self.files.get("figures") or {}
        for run in t["runs"]:
            jid = run["jid"]
            self.add("### %s" % jid, "", status_line(run), "")
            self.add("#### Config", "", "```yaml")
            self.add(*(_yaml(run["config"]).rstrip().splitlines() or ["(no config recorded)"]))
            self.add("```", "")
            curve = run["curve"]
            self.add("#### Curve", "")
            self.add("%d steps recorded; loss from %s to %s (lowest %s); validation accuracy by epoch: %s." % (
                run["steps_recorded"], num(curve["first_loss"]), num(curve["last_loss"]), num(curve["min_loss"]),
                ", ".join(num(a) for a in curve["val_accuracy"]) or "-"), "")
            for key, title in (("loss", "training loss"), ("step_time", "time per step")):
                path = (figures.get(jid) or {}).get(key)
                if path:
                    self.add("![%s %s](%s)" % (jid, title, path), "")
            self.add("#### Epochs", "")
            self.add(*table(["epoch", "train loss", "samples", "val accuracy", "val macro-F1", "epoch s", "best"],
                            [epoch_row(e) for e in run["epochs"]]))
            best = run["best_epoch"]
            if best:
                val = best.get("val") or {}
                self.add("Best epoch: **%s** (validation accuracy %s, macro-F1 %s)." % (
                    best.get("epoch"), num(val.get("accuracy")), num(val.get("macro_f1"))), "")
                title = "Best epoch %s: " % best.get("epoch")
                if val.get("per_class"):
                    self.add(*per_class_block(val["per_class"], run["class_names"], title + "per-class metrics"))
                if val.get("confusion"):
                    self.add(*confusion_block(val["confusion"], run["class_names"], title + "confusion matrix",
                                              (figures.get(jid) or {}).get("confusion")))
            else:
                self.add("No epoch was completed, so there is no best epoch.", "")
            if run.get("parallel"):
                self.add(*parallel_block(run["parallel"]))
            self.add(*checks_block(run["checks"]))
            self.add(*artifacts_block(run["artifacts"]))
        self.add("### Test-set evaluations (%d)" % t["test_evaluations"], "")
        if not t["tests"]:
            self.add("The test set was not evaluated in this session.", "")
        else:
            self.add(*table(["job", "model from", "status", "accuracy", "macro-F1", "samples", "evaluations of that model"],
                            [(x["jid"], x["from"], x["label"], num(x["accuracy"]), num(x["macro_f1"]), x["samples"],
                              x.get("evaluations_of_model")) for x in t["tests"]]))
            for x in t["tests"]:
                if x.get("per_class"):
                    self.add(*per_class_block(x["per_class"], _names(t), "%s: per-class metrics" % x["jid"]))
                if x.get("confusion"):
                    self.add(*confusion_block(x["confusion"], _names(t), "%s: confusion matrix" % x["jid"],
                                              (figures.get(x["jid"]) or {}).get("confusion")))
                self.add(*checks_block(x["checks"]))
                self.add(*artifacts_block(x["artifacts"]))

    def performance(self) -> None:
        rows = self.r["performance"]
        self.add("## 5. Performance", "")
        if not rows:
            self.add("No job measured performance (no perf event).", "")
            return
        self.add(*table(["job", "scope", "device", "compile (first step) s", "warm-up steps", "steady steps", "median ms",
                         "P95 ms", "images/s", "batch size", "sync boundary"],
                        [(p["jid"], p["scope"], p["device"], num(p["first_step_s"]), p["warmup_steps"], p["steady_n"],
                          num(p["median_ms"]), num(p["p95_ms"]), num(p["images_per_s"]), p["batch_size"], p["sync"])
                         for p in rows]))
        recompiles = [(p["jid"], p["scope"], r) for p in rows for r in (p.get("recompile") or [])]
        if recompiles:
            self.add("Recompiled steps (left out of the steady figures): %s." % "; ".join(
                "%s %s: %s" % (jid, scope, cell(r)) for jid, scope, r in recompiles), "")
        self.add("### Peak memory", "")
        self.add(*table(["job", "scope", "peak host RSS MB", "what it measures", "peak device MB", "what it measures"],
                        [(p["jid"], p["scope"], num(p["peak_host_rss_mb"]), p["host_rss_measures"], num(p["peak_device_mb"]),
                          p["device_memory_measures"]) for p in rows]))
        rules = {k: v for p in rows for k, v in p["rules"].items()}
        timing = sorted({p["timing_rule"] for p in rows if p.get("timing_rule")})
        self.add("Measuring rules: the first step includes graph compilation and is reported alone; the next "
                 "warm-up steps are left out; median and P95 are over the remaining (steady) steps, timed at the "
                 "sync boundary given above.%s%s" % (
                     "".join(" %s." % t for t in timing),
                     "".join(" %s: %s." % (k, v) for k, v in sorted(rules.items()))), "")

    def alignment(self) -> None:
        a = self.r["alignment"]
        self.add("## 6. Alignment", "")
        self.add("A tensor passes when every element satisfies %s (atol and rtol per row below)." % a["formula"], "")
        if not a["jobs"]:
            self.add("No alignment job in this session.", "")
        for j in a["jobs"]:
            self.add("### %s" % j["jid"], "", status_line(j), "")
            self.add("Reference: `%s` · candidate: `%s` · %d of %d tensors within tolerance." % (
                cell(j["reference"]), cell(j["candidate"]), j["passed"], len(j["diffs"])), "")
            self.add(*table(["tensor", "shape", "dtype", "max abs", "max rel", "mismatch ratio", "atol", "rtol",
                             "worst index", "result"],
                            [(d.get("name"), d.get("shape"), d.get("dtype"), num(d.get("max_abs")), num(d.get("max_rel")),
                              num(d.get("mismatch_ratio")), num(d.get("atol")), num(d.get("rtol")), d.get("worst_index"),
                              "pass" if d.get("passed") else "FAIL") for d in j["diffs"]]))
            self.add(*checks_block(j["checks"]))
            self.add(*summary_block(j["summary"]))

    def export(self) -> None:
        self.add("## 7. Export and load checks", "")
        if not self.r["export"]:
            self.add("No export job in this session.", "")
        for e in self.r["export"]:
            self.add("### %s" % e["jid"], "", status_line(e), "")
            self.add(*checks_block(e["checks"]))
            self.add(*artifacts_block(e["artifacts"]))
            self.add(*summary_block(e["summary"]))

    def checks(self) -> None:
        c = self.r["checks"]
        self.add("## 8. Checks that did not pass", "")
        self.add("Evidence levels over all jobs: %s." % ", ".join("%s %d" % kv for kv in c["counts"].items()), "")
        if not c["not_passed"]:
            self.add("Every recorded check is an observed pass." if any(c["counts"].values())
                     else "No job recorded a check.", "")
            return
        self.add(*table(["job", "evidence", "check", "title", "reason", "hint"],
                        [(x["jid"], x["status"], x["id"], x["title"], x["reason"], x.get("hint")) for x in c["not_passed"]]))

    def jobs_not_ok(self) -> None:
        self.add("## 9. Jobs that did not end ok", "")
        rows = self.r["jobs_not_ok"]
        if not rows:
            self.add("Every job that ended, ended ok.", "")
        else:
            self.add(*table(["job", "kind", "status", "error"],
                            [(j["jid"], j["kind"], j["label"], error_text(j["error"])) for j in rows]))
        if self.r["still_running"]:
            self.add("Still running when written: %s." % ", ".join(self.r["still_running"]), "")

    def not_verified(self) -> None:
        self.add("## 10. What was not verified", "")
        items = self.r["not_verified"]
        self.add(*(["- " + s for s in items] or ["Nothing that this record can detect."]))
        self.add("")
        self.damaged_lines()

    def damaged_lines(self) -> None:
        """Which event lines were damaged (torn, merged, not JSON, wrongly typed) and which seq numbers are missing."""
        jobs = [j for j in self.r["jobs"] if j.get("damaged_count") or j.get("missing_seq")]
        if not jobs:
            return
        self.add("### Damaged event lines and missing seq numbers", "",
                 "A damaged line was skipped: nothing it said is in this record.", "")
        rows = [(j["jid"], d["file"], d["line"], d["what"], d["problem"]) for j in jobs for d in j["damaged_lines"]]
        if rows:
            self.add(*table(["job", "file", "line", "damage", "problem"], rows))
        more = [(j["jid"], j["damaged_count"] - len(j["damaged_lines"])) for j in jobs
                if j["damaged_count"] > len(j["damaged_lines"])]
        for jid, n in more:
            self.add("%s: %d more damaged line(s) not listed." % (jid, n), "")
        gaps = [(j["jid"], "main" if m["rank"] is None else m["rank"],
                 str(m["first"]) if m["first"] == m["last"] else "%s–%s" % (m["first"], m["last"]))
                for j in jobs for m in j["missing_seq"]]
        if gaps:
            self.add(*table(["job", "rank", "missing seq"], gaps))

    def record_files(self) -> None:
        f = self.files
        self.add("## 11. Files of this record", "")
        self.add("- `report.json`: this report, machine-readable.",
                 "- `metrics/`: %s." % (", ".join("`%s`" % m for m in f.get("metrics") or []) or "none"),
                 "- `manifest.sha256`: SHA-256 of every file of the session folder and of this export; "
                 "check with `sha256sum -c export/manifest.sha256` from the session folder or from the folder the "
                 "archive unpacks to.",
                 "- `%s.tar.gz`: the whole session folder." % self.r["session"]["id"])
        masked = f.get("masked") or []
        if masked:
            self.add("- Masked copies: secrets were masked in the record's copy of %d file(s), which therefore "
                     "verify only where the archive is unpacked (the session folder keeps the originals): %s."
                     % (len(masked), ", ".join("`%s`" % m for m in masked)))
        shots = f.get("screenshots") or {}
        if shots.get("error"):
            self.add("- Screenshots: %s (%s)." % ("some not rendered" if shots.get("files") else "not rendered",
                                                  shots["error"]))
        if shots.get("files"):
            self.add("", "### Screenshots", "")
            for path in shots["files"]:
                self.add("![%s](%s)" % (path.rsplit("/", 1)[-1], path))
        self.add("")


def _names(training: Dict[str, Any]) -> Sequence[str]:
    runs = training.get("runs") or []
    if runs:
        return runs[0]["class_names"]
    from workbench.data.dataset import CLASS_NAMES

    return CLASS_NAMES


def _yaml(obj: Any) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False) if obj else ""


def render(report: Dict[str, Any]) -> str:
    """report.md for a collected record."""
    return ReportWriter(report).render()
