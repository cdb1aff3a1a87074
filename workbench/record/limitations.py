"""What the record does not show: weakest classes, most confused pairs, what was not verified, what to re-test on the board."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from workbench.events.protocol import Evidence

WEAKEST = 3
CONFUSED = 3
# What a CPU session can never establish about the board the model is meant for.
RETEST_ON_BOARD = (
    (
        "board",
        "Run env with the device probes on the Ascend board: the device must compute, be read back and "
        "show the job's process on the NPU.",
    ),
    (
        "CANN",
        "Check the CANN toolkit, driver and firmware versions on the board against the MindSpore build; "
        "a CPU session records none of them.",
    ),
    (
        "training on the NPU",
        "Train again with device.target=Ascend: graph compilation, step time, memory and "
        "the candidate precision all change with the device.",
    ),
    (
        "Lite",
        "Load the MindIR in MindSpore Lite on the board and compare its outputs with the reference set "
        "(reproduce/reference/).",
    ),
    (
        "request latency",
        "Measure batch-1 latency per request on the board (warm, P50 and P95); the throughput "
        "here is CPU training throughput, not serving latency.",
    ),
)


def weakest_classes(per_class: Any, names: Sequence[str], k: int = WEAKEST) -> List[Dict[str, Any]]:
    """The k classes with the lowest F1 (ties by label), with precision and recall."""
    rows = []
    for label, c in enumerate(per_class or []):
        if isinstance(c, dict) and isinstance(c.get("f1"), (int, float)):
            rows.append(
                {
                    "label": label,
                    "name": c.get("name") or (names[label] if label < len(names) else str(label)),
                    "f1": c["f1"],
                    "precision": c.get("precision"),
                    "recall": c.get("recall"),
                    "support": c.get("support"),
                }
            )
    rows.sort(key=lambda r: (r["f1"], r["label"]))
    return rows[:k]


def confused_pairs(matrix: Any, names: Sequence[str], k: int = CONFUSED) -> List[Dict[str, Any]]:
    """The k largest off-diagonal cells (true class taken for another), with their share of the true class."""
    if not isinstance(matrix, list):
        return []
    cells: List[Dict[str, Any]] = []
    for t, row in enumerate(matrix):
        if not isinstance(row, list):
            continue
        total = sum(v for v in row if isinstance(v, (int, float)))
        for p, value in enumerate(row):
            if p != t and isinstance(value, (int, float)) and value > 0:
                cells.append(
                    {
                        "true": names[t] if t < len(names) else str(t),
                        "predicted": names[p] if p < len(names) else str(p),
                        "count": value,
                        "share_of_true": (value / total) if total else None,
                    }
                )
    cells.sort(key=lambda c: (-c["count"], c["true"], c["predicted"]))
    return cells[:k]


def _where(run: Dict[str, Any], test: Optional[Dict[str, Any]], names: Sequence[str]) -> List[Dict[str, Any]]:
    out = []
    best = run.get("best_epoch") or {}
    val = best.get("val") or {}
    if val.get("per_class") or val.get("confusion"):
        out.append(
            {
                "on": "validation, best epoch %s of %s" % (best.get("epoch"), run["jid"]),
                "weakest": weakest_classes(val.get("per_class"), names),
                "confused": confused_pairs(val.get("confusion"), names),
            }
        )
    if test and (test.get("per_class") or test.get("confusion")):
        out.append(
            {
                "on": "test set (%s, model from %s)" % (test["jid"], test.get("from") or "-"),
                "weakest": weakest_classes(test.get("per_class"), names),
                "confused": confused_pairs(test.get("confusion"), names),
            }
        )
    return out


def reduced_precision_runs(report: Dict[str, Any]) -> List[str]:
    """Which runs trained in a precision other than fp32: train jobs by their config, precision jobs whose
    candidate leg finished (their check precision-run compared both legs: observed-pass or observed-fail)."""
    out = []
    for r in report["training"]["runs"]:
        precision = str(((r.get("config") or {}).get("train") or {}).get("precision") or "fp32")
        if precision != "fp32":
            out.append("%s (%s)" % (r["jid"], precision))
    for j in report["jobs"]:
        for c in j["checks"]:
            ev = c["evidence"] if isinstance(c.get("evidence"), dict) else {}
            if c.get("id") == "precision-run" and c.get("status") in (Evidence.PASS, Evidence.FAIL):
                out.append("%s (%s leg)" % (j["jid"], ev.get("candidate") or "candidate"))
    return out


def not_verified_here(report: Dict[str, Any]) -> List[str]:
    """Short sentences: what this session did not establish (device, Lite, precision, repeats …)."""
    jobs = report["jobs"]
    out = []
    devices = sorted(
        {str((j.get("device") or {}).get("resolved")) for j in jobs if (j.get("device") or {}).get("resolved")}
    )
    if not any(d == "Ascend" for d in devices):
        out.append(
            "No NPU: every job ran on %s; nothing here is a claim about an Ascend device."
            % (", ".join(devices) or "an unrecorded device")
        )
    checks = [c for j in jobs for c in j["checks"]]
    lite = [c for c in checks if "lite" in str(c.get("id")).lower()]
    if not lite or all(c.get("status") != Evidence.PASS for c in lite):
        out.append(
            "No MindSpore Lite load: the MindIR was %s in MindSpore Lite."
            % ("not loaded" if not lite else "not loaded successfully (%s)" % lite[-1].get("status"))
        )
    if not reduced_precision_runs(report):
        out.append(
            "No training run in a reduced precision (fp16, amp-O1, amp-O2): only fp32 was trained "
            "(no train run and no precision job's candidate leg in another precision)."
        )
    if report["training"]["runs"] and not any(p.get("repeats") for p in report["performance"]):
        out.append("Timings come from one run: run-to-run variation is not measured (perf.repeats).")
    if not any(j["kind"] == "serve" for j in jobs):
        out.append("No request latency: no job served the model.")
    return out


def limitations(report: Dict[str, Any]) -> Dict[str, Any]:
    """The known-limitations record: per run and test, the weakest classes and confused pairs; gaps; board re-tests."""
    training = report["training"]
    classes = []
    tests = [t for t in training["tests"] if t["state"] == "ok"] or training["tests"]
    for run in training["runs"]:
        mine = [t for t in tests if t.get("from") == run["jid"]]
        classes += _where(run, mine[-1] if mine else None, run["class_names"])
    if not training["runs"]:
        for t in tests:
            classes += _where({"jid": "-"}, t, [str(i) for i in range(10)])
    return {
        "classes": classes,
        "not_verified": not_verified_here(report),
        "retest_on_board": [{"what": w, "how": h} for w, h in RETEST_ON_BOARD],
    }
