"""Finds and folds the two runs of a comparison, and writes its files; the maths is in `runcompare`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench.compare.runs import Tolerances, compare_runs
from workbench.fold.record import JobRecord
from workbench.fold.steptable import StepTable
from workbench.fold.stream import fold_job
from workbench.session.refs import BadReference
from workbench.session.store import SessionStore, job_status
from workbench.system.atomic import read_json, write_json, write_text


class CompareInputError(Exception):
    """A run to compare cannot be found or is not a training run."""


def resolve_run(store: SessionStore, ref: str) -> Path:
    """`SID/train-003`, `train-003` (newest session that has it) or a job folder -> the train job's folder."""
    path = Path(os.path.expanduser(ref))
    if path.is_dir() and (path / "job.json").is_file():
        found = path.resolve()
    else:
        try:
            found = store.find_job(ref)
        except (BadReference, FileNotFoundError) as exc:
            raise CompareInputError(
                "%s (give SID/train-NNN, as `ms-workbench sessions` lists them, or a job folder)" % exc
            )
    try:
        kind = read_json(found / "job.json").get("kind")
    except (OSError, ValueError, AttributeError) as exc:
        raise CompareInputError("%s: job.json cannot be read (%s)" % (found, exc))
    if kind != "train":
        raise CompareInputError("%s is a %s job; compare takes two training runs (train-NNN)" % (ref, kind))
    return found


def fold_run(job_dir: Path) -> JobRecord:
    """A training run folded with its thinned step table (memory flat in its length), as the record keeps it."""
    return fold_job(job_dir, steps=StepTable())


def _session_jobs(session_dir: Path, kind: str) -> List[Path]:
    jobs = session_dir / "jobs"
    if not jobs.is_dir():
        return []
    return sorted(p for p in jobs.iterdir() if p.name.startswith(kind + "-") and (p / "events.jsonl").is_file())


def run_test_evaluations(run_dir: Path, also_in: Tuple[Path, ...] = ()) -> List[Dict[str, Any]]:
    """Test-set results of this run's checkpoint: test jobs of its session (and of `also_in`) that name it."""
    run_dir = Path(run_dir).resolve()
    out = []
    seen = set()
    for session_dir in (run_dir.parent.parent,) + tuple(also_in):
        for job in _session_jobs(Path(session_dir), "test"):
            if job.resolve() in seen:
                continue
            seen.add(job.resolve())
            rec = fold_job(job)
            for summary in rec.results:
                if _names_run(summary, run_dir, same_session=Path(session_dir).resolve() == run_dir.parent.parent):
                    out.append(dict(summary, jid=rec.jid, t=rec.last_t))
    return out


def _names_run(summary: Dict[str, Any], run_dir: Path, same_session: bool) -> bool:
    """A test result names this run by its folder's <session>/jobs/<job id> (the root may have moved: an
    imported record keeps the paths of the machine it was made on) or, in the run's own session, by its id."""
    where = summary.get("train_dir")
    if isinstance(where, str) and where:
        return Path(where).parts[-3:] == run_dir.parts[-3:]
    return same_session and summary.get("from") == run_dir.name


def env_facts(run_dir: Path) -> Dict[str, Any]:
    """The environment the session's newest env job saw (python, mindspore, cann), {} without one."""
    envs = _session_jobs(Path(run_dir).parent.parent, "env")
    for job in reversed(envs):
        rec = fold_job(job)
        if rec.result:
            return rec.result
    return {}


def compare_dirs(dir_a: Path, dir_b: Path, tolerances: Tolerances, names: Tuple[str, str] = ("", "")) -> Dict[str, Any]:
    """Fold both runs and their context, and compare them."""
    a, b = fold_run(dir_a), fold_run(dir_b)
    sessions = (Path(dir_a).resolve().parent.parent, Path(dir_b).resolve().parent.parent)
    tests_a, tests_b = run_test_evaluations(dir_a, sessions), run_test_evaluations(dir_b, sessions)
    result = compare_runs(a, b, tolerances, tests_a, tests_b, env_facts(dir_a), env_facts(dir_b), names=names)
    for side, folder in (("a", dir_a), ("b", dir_b)):
        result[side]["dir"] = str(Path(folder).resolve())
        result[side]["session"] = Path(folder).resolve().parent.parent.name
        result[side]["imported"] = (Path(folder).resolve().parent.parent / "imported.json").is_file()
        result[side]["class_names"] = _class_names(a if side == "a" else b)
    return result


def _class_names(rec: JobRecord) -> List[str]:
    best = rec.best_epoch or {}
    per_class = (best.get("val") or {}).get("per_class") or []
    names = [str(c.get("name") or i) for i, c in enumerate(per_class) if isinstance(c, dict)]
    if names:
        return names
    from workbench.data.dataset import CLASS_NAMES

    return list(CLASS_NAMES)


