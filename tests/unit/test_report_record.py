"""report.md for a person: numbers with units, the acceptance screen, one best epoch, limitations, parallel runs."""

import copy
import json

from tests.support.job_folders import event, write_job
from workbench.events.protocol import encode
from workbench.record.collect import collect
from workbench.record.limitations import confused_pairs, weakest_classes
from workbench.record.markdown import report as markdown
from workbench.render import humanize as h
from workbench.session.store import SessionStore

NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

# The shape helper `accept` adds to report.json ("acceptance"), hand-built until it is on main.
ACCEPTANCE = {
    "format": "ms-workbench.acceptance.verdict/1",
    "target": {"device": "CPU", "requested": "auto", "why": "auto → CPU: no /dev/davinci*, no npu-smi"},
    "layers": [
        {
            "layer": "task",
            "verdict": "observed-pass",
            "summary": "validation and test macro-F1 above their minimums",
            "observed_on": ["CPU"],
            "deciding": [
                {
                    "job": "train-001",
                    "check": "val-macro-f1",
                    "level": "observed-pass",
                    "device": "CPU",
                    "value": 0.8796,
                    "threshold": 0.85,
                    "detail": "best epoch 5",
                },
                {
                    "job": "test-001",
                    "check": "test-macro-f1",
                    "level": "observed-pass",
                    "device": "CPU",
                    "value": 0.865,
                    "threshold": 0.84,
                    "detail": "first evaluation",
                },
            ],
            "missing": [],
        },
        {
            "layer": "framework",
            "verdict": "observed-fail",
            "summary": "fp16 alignment outside tolerance",
            "observed_on": ["CPU"],
            "deciding": [
                {
                    "job": "align-002",
                    "check": "alignment",
                    "level": "observed-fail",
                    "device": "CPU",
                    "value": 0.0097,
                    "threshold": 0.001,
                    "detail": "layer.1.Dense diverges",
                }
            ],
            "missing": [
                {
                    "what": "resume verified against the uninterrupted run",
                    "command": "ms-workbench run resume",
                    "key": None,
                }
            ],
        },
        {
            "layer": "device",
            "verdict": "not-run",
            "summary": "target CPU, no device claim",
            "observed_on": [],
            "deciding": [],
            "missing": [{"what": "a run on an Ascend device", "command": None, "key": "device.target"}],
        },
    ],
    "thresholds": {"task.val_macro_f1_min": 0.85, "task.test_macro_f1_min": 0.84},
    "overall": "observed-fail",
}


def test_numbers_are_written_for_people():
    assert h.rate(15140.3) == "15 140 images/s"
    assert h.ms(3.34) == "3.3 ms" and h.ms(16.2) == "16 ms" and h.ms(0.421) == "0.42 ms" and h.ms(1250) == "1 250 ms"
    assert h.seconds(41.2) == "41 s" and h.seconds(0.54) == "0.5 s" and h.seconds(185) == "3 min 05 s"
    assert h.mebibytes(783.4) == "783 MB" and h.size(407204) == "407.2 kB" and h.count(54000) == "54 000"
    assert h.ratio(0.87961) == "0.880" and h.percent(0.19) == "19.0 %" and h.sci(1.3e-06) == "1.3e-06"
    assert h.rate(None) == "-" and h.ms(float("nan")) == "-" and h.ratio(True) == "-"


