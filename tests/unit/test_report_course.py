"""The sentences of the record about a session of the course's checks (tests/fixtures/sessions/course), each tested
on the case where it would be false: a precision leg present, legs holding the steps, a validation row's images,
a short batch excluded, the two worst indices of a tensor."""

from __future__ import annotations

import pytest

from tests.support import variants
from workbench.record.collect import collect
from workbench.record.limitations import not_verified_here
from workbench.record.markdown import appendix as ax
from workbench.record.markdown import report as markdown
from workbench.session.store import SessionStore

REDUCED = "No training run in a reduced precision"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("sessions")
    session = variants.copy_course(root)
    report = collect(SessionStore(root), session.name)
    return report, markdown.render(report)


def test_a_precision_job_s_candidate_leg_is_reduced_precision_training(course):
    report, text = course
    assert not any(s.startswith(REDUCED) for s in report["limitations"]["not_verified"])
    assert REDUCED not in text
    # the case where the sentence is true: no precision job and only fp32 train runs
    without = dict(report, jobs=[j for j in report["jobs"] if j["kind"] != "precision"])
    assert any(s.startswith(REDUCED) for s in not_verified_here(without))


def test_jobs_that_run_legs_count_the_steps_of_their_legs(course):
    report, text = course
    legs = {o["jid"]: o["legs"] for o in report["other_jobs"] if o["legs"]}
    assert set(legs) == {"resume-001", "precision-001"}
    assert {leg["leg"] for leg in legs["precision-001"]} == {"fp32", "amp-O2"}
    assert all(leg["steps"] > 0 and leg["state"] == "ok" for ls in legs.values() for leg in ls)
    total = sum(leg["steps"] for leg in legs["precision-001"])
    assert "precision-001 (precision): ok, its train legs recorded %d steps" % total in text
    assert " 0 steps recorded" not in text


def test_the_validation_row_counts_validation_images(course):
    report, text = course
    run = report["training"]["runs"][0]
    val = run["best_epoch"]["val"]
    n_val = sum(c["support"] for c in val["per_class"])
    assert n_val != run["best_epoch"]["samples"]  # the train images of the epoch: the number once shown here
    row = next(line for line in text.splitlines() if line.startswith("| train-001 validation"))
    assert row.rstrip(" |").endswith("| %d" % n_val)


def test_a_short_batch_that_recompiled_is_said_excluded_and_one_that_did_not_included():
    epoch = {"samples": 880}  # 13 batches of 64 and one of 48
    recompiled = {"epoch": 1, "batch_size": 64, "recompile": [{"global_step": 14, "batch_size": 48, "s": 0.2}]}
    assert "last, short batch of 48 images excluded (it recompiled the graph at step 14)" in ax.epoch_measures(
        recompiled, epoch, True
    )
    plain = {"epoch": 2, "batch_size": 64, "recompile": []}
    assert "last, short batch of 48 images included" in ax.epoch_measures(plain, epoch, False)


def test_tensors_md_names_the_largest_difference_apart_from_the_worst_excess(course):
    report, _ = course
    text = ax.tensors_md(report["alignment"])
    assert "| max abs at |" in text and "| worst excess at |" in text and "worst index" not in text
    apart = [
        d for a in report["alignment"]["jobs"] for d in a["diffs"] if d.get("max_abs_index") != d.get("worst_index")
    ]
    assert apart, "the amp-O2 alignment has a tensor whose largest |diff| is not its worst excess"
    assert "largest |cand − ref|" in text


def _section(text: str, start: str, end: str = "\n## ") -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def test_the_next_command_section_separates_failed_blocked_and_not_required(course):
    report, text = course
    part = _section(text, "## Failed, blocked, and the next command")
    failed = _section(part, "**Required, failed**", "**")
    blocked = _section(part, "**Required, blocked or not run yet**", "**")
    optional = _section(part, "**Not required (failed or blocked; they do not decide the verdict)**", "**")
    assert "overfit-batch (framework layer, overfit-001)" in failed  # observed-fail: listed as failed, not blocked
    assert "overfit-batch" not in blocked
    # the fp32 vs amp-O2 alignment is not what align:graph-vs-pynative requires: said not required
    assert "alignment observed-fail (align-001), not required by the acceptance" in optional
    entries = [line for line in part.splitlines() if line.startswith("- ")]
    assert entries and all(line.count("`") == 2 and "`ms-workbench " in line for line in entries), entries
    # no text cut: every check's reason is there whole
    for c in report["checks"]["not_passed"]:
        if c["status"] == "observed-fail" and c["jid"] == "align-001":
            assert c["reason"].rstrip(".") in optional


