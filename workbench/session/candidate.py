"""The session's frozen candidate: the one checkpoint every check and the verdict are about (append-only candidate.jsonl).

A freeze names a training run's checkpoint by SHA-256 with its lineage: the run and epoch it came from,
the split it was trained on (hash of the index hashes and source files) and its recipe (hash of the
model and training hyperparameters). A re-freeze appends a new entry with its reason; nothing is
overwritten, so the history of what was chosen, and when, stays in the session.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from workbench.session.store import job_status
from workbench.system.atomic import read_json, sha256_file

CANDIDATE_FILE = "candidate.jsonl"
INITIAL_WEIGHTS = "initial weights"  # the subject of a check that looked at untrained weights
CHECKPOINT_PREFIX = "checkpoint:"  # + SHA-256: the subject of a check about one checkpoint file
RECIPE_PREFIX = "recipe:"  # + recipe_sha256: the subject of a check about a model and its hyperparameters
INIT_VALUE = "init"  # export.from / align.weights_from: the explicit choice of initial weights
RECIPE_JOBS = ("train", "overfit", "resume", "precision")  # jobs whose checks are about a recipe
# The recipe: what a check about "the candidate's model and hyperparameters" (overfit, resume, precision) must share.
RECIPE_KEYS = (
    ("model", "name"),
    ("model", "hidden"),
    ("train", "lr"),
    ("train", "optimizer"),
    ("train", "momentum"),
    ("train", "batch_size"),
    ("train", "precision"),
    ("train", "seed"),
)


class FreezeError(ValueError):
    """A freeze that cannot be made: the message names the run, the file and what was expected."""


@dataclass(frozen=True)
class Candidate:
    """One freeze: the checkpoint (by SHA-256) and its lineage."""

    n: int  # 1 for the first freeze of the session, 2 for the next ...
    t: float
    sha256: str
    checkpoint: str  # path relative to the session folder
    run: str  # the training run (jid) the checkpoint came from
    epoch: Optional[int]
    split_sha256: Optional[str]
    recipe_sha256: str
    reason: str

    def as_dict(self) -> Dict[str, Any]:
        """The entry as written to candidate.jsonl."""
        return asdict(self)

    def label(self) -> str:
        """One line for people, e.g. 'train-002 epoch 5, checkpoint 3f2a9c1e…'."""
        epoch = "" if self.epoch is None else " epoch %d" % self.epoch
        return "%s%s, checkpoint %s" % (self.run, epoch, self.sha256[:12])


def _canonical_sha256(obj: Any) -> str:
    import hashlib  # here: the UI's start imports this module and hashes nothing

    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def recipe_of(cfg: Mapping[str, Any]) -> Dict[str, Any]:
    """The recipe keys of an effective config, as {'model.name': 'mlp', ...} (missing keys are None)."""
    out: Dict[str, Any] = {}
    for section, key in RECIPE_KEYS:
        part = cfg.get(section)
        out["%s.%s" % (section, key)] = part.get(key) if isinstance(part, Mapping) else None
    return out


def recipe_sha256(cfg: Mapping[str, Any]) -> str:
    """SHA-256 of the recipe of an effective config (equal for two runs of the same model and hyperparameters)."""
    return _canonical_sha256(recipe_of(cfg))


def split_sha256(data: Mapping[str, Any]) -> Optional[str]:
    """SHA-256 of a run's split (its train/val index hashes and source file hashes), None when not recorded."""
    train, val = data.get("train_idx_sha256"), data.get("val_idx_sha256")
    if not train or not val:
        return None
    files = sorted((f.get("name"), f.get("sha256")) for f in data.get("source_files") or [] if isinstance(f, Mapping))
    return _canonical_sha256({"train": train, "val": val, "source_files": files})


def checkpoint_subject(sha256: str) -> str:
    """The subject of a check about one checkpoint file."""
    return CHECKPOINT_PREFIX + sha256


def recipe_subject(cfg: Mapping[str, Any]) -> str:
    """The subject of a check about a recipe (overfit, resume, precision, a training run's own checks)."""
    return RECIPE_PREFIX + recipe_sha256(cfg)


def subject_label(subject: Any) -> str:
    """A subject for people: 'checkpoint 3f2a9c1e4b5d', 'recipe 0a1b2c3d4e5f', 'initial weights', 'no subject'."""
    if not isinstance(subject, str) or not subject:
        return "no subject"
    for prefix in (CHECKPOINT_PREFIX, RECIPE_PREFIX):
        if subject.startswith(prefix):
            return "%s %s" % (prefix[:-1], subject[len(prefix) : len(prefix) + 12])
    return subject