def _session(tmp_path, epochs_best=(True, True, False)):
    store = SessionStore(tmp_path)
    sid = store.create()
    matrix = [[50 if i == j else 0 for j in range(10)] for i in range(10)]
    matrix[6][0], matrix[6][6], matrix[4][6] = 20, 30, 7
    per_class = [{"precision": 0.9, "recall": 0.9, "f1": 0.9, "support": 50} for _ in range(10)]
    per_class[6] = {"precision": 0.7, "recall": 0.6, "f1": 0.65, "support": 50}
    per_class[4] = {"precision": 0.8, "recall": 0.8, "f1": 0.8, "support": 50}
    events = [event(0, "started", kind="train", pid=1, python="p", argv=[], version="0.1.0", device={})]
    for n, best in enumerate(epochs_best, start=1):
        events.append(
            event(
                n,
                "epoch",
                epoch=n,
                train_loss=1.0 / n,
                samples=500,
                is_best=best,
                epoch_s=2.0,
                val={"accuracy": 0.8, "macro_f1": 0.7 + n / 100, "per_class": per_class, "confusion": matrix},
            )
        )
    k = len(events)
    for n in range(1, len(epochs_best) + 1):
        events.append(
            event(
                k,
                "perf",
                scope="epoch",
                epoch=n,
                first_step_s=3.3,
                warmup_steps=2,
                batch_size=64,
                steady={"n": 7, "median_ms": 3.0 + n, "p95_ms": 9.0, "images_per_s": 15140.3},
                peak_host_rss_mb=561.5,
                peak_device_mb=None,
            )
        )
        k += 1
    events.append(
        event(
            k,
            "perf",
            scope="run",
            first_step_s=3.3,
            warmup_steps=2,
            batch_size=64,
            steady={"n": 21, "median_ms": 4.0, "p95_ms": 9.0, "images_per_s": 15140.3},
            peak_host_rss_mb=561.5,
            peak_device_mb=None,
        )
    )
    events.append(event(k + 1, "finished", status="ok", error=None))
    write_job(store, sid, "train-001", events)
    return store, sid


def test_only_the_best_epoch_is_marked_and_numbers_have_units(tmp_path):
    store, sid = _session(tmp_path)
    report = collect(store, sid)
    text = markdown.render(report)
    marked = [line for line in text.splitlines() if "**best**" in line]
    assert len(marked) == 1 and marked[0].startswith("| 2 |")  # the last epoch the job marked best
    assert "15 140 images/s" in text and "1.514e+04" not in text
    # Peak memory: one sentence for identical measurements, not a table of identical rows.
    assert text.count("561.5") == 0 and text.count("562 MB") == 1
    assert "Per-epoch rows, each saying what it measures" in text


def test_the_first_screen_holds_the_acceptance_table(tmp_path):
    store, sid = _session(tmp_path)
    report = collect(store, sid)
    report["acceptance"] = copy.deepcopy(ACCEPTANCE)
    lines = markdown.render(report).splitlines()
    head = lines[:60]
    assert head.index("## Acceptance") < head.index("| layer | verdict | observed on | deciding evidence |")
    rows = [line for line in head if line.startswith(("| task ", "| framework ", "| device "))]
    assert [r.split(" | ")[1] for r in rows] == ["**observed-pass**", "**observed-fail**", "**not-run**"]
    assert "val-macro-f1 observed-pass 0.880 (threshold 0.850) on CPU" in rows[0]
    assert "target CPU, no device claim" in rows[2]
    assert any("auto → CPU: no /dev/davinci*, no npu-smi" in line for line in head)
    # Missing evidence is listed with the command or the key that produces it.
    assert any("`ms-workbench run resume`" in line for line in head)
    assert any("set `device.target`" in line for line in head)


def test_without_acceptance_the_record_says_there_is_no_verdict(tmp_path):
    """A report.json from before the acceptance verdict (no `acceptance` key) still renders, and says so."""
    store, sid = _session(tmp_path)
    report = collect(store, sid)
    del report["acceptance"]
    text = markdown.render(report)
    assert "No acceptance verdict in this record" in text.split("## Results")[0]


def test_limitations_name_the_weakest_classes_and_the_confused_pairs(tmp_path):
    store, sid = _session(tmp_path)
    report = collect(store, sid)
    (where,) = report["limitations"]["classes"]
    assert [w["name"] for w in where["weakest"]][:2] == ["Shirt", "Coat"]
    assert where["confused"][0] == {"true": "Shirt", "predicted": "T-shirt/top", "count": 20, "share_of_true": 0.4}
    text = markdown.render(report)
    section = text.split("## 2. Known limitations")[1].split("## 3.")[0]
    assert "Shirt F1 0.65" in section and "Shirt taken for T-shirt/top 20 times (40.0 % of Shirt)" in section
    assert "No NPU" in section and "MindSpore Lite" in section and "**Lite**" in section and "**CANN**" in section


