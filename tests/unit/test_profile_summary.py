"""The profile summary parser on a profiler output recorded from a real tiny run (record_profile.py)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from workbench.analysis.profile import ProfileParseError, short_name, summarize, type_of

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "profile").glob("*/window.json"))


@pytest.fixture(params=FIXTURES, ids=[p.parent.name for p in FIXTURES])
def recorded(request):
    window = json.loads(request.param.read_text(encoding="utf-8"))
    return request.param.parent / "profile", window


def detail_rows(profile_dir: Path):
    """MindSpore's own per-operator table, read here independently of the parser."""
    path = next(profile_dir.rglob("cpu_op_detail_info_*.csv"))
    with open(str(path), newline="") as fh:
        return list(csv.DictReader(fh))


def test_fixture_is_small_and_present():
    assert FIXTURES, "no recorded profile under tests/fixtures/profile (run record_profile.py)"
    for window in FIXTURES:
        size = sum(p.stat().st_size for p in window.parent.rglob("*") if p.is_file())
        assert size < 200_000, "%s is %d bytes" % (window.parent, size)


def test_top_operators_are_real_mindspore_ops_with_counts_and_times(recorded):
    profile_dir, window = recorded
    s = summarize(profile_dir, window["steps"], top_n=50)
    types = {op["type"] for op in s["top_ops"]}
    assert {"MatMul", "BiasAdd", "ReLU", "Adam", "SparseSoftmaxCrossEntropyWithLogits"} <= types
    totals = [op["total_ms"] for op in s["top_ops"]]
    assert totals == sorted(totals, reverse=True) and totals[0] > 0
    for op in s["top_ops"]:
        assert op["count"] == window["steps"]  # every operator of this graph runs once per step
        assert op["mean_us"] == pytest.approx(1000.0 * op["total_ms"] / op["count"])
    assert sum(op["share"] for op in s["top_ops"]) == pytest.approx(1.0)


def test_times_and_counts_agree_with_mindspores_own_table(recorded):
    profile_dir, window = recorded
    s = summarize(profile_dir, window["steps"], top_n=100)
    rows = detail_rows(profile_dir)
    by_name = {op["full_name"]: op for op in s["top_ops"]}
    assert set(by_name) == {r["full_op_name"] for r in rows}
    for r in rows:
        op = by_name[r["full_op_name"]]
        assert op["type"] == r["op_type"]
        assert op["count"] == int(r["op_occurrences"])
        assert op["total_ms"] == pytest.approx(float(r["op_total_time(ms)"]), rel=1e-4, abs=1e-5)
    assert s["op_launches"] == sum(int(r["op_occurrences"]) for r in rows)
    assert s["ops_per_step"] == pytest.approx(s["op_launches"] / window["steps"])
    assert s["consistency"]["ok"] is True


def test_launches_per_step_from_the_jobs_step_windows(recorded):
    profile_dir, window = recorded
    s = summarize(profile_dir, window["steps"], step_windows_ns=window["step_windows_ns"])
    per = s["per_step"]
    assert per["usable"] is True and per["inside"] == per["total"] == s["op_launches"]
    assert per["ops"] == [len(detail_rows(profile_dir))] * window["steps"]
    assert 0 < per["median_busy_ms"] <= per["median_wall_ms"]
    assert per["median_gap_ms"] == pytest.approx(per["median_wall_ms"] - per["median_busy_ms"], abs=0.02)
    assert s["host_ms_per_step"] == per["median_op_ms"]
    assert s["device_ms_per_step"] is None and "CPU target" in s["device_time_note"]


def test_windows_on_another_clock_are_not_used(recorded):
    profile_dir, window = recorded
    shifted = [[a + 3600 * 10**9, b + 3600 * 10**9] for a, b in window["step_windows_ns"]]
    s = summarize(profile_dir, window["steps"], step_windows_ns=shifted)
    assert s["per_step"]["usable"] is False and "do not line up" in s["per_step"]["why"]
    assert s["host_ms_per_step"] == pytest.approx(s["op_total_ms"] / window["steps"])


def test_trace_files_are_listed_with_their_tool(recorded):
    profile_dir, window = recorded
    s = summarize(profile_dir, window["steps"])
    kinds = {t["kind"]: t for t in s["trace_files"]}
    assert (
        kinds["chrome-trace"]["path"].endswith("trace_view.json")
        or "cpu_timeline_display" in kinds["chrome-trace"]["path"]
    )
    assert (
        "Perfetto" in kinds["chrome-trace"]["opens_with"]
        and "MindStudio Insight" in kinds["chrome-trace"]["opens_with"]
    )
    assert all((profile_dir / t["path"]).is_file() and t["bytes"] > 0 for t in s["trace_files"])