def test_a_failed_check_on_the_recorded_session_is_never_called_blocked(tmp_path):
    from tests.support.sessions import copy_real

    sid = copy_real(tmp_path)
    text = markdown.render(collect(SessionStore(tmp_path), sid))
    part = _section(text, "## Failed, blocked, and the next command")
    line = next(x for x in part.splitlines() if x.startswith("- python-on-path"))
    assert line.startswith("- python-on-path observed-fail (env-001), not required by the acceptance")
    assert "blocked" not in line.split(":", 1)[0] and line.endswith("config.yaml`")


def test_the_throughput_line_defines_its_figure_and_names_the_repeats_figure_by_its_definition(course):
    report, text = course
    part = _section(text, "## Throughput")
    assert "steady throughput (Σ images / Σ wall time of the steady steps" in part
    (run,) = [p for p in report["performance"] if p["jid"] == "train-001" and p["epoch"] is None]
    same = bool((run.get("repeat_summary") or {}).get("images_per_s_rule"))
    assert ("throughput (same definition)" in part) == same
    assert ("batch ÷ median step (not the throughput above)" in part) == (not same)


def test_the_first_screen_says_time_to_first_usable_result_under_that_name(course):
    report, text = course
    first = next(c for c in report["jobs"][1]["checks"] if c["id"] == "first-result")
    head = text.split("## 1. Session")[0]
    assert "time to first usable result" in head and "epoch %s validated" % first["evidence"]["epoch"] in head


def test_the_course_checks_are_in_the_first_screen_with_their_verdicts(course):
    report, text = course
    head = text.split("## Throughput")[0]
    by_id = {c["id"]: c for j in report["jobs"] for c in j["checks"]}
    for cid in ("overfit-batch", "resume-exact", "precision-run"):
        line = next(x for x in head.splitlines() if "(%s, " % cid in x)
        assert "**%s**" % by_id[cid]["status"] in line, line
    ov = by_id["overfit-batch"]["evidence"]
    assert "(÷%.2f, wanted ÷%g)" % (ov["factor_reached"], ov["factor_wanted"]) in head and "curve: step 1 " in head
    assert "compared bit for bit: bit-exact" in head and "Δ val macro-F1" in head and "per-class recall Δ" in head


def test_a_resume_that_is_not_bit_exact_is_not_called_bit_exact():
    from workbench.record.markdown.course import resume_text

    ev = {"k": 2, "resumed_at_global_step": 4, "steps_after": 4}
    same = resume_text(dict(ev, weights={"tensors": 16, "identical": True, "differing": []}))
    differs = resume_text(
        dict(ev, weights={"tensors": 16, "identical": False, "differing": ["moment1.w"], "max_abs_diff": 1e-3})
    )
    assert same.endswith("bit for bit: bit-exact")
    assert "NOT bit-exact (differing: moment1.w" in differs


def test_a_session_without_course_jobs_says_they_were_not_run(tmp_path):
    from tests.support.sessions import copy_real

    sid = copy_real(tmp_path)
    head = markdown.render(collect(SessionStore(tmp_path), sid)).split("## Throughput")[0]
    assert "- **resume** (resume-exact): not run in this session." in head


def test_the_course_report_is_short_and_its_first_screen_holds_what_a_reviewer_reads_first(course):
    _, text = course
    lines = text.splitlines()
    assert len(lines) < 400
    first = "\n".join(lines[: lines.index("## 1. Session")])
    for heading in ("## The candidate", "## Acceptance", "## Results", "## Course checks", "## Throughput"):
        assert heading in first, heading
    rows = [x for x in first.splitlines() if x.startswith("| ") and " | **" in x]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows[:4]] == ["task", "framework", "device", "performance"]
    assert "time to first usable result" in first