def test_weakest_and_confused_ignore_broken_input():
    assert weakest_classes([None, {"f1": "x"}, {"f1": 0.2}], NAMES) == [
        {"label": 2, "name": "Pullover", "f1": 0.2, "precision": None, "recall": None, "support": None}
    ]
    assert confused_pairs("not a matrix", NAMES) == [] and confused_pairs([[0, 0], [0, 0]], NAMES) == []


def test_a_parallel_run_lists_every_rank_the_effective_batch_and_the_caveat(tmp_path):
    store = SessionStore(tmp_path)
    sid = store.create()
    events = [event(0, "started", kind="train", pid=1, python="p", argv=[], version="0.1.0", device={})]
    for rank, rate in ((0, 7000.0), (1, 6800.0)):
        events.append(
            event(
                len(events),
                "perf",
                scope="run",
                rank=rank,
                first_step_s=2.0,
                warmup_steps=2,
                steady={"n": 10, "median_ms": 4.5, "p95_ms": 6.0, "images_per_s": rate},
            )
        )
    events.append(event(len(events), "finished", status="ok", error=None))
    job = write_job(store, sid, "train-001", events)
    (job / "config.json").write_text('{"train": {"batch_size": 32, "parallel": {"workers": 2}}}')
    report = collect(store, sid)
    par = report["training"]["runs"][0]["parallel"]
    assert [r["rank"] for r in par["ranks"]] == [0, 1]
    assert par["effective_batch"] == 64  # parity bench met its goal: no caveat
    assert par["parity_caveat"] is None
    text = markdown.render(report)
    assert "effective batch **64**" in text and "| 1 | 6 800 images/s |" in text
    assert "Caveat:" not in text


def test_the_effective_config_shows_the_resolved_device_and_why():
    decided = {"target": "CPU", "id": 0, "requested": "auto", "why": "auto: no /dev/davinci*, no npu-smi"}
    # The runner's decision in config.json alone, or in job.json alone: either way the record says both.
    assert (
        markdown.device_text(markdown.effective_device({}, decided))
        == "auto → CPU:0 (auto: no /dev/davinci*, no npu-smi)"
    )
    job = {"requested": "auto", "resolved": "CPU", "id": 0, "why": "auto: no /dev/davinci*, no npu-smi"}
    assert (
        markdown.device_text(markdown.effective_device(job, {"target": "auto", "id": 0}))
        == "auto → CPU:0 (auto: no /dev/davinci*, no npu-smi)"
    )


def test_reproduce_outside_git_hashes_the_source_tree_and_a_missing_interpreter_is_explained(tmp_path):
    from workbench.record import reproduce

    (tmp_path / "jobs" / "common").mkdir(parents=True)
    (tmp_path / "jobs" / "common" / "network.py").write_text("def build_net(): pass\n")
    rev = reproduce.code_revision(tmp_path)
    assert rev["git"] is None and rev["git_unavailable"] and rev["source_files_hashed"] == 1
    assert len(rev["source_tree_sha256"]) == 64
    (tmp_path / "jobs" / "common" / "network.py").write_text("def build_net(): return 1\n")
    assert reproduce.code_revision(tmp_path)["source_tree_sha256"] != rev["source_tree_sha256"]
    assert reproduce.model_code(tmp_path) == {"jobs/common/network.py": b"def build_net(): return 1\n"}
    gone = reproduce.interpreter_packages(str(tmp_path / "no-python"))
    assert gone["lock"] is None and "FileNotFoundError" in gone["error"]
    assert "# Not listed: FileNotFoundError" in reproduce.lock_text(gone, "sid")


def test_rerun_commands_name_the_module_not_a_worktree_path():
    from workbench.record.reproduce import rerun_commands

    (cmd,) = rerun_commands(
        [
            {
                "jid": "train-001",
                "kind": "train",
                "command": ["/somewhere/workbench/__main__.py", "run", "train", "--set", "a=b c"],
            }
        ]
    )
    assert cmd["as_run"] == "python -m workbench run train --set 'a=b c'"
    assert cmd["again"] == "python -m workbench run train --config jobs/train-001/config.yaml --session NEW_SID"


