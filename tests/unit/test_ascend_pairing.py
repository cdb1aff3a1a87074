"""MindSpore <-> CANN pairing table and verdicts."""

from __future__ import annotations

import json

import pytest

from tests.support.ascend_fakes import fixture_text
from workbench.ascend import pairing
from workbench.ascend.pairing import normalize_cann, normalize_mindspore, pairing_verdict
from workbench.events.protocol import Evidence


def test_every_official_row_is_in_the_fixture_table():
    text = fixture_text("mindspore_cann_version_pairing.md")
    official = [row for row in pairing.rows() if row["source"] == "official"]
    assert len(official) == 15
    for row in official:
        branch = "r" + row["mindspore"]
        assert "| %s" % branch in text, "branch %s not in the fixture" % branch
        assert "`%s`" % row["cann_as_published"] in text, row
        assert normalize_cann(row["cann_as_published"]) == row["cann"]


def test_secondary_rows_cite_section_b():
    text = fixture_text("mindspore_cann_version_pairing.md")
    secondary = [row for row in pairing.rows() if row["source"] == "secondary"]
    assert {row["mindspore"] for row in secondary} >= {"2.6.0", "2.7.0rc1", "2.7.1", "2.7.2"}
    for row in secondary:
        assert row["cann"] in text, row


@pytest.mark.parametrize(
    "ms, cann, status, source",
    [
        ("2.4.10", "8.0.0", "observed-pass", "official"),  # the dev boards' MindSpore
        ("2.5.0", "8.0.0", "observed-pass", "official"),
        ("2.3.0rc2", "8.0.RC1", "observed-pass", "official"),
        ("2.6.0-rc1", "8.1.rc1", "observed-pass", "official"),  # spellings normalised
        ("2.2.14", "7.0.0", "observed-pass", "official"),  # branch row r2.2
        ("1.10.0", "6.0.1", "observed-pass", "official"),
        ("2.7.2", "8.5.0", "observed-pass", "secondary"),
        ("2.4.10", "8.0.RC3", "observed-fail", "official"),  # a mismatched pair
        ("2.3.1", "8.0.RC3", "observed-fail", "official"),  # the warning seen in run_check R5
        ("2.7.1", "8.2.RC1", "observed-fail", "secondary"),
        ("2.6.0", "8.2.RC1", "observed-fail", "official"),  # only a contradicted secondary row says so
        ("2.3.0", "8.0.RC1", "observed-fail", "official"),  # MindCluster note vs MindSpore's r2.3.0 guide
    ],
)
def test_verdicts(ms, cann, status, source):
    verdict = pairing_verdict(ms, cann)
    assert (verdict["status"], verdict["source"]) == (status, source), verdict
    assert verdict["detail"]


def test_mismatch_names_expected_version():
    verdict = pairing_verdict("2.4.10", "8.0.RC3")
    assert verdict["expected_cann"] == ["8.0.0"]
    assert "8.0.0" in verdict["detail"] and "8.0.RC3" in verdict["detail"]


def test_contradicted_secondary_row_is_inferred_not_a_pass():
    # Section B.1 of the fixture: ascend-deployer bundles MindSpore 2.6.0 with CANN 8.2.RC1, while
    # MindSpore's own r2.6.0 install guide (section A) says 8.1.RC1. The official row decides.
    text = fixture_text("mindspore_cann_version_pairing.md")
    assert '"MindSpore_2.6.0": "CANN_8.2.RC1"' in text and "| r2.6.0 | `8.1.RC1.beta1`" in text
    verdict = pairing_verdict("2.6.0", "8.2.RC1")
    assert verdict["status"] == Evidence.FAIL, verdict
    assert verdict["inferred"] is True
    assert verdict["expected_cann"] == ["8.1.RC1"] and verdict["secondary_cann"] == ["8.2.RC1"]
    assert "inferred from a secondary source (ascend-deployer" in verdict["detail"]
    assert "contradicted by MindSpore's install guide" in verdict["detail"] and "8.1.RC1" in verdict["detail"]


def test_uncontradicted_secondary_row_passes_and_says_secondary():
    verdict = pairing_verdict("2.7.2", "8.5.0")
    assert (verdict["status"], verdict["source"], verdict["inferred"]) == (Evidence.PASS, "secondary", False)
    assert "secondary source" in verdict["detail"] and "MindSpore install guide" not in verdict["detail"]


def test_official_versions_only_are_attributed_to_the_official_guide():
    # 2.6.0 has an official row (8.1.RC1) and a secondary one (8.2.RC1): a mismatch names each with its source.
    verdict = pairing_verdict("2.6.0", "8.0.0")
    assert verdict["status"] == Evidence.FAIL
    assert verdict["detail"].startswith("MindSpore 2.6.0 expects CANN 8.1.RC1 (MindSpore install guide: "), verdict
    official_part, _, rest = verdict["detail"].partition("found 8.0.0")
    assert "8.2.RC1" not in official_part
    assert "8.2.RC1 (secondary: ascend-deployer" in rest
    assert verdict["expected_cann"] == ["8.1.RC1"]


def test_official_match_names_the_guide_and_the_disagreeing_secondary_row():
    verdict = pairing_verdict("2.6.0", "8.1.RC1")
    assert (verdict["status"], verdict["source"]) == (Evidence.PASS, "official")
    assert "MindSpore install guide" in verdict["detail"] and "8.2.RC1 (secondary" in verdict["detail"]


def test_unknown_cann_is_not_run():
    verdict = pairing_verdict("2.4.10", None)
    assert verdict["status"] == "not-run" and verdict["expected_cann"] == ["8.0.0"]


def test_unknown_mindspore_row_is_not_run():
    verdict = pairing_verdict("2.10.0", "8.0.0")
    assert verdict["status"] == "not-run" and "2.10.0" in verdict["detail"]
    assert pairing_verdict(None, "8.0.0")["status"] == "not-run"


def test_normalizers():
    assert normalize_mindspore("2.6.0-rc1") == "2.6.0rc1"
    assert normalize_mindspore("2.10.0+cpu") == "2.10.0"
    assert normalize_cann("8.0.RC3.beta1") == "8.0.RC3"
    assert normalize_cann("5.1.RC2.alpha008") == "5.1.RC2"


def test_bad_table_is_rejected_with_file_row_key(tmp_path):
    path = tmp_path / "pairing.json"
    path.write_text(json.dumps({"rows": [{"mindspore": "2.4.10", "cann": "8.0.0", "source": "blog", "ref": "x"}]}))
    with pytest.raises(ValueError, match=r"pairing\.json: row 0: key 'source' must be one of"):
        pairing.load_rows(path)
