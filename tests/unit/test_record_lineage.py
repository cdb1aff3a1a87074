"""The candidate's lineage out of a collected record: which jobs are about it, which about another model."""

from __future__ import annotations

from workbench.record.lineage import job_subject, lineage
from workbench.session.candidate import INITIAL_WEIGHTS, Candidate, checkpoint_subject

A, B = "a" * 64, "b" * 64
CAND = Candidate(
    n=2, t=1.0, sha256=A, checkpoint="jobs/train-002/artifacts/best.ckpt", run="train-002", epoch=3,
    split_sha256="s" * 64, recipe_sha256="r" * 64, reason="lower lr",
)  # fmt: skip


def _job(jid, kind, checks=(), artifacts=(), state="ok", **extra):
    return dict(jid=jid, kind=kind, state=state, label=state, checks=list(checks), artifacts=list(artifacts), **extra)


def _check(cid, status="observed-pass", evidence=None, subject=None):
    return {"id": cid, "status": status, "evidence": evidence or {}, "subject": subject}


def _report():
    ckpt = {"kind": "checkpoint", "sha256": A, "on_disk": "matches", "session_path": CAND.checkpoint}
    return {
        "jobs": [
            _job("data-001", "data"),
            _job("train-001", "train"),
            _job(
                "train-002",
                "train",
                [_check("data-split")],
                [ckpt],
                config={"data": {"from": "data-001"}},
                epochs=[{"train_loss": 1.5}, {"train_loss": 0.9}],
            ),
            _job("test-001", "test", [_check("checkpoint", evidence={"sha256": B})]),  # recorded before subjects
            _job("test-002", "test", [_check("test-evaluations", "observed-fail", subject=checkpoint_subject(A))]),
            _job(
                "align-001",
                "align",
                artifacts=[{"kind": "init-weights", "sha256": "c" * 64, "seed": 1, "session_path": "x/init.ckpt"}],
            ),
            _job("export-001", "export", [_check("source", subject=INITIAL_WEIGHTS)]),
            _job(
                "export-002",
                "export",
                [_check("source", evidence={"sha256": A}), _check("mindir-load"), _check("reference")],
                [
                    {"kind": "reference-logits", "sha256": "l" * 64, "on_disk": "matches", "session_path": "x/l.npy"},
                    {"kind": "reference-inputs", "sha256": "i" * 64, "on_disk": "matches", "session_path": "x/i.npy"},
                ],
            ),
        ]
    }


def test_only_jobs_about_the_candidate_enter_its_lineage_the_rest_are_listed_apart():
    out = lineage(_report(), CAND, 2)
    assert out["jobs"] == {
        "data": "data-001",
        "train": "train-002",
        "test": "test-002",
        "align": [],
        "export": "export-002",
    }
    assert [(o["jid"], o["subject"]) for o in out["other_models"]] == [
        ("test-001", checkpoint_subject(B)),
        ("align-001", INITIAL_WEIGHTS),
        ("export-001", INITIAL_WEIGHTS),
    ]
    assert out["other_models"][1]["artifacts"] == ["x/init.ckpt"]
    steps = {s["step"]: s for s in out["steps"]}
    assert list(steps) == ["split", "training run", "freeze", "test", "alignment", "export", "reference outputs"]
    assert steps["split"]["job"] == "data-001" and steps["split"]["subject"] == "split:" + "s" * 64
    assert steps["test"]["verdict"] == "observed-fail"  # the test-evaluations check of the candidate's test
    assert steps["alignment"]["verdict"] == "not-run" and steps["alignment"]["job"] is None
    assert steps["freeze"]["detail"] == "freeze 2 of 2: lower lr"
    assert out["measured"]["epoch_losses"] == [1.5, 0.9] and out["measured"]["reference_logits_sha256"] == "l" * 64


def test_a_checkpoint_on_disk_that_is_not_the_frozen_one_fails_the_training_step():
    report = _report()
    report["jobs"][2]["artifacts"][0]["sha256"] = B
    steps = {s["step"]: s for s in lineage(report, CAND)["steps"]}
    assert steps["training run"]["verdict"] == "observed-fail" and steps["freeze"]["verdict"] == "observed-fail"


def test_subjects_written_by_the_job_win_over_evidence():
    job = _job("test-003", "test", [_check("checkpoint", evidence={"sha256": B}, subject=checkpoint_subject(A))])
    assert job_subject(job) == checkpoint_subject(A)
    assert job_subject(_job("align-002", "align", artifacts=[{"kind": "init-weights", "sha256": B, "source": "t"}]))
    assert lineage({"jobs": []}, None)["candidate"] is None


def test_a_job_section_says_whom_its_evidence_is_about():
    from workbench.record.markdown.candidate import about_line

    report = _report()
    report["candidate"] = lineage(report, CAND)
    assert about_line(report, "export-002") == "About **the candidate** (checkpoint %s)." % A[:12]
    assert about_line(report, "export-001").startswith("About **another model** (initial weights): not the candidate")
    assert about_line(report, "train-001") == ""
