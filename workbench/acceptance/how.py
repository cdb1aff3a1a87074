"""What to run to produce a missing acceptance check: the CLI command and the TUI key."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

# check id (or id prefix ending in '*') -> (what it is, command, key in the TUI: "" where no screen binds one;
# tests/unit/test_acceptance_keys.py holds each named key to the named screen's bindings)
_HOW: Dict[str, Tuple[str, str, str]] = {
    "val-macro-f1": (
        "a training run with a validated best epoch",
        "ms-workbench run train",
        "s on the Training screen",
    ),
    "test-macro-f1": (
        "the test-set evaluation of the candidate (it takes the candidate when test.from is unset)",
        "ms-workbench run test",
        "t on the Training screen",
    ),
    "test-evaluations": (
        "the test-set evaluation of the candidate (it takes the candidate when test.from is unset)",
        "ms-workbench run test",
        "t on the Training screen",
    ),
    "new-distribution": (
        "the candidate on the new-distribution sets (acceptance.max_shift_drop)",
        "ms-workbench run shift",
        "n on the Training screen",
    ),
    "candidate": (
        "a frozen candidate: the checkpoint every check about a model is about",
        "ms-workbench freeze",
        "",
    ),
    "data.": ("the data job's contract checks", "ms-workbench run data", "r on the Data screen"),
    "finite-loss": ("a training run", "ms-workbench run train", "s on the Training screen"),
    "effective-config": (
        "a training run on the target",
        "ms-workbench run train --set device.target={target}",
        "s on the Training screen",
    ),
    "device-activity": (
        "a training run on the target (its process seen on the NPU)",
        "ms-workbench run train --set device.target={target}",
        "s on the Training screen",
    ),
    "profile": (
        "a profiled window of a training run",
        "ms-workbench run train --set device.target={target} --set train.profile.steps=20",
        "p on the Training screen",
    ),
    "steady-throughput": (
        "the steady throughput of a training run on the target",
        "ms-workbench run train --set device.target={target}",
        "s on the Training screen",
    ),
    "steady-step-time": (
        "the steady step time of a training run on the target",
        "ms-workbench run train --set device.target={target}",
        "s on the Training screen",
    ),
    "graph-vs-pynative": (
        "an fp32 alignment of graph mode against pynative",
        "ms-workbench run align --set align.reference.mode=pynative --set align.candidate.mode=graph "
        "--set align.candidate.target={target}",
        "r on the Alignment screen",
    ),
    "fp32-vs-candidate": (
        "an alignment of the candidate precision against fp32",
        "ms-workbench run align --set align.reference.precision=fp32 "
        "--set align.candidate.precision=amp-O2 --set align.candidate.target={target}",
        "r on the Alignment screen",
    ),
    "ckpt-reload": (
        "the export job's reload checks",
        "ms-workbench run export",
        "r on the Export screen",
    ),
    "mindir-": (
        "the export job's MindIR checks",
        "ms-workbench run export",
        "r on the Export screen",
    ),
    "device-setting": (
        "the environment job on the target",
        "ms-workbench run env --set device.target={target}",
        "r on the Environment screen",
    ),
    "probe-": (
        "the isolated device probes on the target",
        "ms-workbench run env --set device.target={target}",
        "p on the Environment screen",
    ),
    "npu-smi": (
        "npu-smi on the board",
        "ms-workbench run env --set device.target={target}",
        "r on the Environment screen",
    ),
    "effect-consistency": (
        "a training run on another device with the same config, for the cross-device comparison",
        "ms-workbench run train --set device.target={other}",
        "s on the Training screen",
    ),
    "overfit-batch": ("the overfit-one-batch check", "ms-workbench run overfit", ""),
    "resume-exact": ("the resume verified against the uninterrupted run", "ms-workbench run resume", ""),
    "precision-run": (
        "a training run in the candidate precision against its fp32 twin",
        "ms-workbench run precision --set precision_run.candidate=amp-O2",
        "",
    ),
    "perf-repeats": (
        "the steady window timed several times",
        "ms-workbench run train --set perf.repeats=5",
        "s on the Training screen",
    ),
    "first-result": ("a training run with a validated epoch", "ms-workbench run train", "s on the Training screen"),
}


def how_to_produce(check: str, kind: str = "", train: Optional[str] = None, target: str = "CPU") -> Dict[str, str]:
    """{what, command, key} producing `check` (of a `kind` job); placeholders filled from the session."""
    found = _HOW.get(check)
    if found is None:
        prefixes = [p for p in _HOW if p.endswith((".", "-")) and check.startswith(p)]
        found = _HOW[max(prefixes, key=len)] if prefixes else None
    if found is None:
        job = kind or "the job that emits it"
        found = ("the check %s" % check, "ms-workbench run %s" % job if kind else "(%s)" % job, "")
    what, command, key = found
    other = "Ascend" if target.upper() == "CPU" else "CPU"  # the effect-consistency pair's other device
    return {
        "what": what,
        "command": command.format(train=train or "<train-jid>", target=target, other=other),
        "key": key,
    }