def is_about(subject: Any, cand: Optional[Candidate]) -> bool:
    """True when a subject is the candidate's checkpoint or its recipe."""
    return cand is not None and subject in (checkpoint_subject(cand.sha256), RECIPE_PREFIX + cand.recipe_sha256)


def history(session_dir: Path) -> List[Candidate]:
    """Every freeze of the session, oldest first (a torn or damaged line is skipped, never guessed)."""
    path = Path(session_dir) / CANDIDATE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    out: List[Candidate] = []
    for line in raw.split(b"\n")[:-1]:  # the part after the last newline is torn: never read
        try:
            entry = json.loads(line)
            out.append(Candidate(**{k: entry[k] for k in Candidate.__dataclass_fields__}))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def current(session_dir: Path) -> Optional[Candidate]:
    """The session's candidate (its newest freeze), None when nothing was frozen."""
    found = history(session_dir)
    return found[-1] if found else None


def from_run(session_dir: Path, run_dir: Path) -> Dict[str, Any]:
    """The lineage of a training run's best checkpoint, its file hash checked against what the run recorded."""
    session_dir, run_dir = Path(session_dir), Path(run_dir)
    status = job_status(run_dir)
    if status.state != "ok":
        raise FreezeError(
            "%s did not end ok (%s): only a finished training run's checkpoint can be frozen"
            % (run_dir.name, status.label())
        )
    meta_path = run_dir / "artifacts" / "best.json"
    try:
        meta = read_json(meta_path)
        ckpt_meta = meta["checkpoint"]
        ckpt = run_dir / "artifacts" / ckpt_meta["file"]
        recorded = ckpt_meta["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FreezeError("%s: cannot read the run's best checkpoint record (%s)" % (meta_path, exc)) from None
    try:
        found = sha256_file(ckpt)
    except OSError as exc:
        raise FreezeError("%s: cannot read the checkpoint (%s)" % (ckpt, exc.strerror or exc)) from None
    if found != recorded:
        raise FreezeError(
            "%s: SHA-256 is %s but the run recorded %s in %s: the file changed after training"
            % (ckpt, found, recorded, meta_path)
        )
    try:
        cfg = read_json(run_dir / "config.json")
    except (OSError, ValueError) as exc:
        raise FreezeError("%s: cannot read the run's effective config (%s)" % (run_dir / "config.json", exc)) from None
    here = run_dir.parent.parent.resolve() == session_dir.resolve()
    return {
        "sha256": found,
        "checkpoint": os.path.relpath(ckpt, session_dir),
        "run": run_dir.name if here else "%s/%s" % (run_dir.parent.parent.name, run_dir.name),
        "epoch": meta.get("epoch") if isinstance(meta.get("epoch"), int) else None,
        "split_sha256": split_sha256(meta.get("data") or {}),
        "recipe_sha256": recipe_sha256(cfg if isinstance(cfg, dict) else {}),
    }


def newest_trained(session_dir: Path) -> Path:
    """The newest training run of the session that ended ok with a best checkpoint (FreezeError when none did)."""
    jobs = sorted((Path(session_dir) / "jobs").glob("train-*"), key=lambda d: d.name, reverse=True)
    seen = []
    for run_dir in jobs:
        status = job_status(run_dir)
        if status.state == "ok" and (run_dir / "artifacts" / "best.json").exists():
            return run_dir
        seen.append("%s %s" % (run_dir.name, status.label()))
    raise FreezeError(
        "no training run of session %s ended ok with a checkpoint (%s): run `ms-workbench run train` first"
        % (Path(session_dir).name, "; ".join(seen) or "no training run")
    )


def freeze(session_dir: Path, lineage: Mapping[str, Any], reason: str, now: Optional[float] = None) -> Candidate:
    """Append a freeze to the session's candidate.jsonl (flushed and fsynced) and return it."""
    session_dir = Path(session_dir)
    before = history(session_dir)
    if before and not reason.strip():
        raise FreezeError(
            "a candidate is already frozen (%s): a re-freeze needs a reason (--reason TEXT)" % before[-1].label()
        )
    entry = Candidate(
        n=len(before) + 1,
        t=time.time() if now is None else now,
        reason=reason.strip() or "first freeze",
        **{k: lineage[k] for k in ("sha256", "checkpoint", "run", "epoch", "split_sha256", "recipe_sha256")},
    )
    line = (json.dumps(entry.as_dict(), sort_keys=True) + "\n").encode("utf-8")
    path = session_dir / CANDIDATE_FILE
    if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        line = b"\n" + line  # a torn earlier line stays torn (skipped on read); this entry starts on its own line
    fd = os.open(str(session_dir / CANDIDATE_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return entry
