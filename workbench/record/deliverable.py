"""export/deliverable/: the candidate as a colleague receives it, usable with MindSpore and numpy alone.

The frozen checkpoint (its bytes checked against the freeze), the MindIR and the reference set of
the export job run on it, the standalone model code, the class map, the preprocessing and the
runtime requirements. Nothing is written without a candidate: never a package of random weights.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from workbench.record.manifest import SessionFiles
from workbench.system.atomic import write_bytes, write_json

FOLDER = "deliverable"
MODEL_SOURCE = "jobs/common/network.py"  # copied as model.py: the one definition the jobs build from
RUNTIME_PACKAGES = ("mindspore", "numpy")  # what loading and predicting need; nothing of the workbench
FILES = {
    "checkpoint": "model.ckpt",
    "mindir": "model.mindir",
    "model_code": "model.py",
    "reference_inputs": "reference/inputs.npy",
    "reference_logits": "reference/logits.npy",
    "reference_json": "reference/reference.json",
    "class_map": "classes.json",
    "requirements": "requirements.txt",
    "readme": "README.md",
}


class NotDeliverable(Exception):
    """Why no deliverable is written (no candidate, no export job on it, a file that is not what was recorded)."""


def _artifact_path(report: Dict[str, Any], jid: str, kind: str) -> Optional[str]:
    for j in report["jobs"]:
        if j["jid"] == jid:
            for a in j.get("artifacts") or []:
                if a.get("kind") == kind and a.get("on_disk") == "matches":
                    return a["session_path"]
    return None


def _read(files: SessionFiles, rel: Optional[str], what: str) -> bytes:
    entry = files.get(rel) if rel else None
    if entry is None:
        raise NotDeliverable("%s is not in the session (%s)" % (what, rel or "no artifact event names it"))
    return entry.read()


def runtime_requirements(lock: str) -> str:
    """requirements.txt: the runtime packages pinned as the jobs interpreter had them (unpinned when unknown)."""
    pins = {}
    for line in lock.splitlines():
        name, sep, version = line.partition("==")
        if sep and name.strip().lower() in RUNTIME_PACKAGES:
            pins[name.strip().lower()] = "%s==%s" % (name.strip(), version.strip())
    lines = ["# Runtime packages of the hand-over: load model.ckpt and predict (python model.py)."]
    lines += [pins.get(p, "%s  # version not listed by the jobs interpreter" % p) for p in RUNTIME_PACKAGES]
    lines.append("# The full lock of the interpreter that ran the jobs (tests, tools, the workbench): ../reproduce/")
    return "\n".join(lines) + "\n"


def plan(report: Dict[str, Any], files: SessionFiles) -> Dict[str, bytes]:
    """The deliverable's files by their name in it; NotDeliverable says why there is none."""
    lineage = report.get("candidate") or {}
    cand = lineage.get("candidate")
    sid = report["session"]["id"]
    commands = lineage.get("commands") or {}
    if not cand:
        raise NotDeliverable(
            "no candidate is frozen in session %s: freeze one with `%s`; nothing is handed over until then"
            % (sid, commands.get("freeze") or "ms-workbench freeze %s" % sid)
        )
    export = (lineage.get("jobs") or {}).get("export")
    if not export:
        raise NotDeliverable(
            "no export job ran on the candidate (%s, checkpoint %s): run `%s`"
            % (
                cand["run"],
                cand["sha256"][:12],
                commands.get("export")
                or "ms-workbench run export --session %s --set export.from=%s" % (sid, cand["run"]),
            )
        )
    ckpt = _read(files, cand["checkpoint"], "the candidate's checkpoint")
    from hashlib import sha256

    found = sha256(ckpt).hexdigest()
    if found != cand["sha256"]:
        raise NotDeliverable(
            "%s has SHA-256 %s but the candidate was frozen as %s: the file changed after the freeze"
            % (cand["checkpoint"], found, cand["sha256"])
        )
    ref_json = _read(files, _artifact_path(report, export, "reference-json"), "the reference set of %s" % export)
    reference = json.loads(ref_json.decode("utf-8"))
    if reference.get("checkpoint_sha256") != cand["sha256"]:
        raise NotDeliverable(
            "the reference set of %s was computed from checkpoint %s, not the candidate's %s"
            % (export, reference.get("checkpoint_sha256"), cand["sha256"])
        )
    return {
        FILES["checkpoint"]: ckpt,
        FILES["mindir"]: _read(files, _artifact_path(report, export, "mindir"), "the MindIR of %s" % export),
        FILES["reference_inputs"]: _read(
            files, _artifact_path(report, export, "reference-inputs"), "the reference inputs of %s" % export
        ),
        FILES["reference_logits"]: _read(
            files, _artifact_path(report, export, "reference-logits"), "the reference outputs of %s" % export
        ),
        FILES["reference_json"]: ref_json,
    }


