"""MindSpore Lite's MindIR version gate, parsed from the message recorded on a 310B4 board."""

from workbench.analysis.lite_gate import describe_gate, parse_lite_version_gate

# Verbatim from the course chapter (MindSpore 2.4.10 exporting MindIR version 2, Lite 2.2.11),
# with its line break.
COURSE_MESSAGE = (
    "Build] Catch exception: This software can only support the maximum mind ir version: 1,\n"
    "please install the latest version to support the mind ir version: 2"
)


def test_course_message_gives_both_versions():
    gate = parse_lite_version_gate(COURSE_MESSAGE)
    assert gate is not None
    assert gate["max_supported"] == 1
    assert gate["file_version"] == 2
    assert gate["message"].startswith("Build] Catch exception: This software can only support")
    assert gate["message"].endswith("mind ir version: 2")


def test_message_inside_a_log_keeps_only_its_lines():
    log = (
        "[INFO] LITE(1234) model.cc:88 loading\n"
        "[ERROR] LITE(1234) " + COURSE_MESSAGE.replace("\n", " ") + "\n"
        "RuntimeError: build_from_file failed! Error is Common error code.\n"
    )
    gate = parse_lite_version_gate(log)
    assert (gate["max_supported"], gate["file_version"]) == (1, 2)
    assert "loading" not in gate["message"]
    assert "RuntimeError" not in gate["message"]
    assert gate["message"].startswith("[ERROR] LITE(1234) Build] Catch exception")


def test_other_spellings_and_versions():
    text = (
        "This software can only support the maximum MindIR version: 2, please install the latest version "
        "to support the MindIR version: 3"
    )
    gate = parse_lite_version_gate(text)
    assert (gate["max_supported"], gate["file_version"]) == (2, 3)


def test_unrelated_failures_are_not_a_gate():
    assert parse_lite_version_gate("") is None
    assert parse_lite_version_gate("RuntimeError: build_from_file failed! Error is Common error code.") is None
    # Half of the message is not enough to claim a version gate.
    assert parse_lite_version_gate("This software can only support the maximum mind ir version: 1,") is None


def test_description_names_backend_and_versions():
    gate = parse_lite_version_gate(COURSE_MESSAGE)
    text = describe_gate(gate, "ascend")
    assert "up to version 1" in text and "needs version 2" in text
    assert "ascend backend was not reached" in text