def compare_refs(store: SessionStore, ref_a: str, ref_b: str, compare_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """`compare A B`: resolve both references and compare the runs with the config's tolerances."""
    dir_a, dir_b = resolve_run(store, ref_a), resolve_run(store, ref_b)
    if os.path.samefile(str(dir_a), str(dir_b)):
        raise CompareInputError(
            "A (%s) and B (%s) are the same run, %s: a run compared with itself proves nothing; "
            "name two runs" % (ref_a, ref_b, dir_a)
        )
    return compare_dirs(dir_a, dir_b, Tolerances.from_config(compare_cfg), names=(_name(dir_a), _name(dir_b)))


def _name(job_dir: Path) -> str:
    return "%s/%s" % (job_dir.parent.parent.name, job_dir.name)


def write_compare_outputs(result: Dict[str, Any], out: Path) -> Dict[str, str]:
    """compare.json, compare.md and loss.svg (both curves on one axis) into `out`; returns their paths."""
    from workbench.compare.text import render_text
    from workbench.render.svg import line_chart

    out = Path(out)
    curves = result["loss_curves"]
    series = [
        ("A %s" % result["a"]["ref"], curves["a"]["x"], curves["a"]["y"]),
        ("B %s" % result["b"]["ref"], curves["b"]["x"], curves["b"]["y"]),
    ]
    files = {"json": str(out / "compare.json"), "text": str(out / "compare.md"), "loss_svg": str(out / "loss.svg")}
    write_text(
        out / "loss.svg",
        line_chart(series, "train loss: A and B", "epoch", "loss", notes=[result["verdict"]["summary"][:110]]),
    )
    write_text(out / "compare.md", "```\n%s\n```\n" % render_text(result))
    write_json(out / "compare.json", dict(result, files=files))
    return files


def candidate_runs(store: SessionStore, sid: str, exclude: Optional[Path] = None) -> List[Tuple[Path, str]]:
    """Runs to compare with: this session's other train jobs (newest first), then every imported record's."""
    from workbench.session.imported import imported_mark

    skip = Path(exclude).resolve() if exclude else None
    out: List[Tuple[Path, str]] = []
    others = [s for s in reversed(store.sessions()) if s != sid]
    for session in [sid] + others:
        mark = imported_mark(store.root / session)
        if session != sid and mark is None:
            continue
        for job in reversed(store.jobs(session)):
            if not job.name.startswith("train-") or (skip is not None and job.resolve() == skip):
                continue
            status = job_status(job)
            if status.reason.startswith("refused:"):
                continue  # refused at once by a held device: it never ran, nothing to compare
            state = _clip(status.label(), 40)
            where = "this session" if session == sid else "imported from %s" % ((mark or {}).get("host") or "?")
            out.append((job, "%s/%s  %s  (%s)" % (session, job.name, state, where)))
    return out


def _clip(text: str, cells: int) -> str:
    return text if len(text) <= cells else text[: cells - 1] + "…"


def _device_and_config(job: Path) -> Tuple[str, Dict[str, Any]]:
    try:
        device = str((read_json(job / "job.json").get("device") or {}).get("resolved") or "?")
        cfg = read_json(job / "config.json")
    except (OSError, ValueError, AttributeError):
        return "?", {}
    return device, cfg if isinstance(cfg, dict) else {}


def cross_device_for_session(store: SessionStore, sid: str, tolerances: Tolerances) -> Optional[Dict[str, Any]]:
    """The task layer's cross-device evidence of a session, or None when it has no such pair.

    The session's newest train run (B, the target) against the newest run on another device with the
    same training config apart from the device (A, the reference): from this session or an imported
    record. Its evidence level is the comparison's verdict (`runcompare.cross_device_evidence`).
    """
    from workbench.compare.runs import DEVICE_KEYS, config_diff, cross_device_evidence

    mine = [j for j in reversed(store.jobs(sid)) if j.name.startswith("train-")]
    if not mine:
        return None
    target = mine[0]
    device, cfg = _device_and_config(target)
    for other, _ in candidate_runs(store, sid, exclude=target):
        other_device, other_cfg = _device_and_config(other)
        if other_device in (device, "?") or not other_cfg:
            continue
        if any(d["training"] and d["key"] not in DEVICE_KEYS for d in config_diff(other_cfg, cfg)):
            continue
        result = compare_dirs(other, target, tolerances, names=(_name(other), _name(target)))
        found = cross_device_evidence(result)
        if found is not None:
            return found
    return None


def default_tolerances() -> Tolerances:
    """The documented defaults of the `compare` config section."""
    from workbench.config.layers import defaults

    return Tolerances.from_config(defaults()["compare"])


def picked_tolerances(cfg: Optional[Dict[str, Any]]) -> Tolerances:
    """The tolerances of a loaded config, else the defaults."""
    if cfg and isinstance(cfg.get("compare"), dict):
        return Tolerances.from_config(cfg["compare"])
    return default_tolerances()