def test_timing_repeats_give_the_spread_and_the_host_load(tmp_path):
    store, sid = _session(tmp_path)
    events = (store.root / sid / "jobs" / "train-001" / "events.jsonl").read_text().splitlines()
    per_repeat = [
        {"median_ms": m, "images_per_s": 64000.0 / m, "steps": 50, "loadavg_1_5_15": [load, 1.0, 1.0]}
        for m, load in ((4.0, 1.2), (5.0, 2.5), (4.5, 1.9))
    ]
    check = event(
        len(events) - 1,
        "check",
        id="perf-repeats",
        title="timing repeats",
        status="observed-pass",
        detail="3 repeats",
        evidence={
            "repeats": 3,
            "median_ms": 4.5,
            "min_ms": 4.0,
            "max_ms": 5.0,
            "spread_pct": 22.2,
            "per_repeat": per_repeat,
        },
    )
    # an older record (no images_per_s_rule): its per-repeat figure is batch ÷ median step, named apart from the
    # run's throughput; a record with the rule names it the same quantity (test below)
    finished = json.loads(events.pop())
    finished["seq"] += 1  # the check takes the finished event's place, which moves one on
    events += [encode(check).rstrip("\n"), encode(finished).rstrip("\n")]
    (store.root / sid / "jobs" / "train-001" / "events.jsonl").write_text("\n".join(events) + "\n")
    report = collect(store, sid)
    assert report["jobs"][0]["seq_problems"] == [] and report["jobs"][0]["missing_seq"] == []
    throughput = markdown.render(report).split("## Throughput")[1].split("## Failed, blocked")[0]
    assert (
        "timed 3 times after training, ? steps each: median step 4.5 ms, batch ÷ median step (not the throughput "
        "above) 12 800 images/s to 16 000 images/s, spread of the repeats' medians 22 %" in throughput
    )
    assert "host load 1-min load average 1.20 to 2.50" in throughput
    assert "steady throughput (Σ images / Σ wall time of the steady steps" in throughput
    assert not any("Timings come from one run" in s for s in report["limitations"]["not_verified"])


def test_the_recorded_parallel_run_lists_both_ranks(tmp_path):
    """The events of a real 2-rank run (tests/fixtures/events/train_parallel.jsonl) in a session."""
    from pathlib import Path

    store = SessionStore(tmp_path)
    sid = store.create()
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "events" / "train_parallel.jsonl"
    job = write_job(store, sid, "train-001", [fixture.read_bytes()])
    (job / "config.json").write_text('{"train": {"batch_size": 32, "parallel": {"workers": 2}}}')
    report = collect(store, sid)
    par = report["training"]["runs"][0]["parallel"]
    assert [r["rank"] for r in par["ranks"]] == [0, 1] and par["effective_batch"] == 64
    text = markdown.render(report)
    assert "| 0 | 1 569 images/s |" in text and "| 1 | 1 655 images/s |" in text
    throughput = text.split("## Throughput")[1].split("## Failed, blocked")[0]
    assert "train-001 rank 0" in throughput and "train-001 rank 1" in throughput


def test_the_stack_line_says_what_the_environment_job_found():
    summary = {
        "python": {"version": "3.9.18", "implementation": "CPython", "machine": "aarch64", "venv": False},
        "packages": {"mindspore": {"version": "2.4.10"}, "mindspore_lite": None},
        "cann": {"found": True, "version": "8.0.RC3"},
        "driver": {"found": False},
        "firmware": "odd",
    }
    (line, _) = markdown.stack_lines(summary)
    assert line == (
        "Stack: Python 3.9.18 (CPython, aarch64); mindspore 2.4.10, mindspore_lite not installed; "
        "CANN 8.0.RC3; driver not found; firmware -."
    )
    assert markdown.stack_lines("not a dict") == []
