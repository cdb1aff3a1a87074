"""Renders the collected record as report.md: one summary screen first, then short sections; long tables in appendix/."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from workbench.events.protocol import Evidence
from workbench.record.markdown import appendix as ax
from workbench.record.markdown import course, summary
from workbench.record.markdown import shift as shift_md
from workbench.record.markdown.candidate import about_line, candidate_lines
from workbench.record.markdown.tables import cell, num, table
from workbench.record.ranks import parallel_block
from workbench.render import humanize as h

ASCEND_SENTENCE = "No job ran to completion on an Ascend device"  # said once, by the limitations' "No NPU"


def device_text(dev: Dict[str, Any]) -> str:
    """'auto → CPU:0 (no /dev/davinci*, no npu-smi)': what was asked, what it resolved to, and why."""
    resolved = "%s:%s" % (dev.get("resolved", "?"), dev.get("id", 0))
    asked = dev.get("requested")
    text = "%s → %s" % (asked, resolved) if asked and asked != dev.get("resolved") else resolved
    return text + ((" (%s)" % dev["why"]) if dev.get("why") else "")


def effective_device(job_device: Dict[str, Any], config_device: Any) -> Dict[str, Any]:
    """The device as decided: job.json's record, completed by the effective config's `device` (requested, why)."""
    dev = dict(job_device or {})
    cfg = config_device if isinstance(config_device, dict) else {}
    if cfg.get("requested") and cfg.get("target"):  # a config decided by the runner: target is what runs
        dev.setdefault("resolved", cfg["target"])
    for key in ("requested", "why", "id"):
        if dev.get(key) is None and cfg.get(key) is not None:
            dev[key] = cfg[key]
    return dev


def status_line(rec: Dict[str, Any]) -> str:
    """'Status: ok · device auto → CPU:0 (why)' under a job heading."""
    return "Status: **%s** · device %s" % (rec["label"], device_text(rec.get("device") or {}))


def checks_line(checks: List[Dict[str, Any]]) -> List[str]:
    """One sentence per job: how many checks at each level, and the ones that did not pass by name."""
    if not checks:
        return []
    levels: Dict[str, int] = {}
    for c in checks:
        levels[str(c.get("status"))] = levels.get(str(c.get("status")), 0) + 1
    others = ["%s %s" % (c.get("id"), c.get("status")) for c in checks if c.get("status") != Evidence.PASS]
    return [
        "Checks: %s%s (each with its evidence in [appendix/checks.md](%s))."
        % (
            ", ".join("%d %s" % (n, s) for s, n in sorted(levels.items())),
            ("; not passed: " + ", ".join(others[:6]) + (" …" if len(others) > 6 else "")) if others else "",
            ax.CHECKS,
        ),
        "",
    ]


def artifacts_block(artifacts: List[Dict[str, Any]]) -> List[str]:
    """Artifacts (the last version of each) with size, short SHA-256 and whether the file still matches."""
    latest = [a for a in artifacts if a.get("on_disk") != "superseded"]
    if not latest:
        return []
    return table(
        ["artifact", "kind", "size", "sha256 (first 16)", "file on disk"],
        [
            (a.get("path"), a.get("kind"), h.size(a.get("bytes")), str(a.get("sha256") or "-")[:16], a.get("on_disk"))
            for a in latest
        ],
    )


def _version(part: Any) -> str:
    if not isinstance(part, dict):
        return "-"
    if part.get("found") is False:
        return "not found"
    return str(part.get("version") or "found, version unknown")


def stack_lines(summary_obj: Any) -> List[str]:
    """The stack an environment job found, in one sentence: Python, packages, CANN, driver, firmware."""
    if not isinstance(summary_obj, dict):
        return []
    py = summary_obj["python"] if isinstance(summary_obj.get("python"), dict) else {}
    pkgs = summary_obj["packages"] if isinstance(summary_obj.get("packages"), dict) else {}
    names = ", ".join(
        "%s %s" % (name, (p.get("version") if isinstance(p, dict) else p) or "not installed")
        for name, p in pkgs.items()
    )
    return [
        "Stack: Python %s (%s, %s%s); %s; CANN %s; driver %s; firmware %s."
        % (
            py.get("version") or "-",
            py.get("implementation") or "-",
            py.get("machine") or "-",
            ", venv" if py.get("venv") else "",
            names or "no packages listed",
            _version(summary_obj.get("cann")),
            _version(summary_obj.get("driver")),
            _version(summary_obj.get("firmware")),
        ),
        "",
    ]


def recompile_text(r: Any) -> str:
    """'step 844 (batch 48) recompiled in 0.25 s' from a perf event's recompile entry."""
    if not isinstance(r, dict):
        return cell(r)
    return "step %s (batch %s) recompiled in %s" % (
        r.get("global_step", "?"),
        r.get("batch_size", "?"),
        h.seconds(r.get("s")),
    )