def _about(report: Dict[str, Any], blobs: Dict[str, bytes], reference: Dict[str, Any]) -> Dict[str, Any]:
    from hashlib import sha256

    lineage = report["candidate"]
    return {
        "format": "ms-workbench deliverable v1",
        "session": report["session"]["id"],
        "candidate": lineage["candidate"],
        "export_job": lineage["jobs"]["export"],
        "model": reference.get("model"),
        "preprocessing": reference.get("preprocessing"),
        "input": {"dtype": "float32", "shape": ["N", 1, 28, 28], "scale": "pixel / 255"},
        "class_names": reference.get("class_names"),
        "tolerance": reference.get("tolerance"),
        "mindspore": reference.get("mindspore"),
        "device": reference.get("device"),
        "files": {k: v for k, v in FILES.items()},
        "sha256": {name: sha256(data).hexdigest() for name, data in sorted(blobs.items())},
    }


def _readme(about: Dict[str, Any]) -> str:
    cand, model = about["candidate"], about["model"] or {}
    return "\n".join(
        [
            "# The hand-over: %s" % cand["run"],
            "",
            "The frozen candidate of session %s: checkpoint `model.ckpt` (SHA-256 `%s`) from %s epoch %s, "
            "a %s network with %s hidden units; `model.mindir` and the reference set come from %s run on it."
            % (
                about["session"],
                cand["sha256"],
                cand["run"],
                cand["epoch"],
                model.get("name"),
                model.get("hidden"),
                about["export_job"],
            ),
            "",
            "- Needs only MindSpore and numpy: `python -m pip install -r requirements.txt`.",
            "- Input: uint8 images [N, 28, 28] -> float32 [N, 1, 28, 28] = pixel / 255 (`model.preprocess`).",
            "- Output: 10 logits per image; column i is class i of `classes.json`.",
            "- Check: `python model.py` loads `model.ckpt`, predicts `reference/inputs.npy` and compares with "
            "`reference/logits.npy` (|diff| <= atol + rtol x |expected|, tolerance in `deliverable.json`).",
            "",
            "```python",
            "import numpy as np",
            "import model",
            "",
            'net = model.load("model.ckpt", %r, %r)' % (model.get("name"), model.get("hidden")),
            "images = np.zeros((2, 28, 28), np.uint8)  # your uint8 pictures",
            "logits = model.predict(net, model.preprocess(images))",
            "print([model.CLASS_NAMES[i] for i in logits.argmax(axis=1)])",
            "```",
            "",
        ]
    )


def write(stage: Path, report: Dict[str, Any], files: SessionFiles, model_source: bytes, lock: str) -> Dict[str, Any]:
    """Write stage/deliverable/ when the candidate can be handed over; returns what the record says about it."""
    try:
        if not model_source:
            raise NotDeliverable("the model code %s was not found beside the workbench" % MODEL_SOURCE)
        blobs = plan(report, files)
    except NotDeliverable as exc:
        return {"written": False, "why": str(exc), "files": []}
    reference = json.loads(blobs[FILES["reference_json"]].decode("utf-8"))
    names = reference.get("class_names") or []
    blobs[FILES["model_code"]] = model_source
    blobs[FILES["class_map"]] = (json.dumps({str(i): n for i, n in enumerate(names)}, indent=2) + "\n").encode()
    blobs[FILES["requirements"]] = runtime_requirements(lock).encode("utf-8")
    about = _about(report, blobs, reference)
    blobs[FILES["readme"]] = _readme(about).encode("utf-8")
    out = stage / FOLDER
    written: List[str] = []
    for name, data in sorted(blobs.items()):
        write_bytes(out / name, data)
        written.append("%s/%s" % (FOLDER, name))
    write_json(out / "deliverable.json", about)
    written.append("%s/deliverable.json" % FOLDER)
    return {"written": True, "why": None, "files": sorted(written), "sha256": about["sha256"]}