def test_count_mismatch_with_the_detail_table_is_reported(recorded, tmp_path):
    profile_dir, window = recorded
    copy = tmp_path / "p"
    shutil.copytree(str(profile_dir), str(copy))
    path = next(copy.rglob("cpu_op_detail_info_*.csv"))
    rows = detail_rows(copy)
    rows[0]["op_occurrences"] = str(int(rows[0]["op_occurrences"]) + 1)
    with open(str(path), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    s = summarize(copy, window["steps"])
    assert s["consistency"]["ok"] is False
    assert s["consistency"]["count_mismatches"] == [rows[0]["full_op_name"]]


def test_torn_timestamp_line_names_file_and_line(recorded, tmp_path):
    profile_dir, window = recorded
    copy = tmp_path / "p"
    shutil.copytree(str(profile_dir), str(copy))
    path = next(copy.rglob("cpu_op_execute_timestamp_*.txt"))
    lines = path.read_text().splitlines()
    lines[2] = lines[2].split(";")[0]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProfileParseError, match=r"cpu_op_execute_timestamp_0\.txt line 3"):
        summarize(copy, window["steps"])


def test_garbled_duration_names_the_field(recorded, tmp_path):
    profile_dir, window = recorded
    copy = tmp_path / "p"
    shutil.copytree(str(profile_dir), str(copy))
    path = next(copy.rglob("cpu_op_execute_timestamp_*.txt"))
    text = path.read_text()
    name, kind, rest = text.splitlines()[0].split(";", 2)
    start, dur = rest.split()[0].split(",")[:2]
    path.write_text(text.replace("%s,%s" % (start, dur), "%s,abc" % start, 1))
    with pytest.raises(ProfileParseError, match="duration \\(line 1\\) is 'abc'"):
        summarize(copy, window["steps"])


def test_folder_without_profiler_output(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ProfileParseError, match="no cpu_op_execute_timestamp.*notes.txt"):
        summarize(tmp_path, 5)
    with pytest.raises(ProfileParseError, match="does not exist"):
        summarize(tmp_path / "missing", 5)
    with pytest.raises(ProfileParseError, match="at least one step"):
        summarize(tmp_path, 0)


def test_short_names_fit_a_table():
    assert (
        short_name("Gradients/Default/network-WithLossCell/_backbone-SequentialCell/1-Dense/Grad_MatMul/MatMul-op1")
        == "bwd 1-Dense/MatMul-op1"
    )
    assert (
        short_name("Default/network-WithLossCell/_backbone-SequentialCell/3-Dense/BiasAdd-op0")
        == "fwd 3-Dense/BiasAdd-op0"
    )
    assert short_name("Default/optimizer-Adam/Adam-op2") == "opt Adam-op2"
    assert (
        short_name(
            "Default/network-WithLossCell/_loss_fn-SoftmaxCrossEntropyWithLogits/"
            "SparseSoftmaxCrossEntropyWithLogits-op0"
        )
        == "fwd loss/SparseSoftmaxCrossEntropyWithLogits-op0"
    )
    assert type_of("Default/optimizer-Adam/Adam-op2") == "Adam"


def test_ascend_op_statistic_gives_device_time(tmp_path):
    # Columns as the CANN profiling documentation lists them for op_statistic_*.csv (no Ascend
    # capture exists on this machine); the values are test values.
    (tmp_path / "ASCEND_PROFILER_OUTPUT").mkdir()
    (tmp_path / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").write_text(
        "Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
        "0,MatMulV2,AI_CORE,60,600.0,9.0,10.0,11.0,60.0\n"
        "0,Cast,AI_VECTOR_CORE,200,400.0,1.5,2.0,3.0,40.0\n"
    )
    s = summarize(tmp_path, 20, target="Ascend")
    assert s["device_ms_per_step"] == pytest.approx(0.05)
    assert [t["type"] for t in s["device_types"]] == ["MatMulV2", "Cast"]
    assert s["device_types"][1]["per_step"] == 10
    assert s["ops_per_step"] == 13 and s["top_ops"][0]["name"] == "MatMulV2"