def error_text(error: Optional[Dict[str, Any]]) -> str:
    """'Type: message' of a finished event's error, or '-'."""
    if not error:
        return "-"
    return "%s: %s" % (error.get("type"), error.get("message"))


def per_class_rows(run: Dict[str, Any], test: Optional[Dict[str, Any]]) -> List[List[Any]]:
    """One row per class: validation P/R/F1 of the best epoch, and the test set's when there is one."""
    val = ((run.get("best_epoch") or {}).get("val") or {}).get("per_class") or []
    tst = (test or {}).get("per_class") or []
    rows = []
    for i, name in enumerate(run["class_names"]):
        v = val[i] if i < len(val) and isinstance(val[i], dict) else {}
        t = tst[i] if i < len(tst) and isinstance(tst[i], dict) else {}
        rows.append(
            [
                i,
                name,
                h.ratio(v.get("precision")),
                h.ratio(v.get("recall")),
                h.ratio(v.get("f1")),
                h.ratio(t.get("precision")),
                h.ratio(t.get("recall")),
                h.ratio(t.get("f1")),
            ]
        )
    return rows


def other_job_line(o: Dict[str, Any]) -> str:
    """'Other job resume-001 (resume): ok, its train legs recorded 80 steps (first 32, full 32, resumed 16).'"""
    legs = o.get("legs") or []
    if not legs:
        return "Other job %s (%s): %s, %d steps recorded." % (o["jid"], o["kind"], o["label"], o["steps_recorded"])
    return "Other job %s (%s): %s, its train legs recorded %s steps (%s)%s." % (
        o["jid"],
        o["kind"],
        o["label"],
        h.count(o.get("leg_steps")),
        ", ".join("%s %s" % (leg["leg"], h.count(leg["steps"])) for leg in legs),
        (", %d in its own events" % o["steps_recorded"]) if o["steps_recorded"] else "",
    )


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
            self.add(
                "> **Written while jobs were still running** (%s): this record holds what existed at %s; "
                "export again when they end." % (", ".join(self.r["still_running"]), self.r["generated"]["iso"]),
                "",
            )
        self.first_screen()
        for section in (
            self.session,
            self.limitations,
            self.environment,
            self.data,
            self.training,
            self.performance,
            self.alignment,
            self.export,
            self.checks,
            self.jobs_not_ok,
            self.reproduce,
            self.record_files,
        ):
            section()
        return "\n".join(self.out).rstrip() + "\n"

    def first_screen(self) -> None:
        self.add(*candidate_lines(self.r))
        self.add("## Acceptance", "")
        self.add(*summary.acceptance_lines(self.r.get("acceptance")))
        self.add("## Results", "")
        self.add(*summary.metrics_lines(self.r["training"]))
        self.add("## Course checks", "")
        self.add(*course.course_lines(self.r))
        self.add(*shift_md.scope_lines(self.r))
        self.add("## Throughput", "")
        self.add(*summary.throughput_lines(self.r["performance"], self.r))
        self.add("## Failed, blocked, and the next command", "")
        self.add(*summary.blocked_lines(self.r))

    def session(self) -> None:
        s = self.r["session"]
        self.add("## 1. Session", "")
        self.add(
            "Session `%s` on host %s, user %s; created %s, last activity %s; record written %s by %s "
            "(%s on disk). Opened by: `%s`."
            % (
                s["id"],
                s["host"] or "-",
                s["user"] or "-",
                s["created_iso"] or "-",
                s["last_activity_iso"] or "-",
                self.r["generated"]["iso"],
                self.r["generated"]["by"],
                h.size(s["bytes"]),
                s["command_line"] or "-",
            ),
            "",
        )
        if s.get("imported"):
            imp = s["imported"]
            self.add(
                "**Imported** from host %s (revision %s): %s files verified against its manifest."
                % (imp.get("host") or "-", imp.get("revision") or "-", imp.get("files_verified")),
                "",
            )
        self.add(
            *table(
                ["job", "kind", "status", "started", "duration", "device", "events"],
                [
                    (
                        j["jid"],
                        j["kind"],
                        j["label"],
                        j["created_iso"],
                        h.seconds(j["duration_s"]),
                        j["device"],
                        j["events"],
                    )
                    for j in s["jobs"]
                ],
            )
        )
        for o in self.r["other_jobs"]:
            self.add(other_job_line(o), "")

    def limitations(self) -> None:
        lim = self.r.get("limitations") or {}
        self.add("## 2. Known limitations", "")
        for where in lim.get("classes") or []:
            weak = ", ".join(
                "%s F1 %s (precision %s, recall %s)"
                % (w["name"], h.ratio(w["f1"], 2), h.ratio(w["precision"], 2), h.ratio(w["recall"], 2))
                for w in where["weakest"]
            )
            confused = ", ".join(
                "%s taken for %s %s times (%s of %s)"
                % (c["true"], c["predicted"], c["count"], h.percent(c["share_of_true"]), c["true"])
                for c in where["confused"]
            )
            self.add("- Weakest classes on the %s: %s." % (where["on"], weak or "-"))
            self.add("  Most confused: %s." % (confused or "none"))
        self.add("", "Not verified in this session:", "")
        self.add(*["- " + s for s in (lim.get("not_verified") or [])[:10]] or ["- Nothing this record can detect."])
        self.add(*["- " + s for s in self.r["not_verified"] if not s.startswith(ASCEND_SENTENCE)])
        self.add("", "Must be re-tested on the board:", "")
        self.add(*["- **%s**: %s" % (x["what"], x["how"]) for x in lim.get("retest_on_board") or []])
        self.add("")

    def environment(self) -> None:
        self.add("## 3. Environment", "")
        if not self.r["environment"]:
            self.add("No environment job in this session.", "")
        for e in self.r["environment"]:
            self.add("### %s" % e["jid"], "", status_line(e), "", "Python: `%s`" % (e.get("python") or "-"), "")
            self.add(*stack_lines(e.get("summary")))
            self.add(*checks_line(e["checks"]))
            self.add("The allow-listed environment variables are in section 11 (Reproduce).", "")

    def data(self) -> None:
        self.add("## 4. Data contract", "")
        if not self.r["data"]:
            self.add("No data job in this session.", "")
        for d in self.r["data"]:
            split = d.get("split") or {}
            self.add("### %s" % d["jid"], "", status_line(d), "")
            self.add(
                "Source %s%s, pixels scaled %s; split seed %s, validation fraction %s: %s train and %s validation "
                "images; index files verified by SHA-256 (train %s…, validation %s…) in `%s`."
                % (
                    d.get("source") or "-",
                    " (**synthetic**)" if d.get("synthetic") else "",
                    d.get("scale") or "-",
                    split.get("seed"),
                    split.get("val_fraction"),
                    h.count(split.get("n_train")),
                    h.count(split.get("n_val")),
                    str(split.get("train_idx_sha256") or "-")[:12],
                    str(split.get("val_idx_sha256") or "-")[:12],
                    d.get("split_path") or "not found",
                ),
                "",
            )
            if split.get("source_files"):
                self.add(
                    *table(["source file", "sha256"], [(f.get("name"), f.get("sha256")) for f in split["source_files"]])
                )
            self.add("Classes: %s." % ", ".join("%d %s" % (i, n) for i, n in enumerate(d["class_names"])), "")
            self.add(*checks_line(d["checks"]))

    def training(self) -> None:
        t = self.r["training"]
        self.add("## 5. Training", "")
        if not t["runs"]:
            self.add("No training job in this session.", "")
        figures = self.files.get("figures") or {}
        for run in t["runs"]:
            self.training_run(run, figures.get(run["jid"]) or {})
        self.add("### Test-set evaluations (%d)" % t["test_evaluations"], "")
        if not t["tests"]:
            self.add("The test set was not evaluated in this session.", "")
        for x in t["tests"]:
            self.add(
                "%s (%s): model from %s, %s images: accuracy %s, macro-F1 %s; evaluation %s of that model."
                % (
                    x["jid"],
                    x["label"],
                    x["from"] or "-",
                    h.count(x["samples"]),
                    h.ratio(x["accuracy"]),
                    h.ratio(x["macro_f1"]),
                    x.get("evaluations_of_model") or "-",
                ),
                "",
            )
            fig = (figures.get(x["jid"]) or {}).get("confusion")
            if fig:
                self.add("![%s confusion matrix](%s)" % (x["jid"], fig), "")
            self.add(*checks_line(x["checks"]))
        self.add(*shift_md.section_lines(self.r, figures))

    def training_run(self, run: Dict[str, Any], figs: Dict[str, str]) -> None:
        jid = run["jid"]
        cfg = run["config"]
        tr, model, data = cfg.get("train") or {}, cfg.get("model") or {}, cfg.get("data") or {}
        self.add("### %s" % jid, "", status_line(run), "")
        self.add(
            "Effective config: device %s; model %s (hidden %s); %s epochs, batch %s, %s lr %s, %s, %s mode, "
            "seed %s; data %s. Every key: [appendix/config.md](%s)."
            % (
                device_text(effective_device(run.get("device") or {}, cfg.get("device"))),
                model.get("name"),
                model.get("hidden"),
                tr.get("epochs"),
                tr.get("batch_size"),
                tr.get("optimizer"),
                tr.get("lr"),
                tr.get("precision"),
                tr.get("mode"),
                tr.get("seed"),
                data.get("source"),
                ax.CONFIG,
            ),
            "",
        )
        for key, title in (
            ("loss", "training loss"),
            ("step_time", "time per step"),
            ("layers", "per-layer gradient norms (training-state monitor)"),
            ("loss_scale", "loss scale and overflow skips"),
        ):
            if figs.get(key):
                self.add("![%s %s](%s)" % (jid, title, figs[key]), "")
        best = run["best_epoch"]
        self.add(
            *table(
                ["epoch", "train loss", "images", "val accuracy", "val macro-F1", "epoch time", ""],
                [
                    (
                        e.get("epoch"),
                        h.loss(e.get("train_loss")),
                        h.count(e.get("samples")),
                        h.ratio((e.get("val") or {}).get("accuracy")),
                        h.ratio((e.get("val") or {}).get("macro_f1")),
                        h.seconds(e.get("epoch_s")),
                        "**best**" if best and e.get("epoch") == best.get("epoch") else "",
                    )
                    for e in run["epochs"]
                ],
            )
        )
        if not best:
            self.add("No epoch was completed, so there is no best epoch.", "")
        else:
            self.add(
                "Best epoch: **%s**, chosen on validation macro-F1; its checkpoint is the one tested. Epoch time "
                "includes validation; epoch 1 also includes graph compilation." % best.get("epoch"),
                "",
            )
            tests = [x for x in self.r["training"]["tests"] if x.get("from") == jid]
            test = tests[-1] if tests else None
            self.add(
                *table(
                    [
                        "label",
                        "class",
                        "val precision",
                        "val recall",
                        "val F1",
                        "test precision",
                        "test recall",
                        "test F1",
                    ],
                    per_class_rows(run, test),
                )
            )
            if figs.get("confusion"):
                self.add(
                    "![%s confusion matrix](%s) (as a table: [appendix/classes.md](%s))"
                    % (jid, figs["confusion"], ax.CLASSES),
                    "",
                )
        par = run.get("parallel")
        if par:
            self.parallel(par)
        self.add(*checks_line(run["checks"]))
        self.add(*artifacts_block(run["artifacts"]))

    def parallel(self, par: Dict[str, Any]) -> None:
        s = par["settings"]
        self.add(*parallel_block(par))
        self.add(
            "Launcher %s; ranks seen in this job's events: %s; weights identical across ranks: %s."
            % (par["launcher"], par["ranks_seen"] or "-", par["weights_identical"]),
            "",
        )
        if s.get("workers") and not par.get("ranks"):
            self.add("No rank throughput was recorded.", "")

    def performance(self) -> None:
        rows = self.r["performance"]
        self.add("## 6. Performance", "")
        if not rows:
            self.add("No job measured performance (no perf event).", "")
            return
        main = [p for p in rows if p.get("epoch") is None]
        self.add(
            *table(
                [
                    "job",
                    "scope",
                    "device",
                    "compile (first step)",
                    "warm-up steps",
                    "steady steps",
                    "median",
                    "P95",
                    "throughput",
                    "batch",
                ],
                [
                    (
                        p["jid"],
                        p["scope"],
                        p["device"],
                        h.seconds(p["first_step_s"]),
                        p["warmup_steps"],
                        h.count(p["steady_n"]),
                        h.ms(p["median_ms"]),
                        h.ms(p["p95_ms"]),
                        h.rate(p["images_per_s"]),
                        p["batch_size"],
                    )
                    for p in main
                ],
            )
        )
        if len(main) < len(rows):
            self.add("Per-epoch rows, each saying what it measures: [appendix/timing.md](%s)." % ax.TIMING, "")
        recompiles: Dict[Any, Any] = {}
        for p in rows:
            for r in p.get("recompile") or []:
                recompiles.setdefault((p["jid"], str(r)), (p["jid"], r))
        if recompiles:
            self.add(
                "Recompiled steps (left out of the steady figures): %s."
                % "; ".join("%s %s" % (jid, recompile_text(r)) for jid, r in list(recompiles.values())[:5]),
                "",
            )
        self.memory(rows)
        timing = sorted({p["timing_rule"] for p in rows if p.get("timing_rule")})
        syncs = sorted({p["sync"] for p in rows if p.get("sync")})
        rules = {k: v for p in rows for k, v in p["rules"].items()}
        self.add(
            "Measuring rules: the first step includes graph compilation and is reported alone; the warm-up steps "
            "after it are left out; median and P95 are over the remaining (steady) steps. Sync boundary: %s.%s%s"
            % (
                "; ".join(syncs) or "not recorded",
                "".join(" %s." % t for t in timing),
                "".join(" %s: %s." % (k, v) for k, v in sorted(rules.items())),
            ),
            "",
        )

    def memory(self, rows: Sequence[Dict[str, Any]]) -> None:
        """Peak memory: one sentence when every measurement agrees, else one row per job with its largest figure."""
        per_job: Dict[str, Dict[str, Any]] = {}
        for p in rows:
            mine = per_job.setdefault(
                p["jid"],
                {
                    "host": None,
                    "device": None,
                    "host_means": p["host_rss_measures"],
                    "device_means": p["device_memory_measures"],
                },
            )
            for key, value in (("host", p["peak_host_rss_mb"]), ("device", p["peak_device_mb"])):
                if isinstance(value, (int, float)) and (mine[key] is None or value > mine[key]):
                    mine[key] = value
        values = {(h.mebibytes(m["host"]), num(m["device"])) for m in per_job.values()}
        first = next(iter(per_job.values()))
        if len(values) == 1:
            host, device = next(iter(values))
            self.add(
                "Peak memory, the same in every measurement of %s: host %s (%s); device %s (%s)."
                % (
                    ", ".join(per_job),
                    host,
                    first["host_means"],
                    device if device != "-" else "not measured",
                    first["device_means"],
                ),
                "",
            )
            return
        self.add("Peak memory (host: %s; device: %s):" % (first["host_means"], first["device_means"]), "")
        self.add(
            *table(
                ["job", "peak host RSS", "peak device"],
                [
                    (
                        jid,
                        h.mebibytes(m["host"]),
                        h.mebibytes(m["device"]) if m["device"] is not None else "not measured",
                    )
                    for jid, m in per_job.items()
                ],
            )
        )

    def alignment(self) -> None:
        a = self.r["alignment"]
        self.add("## 7. Alignment", "")
        self.add(
            "A tensor passes when every element satisfies %s. Every tensor: [appendix/tensors.md](%s)."
            % (a["formula"], ax.TENSORS),
            "",
        )
        if not a["jobs"]:
            self.add("No alignment job in this session.", "")
        for j in a["jobs"]:
            worst: Dict[str, Any] = max(j["diffs"], key=lambda d: d.get("max_abs") or 0, default={})
            tol = "; ".join("atol %s, rtol %s" % (h.sci(at), h.sci(rt)) for at, rt in j["tolerances"]) or "-"
            self.add("### %s" % j["jid"], "", status_line(j), "")
            self.add(
                "Reference `%s` against candidate `%s`: **%d of %d** tensors within tolerance (%s); largest "
                "difference %s in %s.%s"
                % (
                    cell(j["reference"]),
                    cell(j["candidate"]),
                    j["passed"],
                    len(j["diffs"]),
                    tol,
                    h.sci(worst.get("max_abs")),
                    worst.get("name") or "-",
                    (" Outside tolerance: %s." % ", ".join(map(str, j["failed"][:8]))) if j["failed"] else "",
                ),
                "",
            )
            self.add(*checks_line(j["checks"]))

    def export(self) -> None:
        self.add("## 8. Export and load checks", "")
        if not self.r["export"]:
            self.add("No export job in this session.", "")
        for e in self.r["export"]:
            self.add("### %s" % e["jid"], "", status_line(e), "")
            about = about_line(self.r, e["jid"])
            if about:
                self.add(about, "")
            self.add(*checks_line(e["checks"]))
            self.add(*artifacts_block(e["artifacts"]))

    def checks(self) -> None:
        c = self.r["checks"]
        self.add("## 9. Checks that did not pass", "")
        self.add(
            "Evidence levels over all jobs (every check, on the device its job ran: [appendix/checks.md](%s)): %s."
            % (ax.CHECKS, ", ".join("%s %d" % kv for kv in c["counts"].items())),
            "",
        )
        if not c["not_passed"]:
            self.add(
                "Every recorded check is an observed pass."
                if any(c["counts"].values())
                else "No job recorded a check.",
                "",
            )
            return
        self.add(
            *table(
                ["job", "evidence", "check", "reason", "hint"],
                [(x["jid"], x["status"], x["id"], x["reason"], x.get("hint")) for x in c["not_passed"]],
            )
        )

    def jobs_not_ok(self) -> None:
        self.add("## 10. Jobs that did not end ok", "")
        rows = self.r["jobs_not_ok"]
        if not rows:
            self.add("Every job that ended, ended ok.", "")
        else:
            self.add(
                *table(
                    ["job", "kind", "status", "error"],
                    [(j["jid"], j["kind"], j["label"], error_text(j["error"])) for j in rows],
                )
            )
        if self.r["still_running"]:
            self.add("Still running when written: %s." % ", ".join(self.r["still_running"]), "")
        self.damaged_lines()

    def damaged_lines(self) -> None:
        """Which event lines were damaged (torn, merged, not JSON, wrongly typed) and which seq numbers are missing."""
        jobs = [j for j in self.r["jobs"] if j.get("damaged_count") or j.get("missing_seq")]
        if not jobs:
            return
        self.add(
            "### Damaged event lines and missing seq numbers",
            "",
            "A damaged line was skipped: nothing it said is in this record.",
            "",
        )
        rows = [(j["jid"], d["file"], d["line"], d["what"], d["problem"]) for j in jobs for d in j["damaged_lines"]]
        if rows:
            self.add(*table(["job", "file", "line", "damage", "problem"], rows))
        for jid, n in [
            (j["jid"], j["damaged_count"] - len(j["damaged_lines"]))
            for j in jobs
            if j["damaged_count"] > len(j["damaged_lines"])
        ]:
            self.add("%s: %d more damaged line(s) not listed." % (jid, n), "")
        gaps = [
            (
                j["jid"],
                "main" if m["rank"] is None else m["rank"],
                str(m["first"]) if m["first"] == m["last"] else "%s–%s" % (m["first"], m["last"]),
            )
            for j in jobs
            for m in j["missing_seq"]
        ]
        if gaps:
            self.add(*table(["job", "rank", "missing seq"], gaps))

    def reproduce(self) -> None:
        from workbench.record.markdown.reproduce import reproduce_lines

        self.add("## 11. Reproduce", "")
        self.add(*reproduce_lines(self.r.get("reproduce"), self.files))

    def record_files(self) -> None:
        from workbench.record.markdown.reproduce import files_lines

        self.add("## 12. Files of this record", "")
        self.add(*files_lines(self.r, self.files))


def render(report: Dict[str, Any]) -> str:
    """report.md for a collected record."""
    return ReportWriter(report).render()
