"""The error table against every verbatim text in errors_verbatim_collection.md."""

from __future__ import annotations

import json
import re
from typing import Dict

import pytest

from tests.support.ascend_fakes import command_output, fixture_text
from workbench.ascend import errors

COLLECTION = "errors_verbatim_collection.md"

# Section of the collection -> ids that must be found in its text.
EXPECTED = {
    "E1": {"dcmi-8020"},
    "E2": {
        "ms-cpu-only",
        "libge-runner-missing",
        "libcann-kb-missing",
        "libge-compiler-missing",
        "libascendcl-missing",
    },
    "E3": {"soc-name"},
    "E4": {"set-device-507033", "opp-verify-e30006", "tsd-open"},
    "E5": {"acl-init-507008", "invalid-argument-ee1001"},
    "E6": {"run-check-failed", "runtime-init-failed", "inner-error-ee8888"},
    "E7": {"op-info-json"},
    "E8": {"ms-cann-version-warning"},
    "E9": {"hccp-ej0001", "runtime-init-failed", "tsd-open"},
    "E10": {"runtime-init-failed"},
    "E11": {"aicpu-inner-ez9999"},
    "E12": {"soc-unsupported", "libaicpu-scheduler-missing", "cann-build-mismatch"},
    "E13": {"visible-order-207004", "invalid-argument-ee1001"},
    "E14": {"visible-range-107001", "inner-error-ee8888"},
    "E15": {"set-device-507033", "invalid-argument-el0003"},
    "E16": {"set-device-507033", "invalid-argument-ee1001", "tsd-open"},
    "E17": {"invalid-argument-ee1001", "physical-device-count"},
    "E18": {"device-absent-el0001"},
    "E19": {"dcmi-init"},
    "E20": {"dcmi-8005"},
    "E21": {"aclnn-param-ez1001"},
}


def sections() -> Dict[str, str]:
    """Collection text per '## E<n>.' section."""
    text = fixture_text(COLLECTION)
    parts = re.split(r"^## (E\d+)\.", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def ids(text: str):
    return {entry["id"] for entry in errors.explain(text)}


def test_every_section_is_covered():
    assert set(sections()) - set(EXPECTED) == {"E22"}  # E22 records a text that was not found


@pytest.mark.parametrize("section", sorted(EXPECTED, key=lambda s: int(s[1:])))
def test_section_texts_explained(section):
    found = ids(sections()[section])
    missing = EXPECTED[section] - found
    assert not missing, "%s: no match for %s (found %s)" % (section, sorted(missing), sorted(found))


def test_every_entry_matches_some_verbatim_text():
    corpus = fixture_text(COLLECTION) + "\n" + fixture_text("mindspore_run_check_outputs.md")
    notes_only = {"ms-runtime-initialized", "npu-smi-permission", "npu-smi-not-found"}
    unused = {entry["id"] for entry in errors.entries()} - ids(corpus) - notes_only
    assert not unused, "entries matching no collected text: %s" % sorted(unused)


def test_mindspore_notes_texts():
    cpu_only = (
        "RuntimeError: Unsupported device target GPU. This process only supports one of the ['CPU'] ...\n"
        "Load dynamic library: libmindspore_ascend.so.2 failed. libge_runner.so: cannot open shared object file"
    )
    assert {"ms-cpu-only", "libge-runner-missing"} <= ids(cpu_only)
    assert ids("RuntimeError: The runtime has been initialized") == {"ms-runtime-initialized"}


def test_healthy_outputs_match_nothing():
    for name in (
        "npu-smi-info_910B3_x8_with_processes.txt",
        "npu-smi-info_910A_warning_ms1.10_modelarts.txt",
        "npu-smi-info_310B4_atlas200IDKA2.txt",
        "set_env.sh_and_version.cfg_CANN-8.0.0.txt",
    ):
        assert ids(fixture_text(name)) == set(), name
    success = (
        "MindSpore version:  2.1.1\nThe result of multiplication calculation is correct, "
        "MindSpore has been installed on platform [Ascend] successfully!"
    )
    assert ids(success) == set()


def test_results_ordered_by_position_with_match_text():
    text = command_output(fixture_text("docker-container_npu-smi_dcmi-8020_and_toolkit-info-8.0.0.txt"))
    found = errors.explain("EE8888: Inner Error!\n" + text)
    assert [entry["id"] for entry in found] == ["inner-error-ee8888", "dcmi-8020"]
    assert found[1]["match"].startswith("dcmi model initialized failed")
    assert set(found[0]) >= {"id", "pattern", "cause", "next_check", "match", "offset"}


def test_entries_are_one_line():
    for entry in errors.entries():
        assert "\n" not in entry["cause"] and "\n" not in entry["next_check"], entry["id"]


def test_bad_table_is_rejected_with_file_entry_key(tmp_path):
    path = tmp_path / "errors.json"
    path.write_text(json.dumps({"entries": [{"id": "x", "pattern": "(", "cause": "c", "next_check": "n"}]}))
    with pytest.raises(ValueError, match=r"errors\.json: entry 0 \(x\): key 'pattern' is not a valid"):
        errors.load_table(path)
    path.write_text(json.dumps({"entries": [{"id": "x", "pattern": "a", "cause": "", "next_check": "n"}]}))
    with pytest.raises(ValueError, match=r"entry 0 \(x\): key 'cause' must be a non-empty string"):
        errors.load_table(path)


def test_the_jobs_cut_the_cpp_stack_from_a_verbatim_mindspore_error():
    from jobs.common.msdevice import cut_cpp_stack, short_error

    text = fixture_text(COLLECTION).split("## E2.", 1)[1].split("```", 2)[1].strip()
    assert "- C++ Call Stack" in text and "ms_context.cc" in text
    cut = cut_cpp_stack(text)
    assert "C++ Call Stack" not in cut and "ms_context.cc" not in cut
    assert cut.endswith("libge_runner.so: cannot open shared object file: No such file or directory")
    assert cut_cpp_stack(text, 40) == cut[:40] + " ..."
    assert short_error(RuntimeError(text), 60) == ("RuntimeError: " + cut)[:60] + " ..."
    assert cut_cpp_stack("no stack here") == "no stack here"
