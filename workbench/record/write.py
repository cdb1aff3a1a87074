"""Writes the session record: report.md/json, metrics CSVs, SVG figures and screenshots, manifest, tar.gz."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from workbench.analysis import shift as shift_results
from workbench.events.files import line_blocks
from workbench.fold.handoff import TAIL_BYTES, FoldedSession, tail_events
from workbench.fold.record import JobRecord
from workbench.fold.steptable import StepTable
from workbench.masking.scrub import Scrubber, file_kind, scrub_pairs
from workbench.record import deliverable, lineage, metrics_csv, reproduce
from workbench.record.collect import FORMAT, collect
from workbench.record.manifest import (
    IN_MEMORY_LIMIT_BYTES,
    MANIFEST_NAME,
    ArchiveHead,
    Entry,
    SessionFiles,
    write_archive,
    write_manifest,
)
from workbench.record.markdown import appendix
from workbench.record.markdown import report as markdown
from workbench.record.markdown import reproduce as reproduce_md
from workbench.render import humanize as h
from workbench.render import svg
from workbench.session import candidate
from workbench.session.store import SessionStore
from workbench.system.atomic import write_bytes, write_json, write_text

EXPORT_DIR = "export"
SESSION_MANIFEST = "session.sha256"  # the session's files as packed, relative to the session folder

# Draws the session's screens into the given folder from the export's fold of it (never reading the events
# files again); returns {"files": [names in it], "error": str or None}.
Screenshooter = Callable[[Path, FoldedSession], Dict[str, Any]]


def _large_text(entry: Entry) -> bool:
    """A file left on disk that holds text (event files, logs): scrubbed in blocks of lines."""
    if entry.data is not None:
        return False
    head = next(entry.chunks(), b"")[:8192]
    return file_kind(entry.rel, head) != "binary"


def scrub_session(files: SessionFiles, spill: Optional[Path] = None) -> Tuple[Scrubber, List[str]]:
    """Mask secrets in the snapshot's copies -> (the scrubber, the paths whose copy was masked).

    The session folder is never written: it stays the truth, byte for byte. The record, the manifest
    and the archive carry the masked copies, so those files verify only in the unpacked archive.
    Files too large to hold in memory are read in blocks of lines; a masked copy of one is written
    under `spill` (a temporary folder the caller removes), so memory stays flat.
    """
    large = [e for _, e in sorted(files.entries.items()) if _large_text(e)]
    large_ids = {id(e) for e in large}
    scrubber = scrub_pairs((e.rel, e.data) for e in files.entries.values() if e.data is not None)
    plain: Dict[int, int] = {}  # id(entry) -> values known when every block of the file was found plain
    for entry in large:
        known = len(scrubber.values)
        if all([scrubber.learn_file(entry.rel, block) for block in line_blocks(entry.chunks())]):
            plain[id(entry)] = known
    masked = []
    for rel, entry in sorted(files.entries.items()):
        if entry.data is None:
            if plain.get(id(entry), -1) == len(scrubber.values):  # plain, and no value learned since: unchanged
                continue
            if id(entry) in large_ids and spill is not None and _mask_large(scrubber, entry, spill):
                masked.append(rel)
            continue
        clean = scrubber.file(entry.rel, entry.data)
        if clean != entry.data:
            entry.replace(clean)
            masked.append(rel)
    return scrubber, masked


def _mask_large(scrubber: Scrubber, entry: Entry, spill: Path) -> bool:
    """Mask a large file block by block into `spill`; point the entry at the copy when anything changed."""
    spill.mkdir(parents=True, exist_ok=True)
    copy = spill / ("%d-%s" % (len(os.listdir(str(spill))), entry.path.name))
    changed = False
    with open(str(copy), "wb") as out:
        for block in line_blocks(entry.chunks()):
            clean = scrubber.file(entry.rel, block)
            changed = changed or clean != block
            out.write(clean)
    if changed:
        entry.replace_path(copy)
    else:
        copy.unlink()
    return changed


def figures(report: Dict[str, Any], out: Path, files: Optional[SessionFiles] = None) -> Dict[str, Dict[str, str]]:
    """Loss, step-time, confusion and new-distribution figures per job; returns {jid: {name: relative path}}."""
    made: Dict[str, Dict[str, str]] = {}
    jobs = {j["jid"]: j for j in report["jobs"]}
    for run in report["training"]["runs"]:
        j = jobs[run["jid"]]
        mine = made.setdefault(run["jid"], {})
        warmup = (j["config"].get("train") or {}).get("warmup_steps")
        perf = j["perf"][-1] if j["perf"] else None
        if perf is not None and perf.get("warmup_steps") is not None:
            warmup = perf["warmup_steps"]
        if j["steps"]["step"]:
            write_text(
                out / "figures" / ("%s-loss.svg" % run["jid"]), svg.loss_curve_svg(run["jid"], j["steps"], j["epochs"])
            )
            write_text(
                out / "figures" / ("%s-step-time.svg" % run["jid"]),
                svg.step_time_svg(run["jid"], j["steps"], warmup, perf),
            )
            mine["loss"] = "figures/%s-loss.svg" % run["jid"]
            mine["step_time"] = "figures/%s-step-time.svg" % run["jid"]
        if j.get("device_samples"):
            figure = svg.device_svg(run["jid"], j["device_samples"], j.get("device_every") or 1, j.get("device_seen"))
            write_text(out / "figures" / ("%s-device.svg" % run["jid"]), figure)
            mine["device"] = "figures/%s-device.svg" % run["jid"]
        if j.get("monitor"):
            write_text(out / "figures" / ("%s-layers.svg" % run["jid"]), svg.layers_svg(run["jid"], j["monitor"]))
            mine["layers"] = "figures/%s-layers.svg" % run["jid"]
        if j.get("loss_scale"):
            write_text(
                out / "figures" / ("%s-loss-scale.svg" % run["jid"]), svg.loss_scale_svg(run["jid"], j["loss_scale"])
            )
            mine["loss_scale"] = "figures/%s-loss-scale.svg" % run["jid"]
        best = run["best_epoch"] or {}
        matrix = (best.get("val") or {}).get("confusion")
        if matrix:
            name = "figures/%s-confusion.svg" % run["jid"]
            title = "%s: confusion matrix, epoch %s (validation)" % (run["jid"], best.get("epoch"))
            write_text(out / name, svg.confusion_svg(matrix, run["class_names"], title))
            mine["confusion"] = name
    for test in report["training"]["tests"]:
        if test.get("confusion"):
            name = "figures/%s-confusion.svg" % test["jid"]
            names = (
                report["training"]["runs"][0]["class_names"]
                if report["training"]["runs"]
                else [str(i) for i in range(10)]
            )
            write_text(
                out / name, svg.confusion_svg(test["confusion"], names, "%s: confusion matrix (test set)" % test["jid"])
            )
            made.setdefault(test["jid"], {})["confusion"] = name
    for job in report.get("new_distribution") or []:
        res = job.get("summary") or {}
        names, severities, grid = shift_results.heat_map(res)
        if names:
            name = "figures/%s-heat-map.svg" % job["jid"]
            title = "%s: macro-F1 by set and severity (clean %s)" % (
                job["jid"],
                h.ratio((res.get("clean") or {}).get("macro_f1")),
            )
            write_text(out / name, svg.heat_map_svg(names, ["s%d" % s for s in severities], grid, title))
            made.setdefault(job["jid"], {})["heat_map"] = name
        grid_png = [a for a in job.get("artifacts") or [] if a.get("kind") == "failure-grid"]
        data = files.read("jobs/%s/%s" % (job["jid"], grid_png[-1]["path"])) if grid_png and files else None
        if data:  # the snapshot's bytes: the figure is the file the manifest lists for the job
            name = "figures/%s-failures.png" % job["jid"]
            write_bytes(out / name, data)
            made.setdefault(job["jid"], {})["failures"] = name
    return {k: v for k, v in made.items() if v}


def handoff(files: SessionFiles, folds: Dict[str, JobRecord]) -> FoldedSession:
    """The export's fold for the screen renderer: every job's record and the last lines of its events.jsonl."""
    tails = {}
    for jid in folds:
        entry = files.get("jobs/%s/events.jsonl" % jid)  # the snapshot's (masked) copy, to the size folded
        if entry is None:
            continue
        size = entry.size
        start = max(0, size - TAIL_BYTES)
        if entry.data is not None:
            end = entry.data[start:]
        else:
            with open(str(entry.path), "rb") as fh:
                fh.seek(start)
                end = fh.read(size - start)
        tails[jid] = tail_events(end, cut=start > 0)
    return FoldedSession(records=dict(folds), tails=tails)


def _job_pythons(files: SessionFiles) -> List[Any]:
    """The interpreters the session's job.json files name, latest job first (the one the record will ask about)."""
    pythons = []
    for entry in reversed(files.under("jobs/")):
        if entry.rel.count("/") == 2 and entry.rel.endswith("/job.json") and entry.data is not None:
            try:
                spec = json.loads(entry.data)
            except ValueError:
                continue
            if isinstance(spec, dict):
                pythons.append(spec.get("python"))
    return pythons


SHOTS_DIR = "screenshots"  # the record's folder of screen pictures, drawn by the UI side's child
PICTURE_LOOK_S = 0.02  # how often the export looks for a newly saved picture while the child draws


def screenshot_record(shooter: Optional[Screenshooter], out: Path, folded: FoldedSession) -> Dict[str, Any]:
    """Ask the UI side's shooter for the screen pictures; its failure is reported in the record, not raised."""
    if shooter is None:
        return {"files": [], "error": "skipped on request"}
    try:
        result = dict(shooter(out / SHOTS_DIR, folded))
    except Exception as exc:  # pictures are optional: the record is written without them
        return {"files": [], "error": "%s: %s" % (type(exc).__name__, exc)}
    result["files"] = ["%s/%s" % (SHOTS_DIR, name) for name in result.get("files") or []]
    result.setdefault("error", None)
    return result


def _export_entries(folder: Path, skip: List[str]) -> List[Entry]:
    """Entries for the export's own files, named relative to the export folder."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(str(folder)):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = os.path.relpath(str(path), str(folder)).replace(os.sep, "/")
            if rel in skip or (name.startswith(".") and name.endswith(".tmp")):
                continue
            st = path.stat()
            small = st.st_size <= IN_MEMORY_LIMIT_BYTES
            entries.append(
                Entry(
                    rel, path, path.read_bytes() if small else None, st.st_mtime, length=None if small else st.st_size
                )
            )
    return entries


def write_package(
    report: Dict[str, Any], files: SessionFiles, stage: Path, early: Optional[reproduce.Early] = None
) -> Dict[str, Any]:
    """reproduce/: revision, package lock, commands, model code and the reference sets; returns the paths written."""
    rep = reproduce.reproduce_record(report, early)
    lock = rep.pop("_lock")
    write_text(stage / reproduce_md.LOCK, lock)
    write_json(stage / reproduce_md.REVISION, rep["revision"])
    write_text(stage / reproduce_md.COMMANDS, reproduce.commands_script(report, rep["commands"]))
    os.chmod(str(stage / reproduce_md.COMMANDS), 0o755)
    written: Dict[str, Any] = {"model_code": [], "reference": []}
    code = reproduce.model_code()
    for data in code.values():
        path = "%s/model.py" % reproduce_md.PACKAGE  # the standalone network, as in the deliverable
        write_bytes(stage / path, data)
        written["model_code"].append(path)
    for j in report["jobs"]:
        for a in j["artifacts"]:
            if str(a.get("kind", "")).startswith("reference") and a.get("on_disk") in ("matches", "superseded"):
                entry = files.get(a["session_path"])
                if entry is not None:
                    path = "%s/reference/%s/%s" % (reproduce_md.PACKAGE, j["jid"], a["session_path"].rsplit("/", 1)[-1])
                    write_bytes(stage / path, entry.read())
                    written["reference"].append(path)
    written["reference_about"] = _reference_about(report, written["reference"])
    report["reproduce"] = rep
    report["deliverable"] = deliverable.write(stage, report, files, code.get(deliverable.MODEL_SOURCE, b""), lock)
    return written


def _reference_about(report: Dict[str, Any], paths: List[str]) -> Dict[str, str]:
    """Per export job whose reference set was copied: whom its expected outputs are about."""
    lineage_part = report.get("candidate") or {}
    mine = (lineage_part.get("jobs") or {}).get("export")
    others = {o["jid"]: o.get("subject") for o in lineage_part.get("other_models") or []}
    out = {}
    for path in paths:
        jid = path.split("/")[2]
        if jid == mine:
            out[jid] = "the candidate"
        else:
            out[jid] = "NOT the candidate: %s" % candidate.subject_label(others.get(jid))
    return out


def export_session(
    store: SessionStore, sid: str, out_dir: Optional[Path] = None, screenshots: Optional[Screenshooter] = None
) -> Path:
    """Write the session record to `out_dir` (default sessions/<sid>/export) and return that folder.

    `screenshots` draws the screens into the folder it is given, from the fold made here (the UI side
    makes one: `screens.screenshots.shooter`); without it the record says the pictures were skipped.
    Everything, the manifests and the archive included, is written into a staging folder that
    replaces the export folder only when complete: a full disk leaves no record that looks whole.
    """
    session_dir = store.session_dir(sid)
    export_dir = Path(os.path.realpath(str(out_dir))) if out_dir else session_dir / EXPORT_DIR
    if out_dir and export_dir != Path(os.path.realpath(str(session_dir / EXPORT_DIR))):
        check_out_dir(export_dir, Path(os.path.realpath(str(store.root))))
        _check_replaceable(export_dir)  # sessions/<sid>/export is the record's own folder
    files = SessionFiles.snapshot(session_dir, exclude=(EXPORT_DIR,))
    spill = Path(tempfile.mkdtemp(prefix="ms-workbench-export-"))
    tables: Dict[str, StepTable] = {}
    folds: Dict[str, JobRecord] = {}
    early = reproduce.Early(_job_pythons(files))
    hashing: Optional[_Hashes] = None
    head: Optional[ArchiveHead] = None
    try:
        scrubber, masked = scrub_session(files, spill)
        hashing = _Hashes(files)  # the session manifest's hashes of large files, while the session is folded
        export_dir.parent.mkdir(parents=True, exist_ok=True)
        head = ArchiveHead(export_dir.parent, sid, _session_entries(files), list(files.dirs))  # packed meanwhile
        report = collect(store, sid, files, scrubber, step_tables=tables, folds=folds)
        cand = candidate.current(session_dir)
        commands = {"freeze": store.command("freeze", sid)}
        if cand is not None:
            commands["export"] = store.command("run", "export", "--session", sid, "--set", "export.from=%s" % cand.run)
        report["candidate"] = lineage.lineage(report, cand, len(candidate.history(session_dir)), commands)
        folded = handoff(files, folds) if screenshots is not None else FoldedSession()
        return _write_record(
            store, sid, files, scrubber, masked, report, tables, export_dir, screenshots, folded, early, hashing, head
        )
    finally:
        early.join()  # its subprocesses end within their timeout; none outlives the export
        if hashing is not None:
            hashing.join()
        if head is not None:
            head.cancel()  # sealed: its file was taken; otherwise stopped and removed
        for table in tables.values():
            table.close()
        shutil.rmtree(str(spill), ignore_errors=True)


def _write_record(
    store: SessionStore,
    sid: str,
    files: SessionFiles,
    scrubber: Scrubber,
    masked: List[str],
    report: Dict[str, Any],
    tables: Dict[str, StepTable],
    export_dir: Path,
    screenshots: Optional[Screenshooter],
    folded: FoldedSession,
    early: Optional[reproduce.Early] = None,
    hashing: Optional[threading.Thread] = None,
    head: Optional[ArchiveHead] = None,
) -> Path:
    """Stage the record's files, swap them in, then write the manifest and the archive."""
    export_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".export-staging-", dir=str(export_dir.parent)))
    shots = _Pictures(screenshots, stage, folded)  # drawn by the UI side's child while this writes the rest
    try:
        (stage / "metrics").mkdir(parents=True)
        with open(str(stage / "metrics" / "steps.csv"), "w", encoding="utf-8", newline="") as fh:
            fh.write(metrics_csv.steps_csv([]))  # the header; every step follows, streamed from the spools
            for j in report["jobs"]:
                if j["jid"] in tables:
                    tables[j["jid"]].copy_rows(fh)
        metrics = {
            "epochs.csv": metrics_csv.epochs_csv(report["jobs"]),
            "per_class.csv": metrics_csv.per_class_csv(report["jobs"], _class_names(report)),
        }
        if any(j.get("device_samples") for j in report["jobs"]):  # Ascend runs only: CPU records stay as they were
            metrics["device.csv"] = metrics_csv.device_csv(report["jobs"])
        for name, text in metrics.items():
            write_text(stage / "metrics" / name, text)
        report["files"] = {
            "metrics": ["metrics/%s" % n for n in ["steps.csv"] + list(metrics)],
            "figures": figures(report, stage, files),
            "masked": masked,
        }
        report["files"].update(write_package(report, files, stage, early))
        # what is written so far gets its last pass while the child still draws (not the pictures it writes)
        scrubbed = _scrub_tree(stage, scrubber, skip_dir=stage / SHOTS_DIR)
        archived = _pack_early(stage, head)  # archived and hashed while the pictures are drawn
        scrubbed = shots.passing(scrubber, scrubbed)  # each picture gets its pass while the next is drawn
        report["files"]["screenshots"] = shots.result()
        for rel, text in appendix.render_all(report).items():
            write_text(stage / rel, text)
        write_text(stage / "report.md", markdown.render(report))
        write_json(stage / "report.json", report)
        _scrub_tree(stage, scrubber, scrubbed)
        if hashing is not None:
            hashing.join()
        _seal(stage, sid, files, head, archived)
        _swap_in(stage, export_dir)
    finally:
        shots.result()  # never leave the child drawing into a folder being removed
        if stage.exists():
            shutil.rmtree(str(stage), ignore_errors=True)
    return export_dir


class _Hashes(threading.Thread):
    """The SHA-256 of the snapshot's files left on disk (the large ones), in a thread: hashlib works without the
    interpreter lock, so on a second core; the manifest reads the same Entry.sha256 afterwards (joined first)."""

    def __init__(self, files: SessionFiles):
        super().__init__(name="export-hashes", daemon=True)
        self.entries = [e for _, e in sorted(files.entries.items()) if e.data is None]
        self.start()

    def run(self) -> None:
        try:
            for entry in self.entries:
                entry.sha256  # noqa: B018  (computed and kept by the entry)
        except OSError:  # a file gone: the manifest, hashing again in the export's thread, reports it
            pass


class _Pictures(threading.Thread):
    """screenshot_record in a thread, from the moment the stage exists: the pictures are drawn (in the UI side's
    child process) while the export writes its other files, and waited for only when the report needs them."""

    def __init__(self, shooter: Optional[Screenshooter], stage: Path, folded: FoldedSession):
        super().__init__(name="export-screenshots", daemon=True)
        self.args = (shooter, stage, folded)
        self.got: Dict[str, Any] = {"files": [], "error": "the screenshots were not taken"}
        self.start()

    def run(self) -> None:
        self.got = screenshot_record(*self.args)

    def result(self) -> Dict[str, Any]:
        """What screenshot_record returned (waiting for it)."""
        self.join()
        return self.got

    def passing(self, scrubber: Scrubber, done: Dict[Path, tuple]) -> Dict[Path, tuple]:
        """Wait for the pictures, giving each one its masking pass as soon as it is saved; `done` plus those passed.

        A picture is saved once, by a rename: one seen is whole. One changed after its pass fails the identity
        check of the last pass, which passes it again."""
        folder = self.args[1] / SHOTS_DIR
        passed = dict(done)
        ended = False
        while not ended:  # one look more after the child ended: the last picture may land just before it does
            self.join(PICTURE_LOOK_S)
            ended = not self.is_alive()
            for path in sorted(folder.glob("*.svg")) if folder.is_dir() else []:
                if path not in passed:
                    passed[path] = _scrub_file(path, scrubber)
        return passed


def _session_entries(files: SessionFiles) -> List[Entry]:
    return sorted(files.entries.values(), key=lambda e: e.rel)


def _pack_early(stage: Path, head: Optional[ArchiveHead]) -> Dict[str, Tuple[tuple, Entry]]:
    """Queue steps.csv, final after its masking pass, for the archive's first part (which hashes it too).

    Returns its name in the export folder -> (the file's identity when queued, its archive entry)."""
    rel = "metrics/steps.csv"
    path = stage / rel
    if head is None or not path.is_file() or path.stat().st_size <= IN_MEMORY_LIMIT_BYTES:
        return {}
    ident = _identity(path)
    entry = Entry("%s/%s" % (EXPORT_DIR, rel), path, None, path.stat().st_mtime, length=ident[1])
    head.extend(_folders_of(rel), [entry])
    return {rel: (ident, entry)}


def _folders_of(rel: str) -> List[str]:
    """The export folder and the folders above one of its files, as the archive names them, parents first."""
    parts = rel.split("/")[:-1]
    return [EXPORT_DIR] + ["%s/%s" % (EXPORT_DIR, "/".join(parts[: i + 1])) for i in range(len(parts))]


def _seal(
    stage: Path,
    sid: str,
    files: SessionFiles,
    head: Optional[ArchiveHead] = None,
    early: Optional[Dict[str, Tuple[tuple, Entry]]] = None,
) -> None:
    """session.sha256 and manifest.sha256 (each relative to the folder it verifies), then the archive.

    `head`: the session's part of the archive, written already; the export's part follows it. `early`: export
    files in that part already (_pack_early), each still the file it was when queued, or the archive is
    written again whole."""
    archive_name = "%s.tar.gz" % sid
    session_entries = _session_entries(files)
    write_manifest(stage / SESSION_MANIFEST, session_entries)
    own = _export_entries(stage, [MANIFEST_NAME, archive_name])
    packed_early = set()
    if early and head is not None:
        head.finish()
        head.join()
        if head.error is None:
            by_rel = {e.rel: e for e in own}
            if all(rel in by_rel and _identity(by_rel[rel].path) == ident for rel, (ident, _) in early.items()):
                for rel, (_, entry) in early.items():
                    by_rel[rel]._sha256 = entry.sha256  # hashed in the archive's thread, as it was archived
                packed_early = set(early)
            else:  # changed after it was archived: the archive is written again, whole
                head.cancel()
                head = None
    write_manifest(stage / MANIFEST_NAME, own)
    packed = [
        Entry("%s/%s" % (EXPORT_DIR, e.rel), e.path, e.data, e.mtime, length=e.length)
        for e in _export_entries(stage, [archive_name])
        if e.rel not in packed_early
    ]
    export_dirs = sorted({e.rel.rsplit("/", 1)[0] for e in packed if e.rel.count("/") > 1})
    if head is None:
        write_archive(
            stage / archive_name, sid, session_entries + packed, list(files.dirs) + [EXPORT_DIR] + export_dirs
        )
    else:
        queued = {d for rel in packed_early for d in _folders_of(rel)}  # in the first part already
        dirs = [d for d in [EXPORT_DIR] + export_dirs if d not in queued]
        write_archive(stage / archive_name, sid, packed, dirs, head=head)


def _class_names(report: Dict[str, Any]) -> List[str]:
    runs = report["training"]["runs"]
    if runs:
        return list(runs[0]["class_names"])
    from workbench.data.fashion import CLASS_NAMES

    return list(CLASS_NAMES)


def _scrub_tree(
    folder: Path, scrubber: Scrubber, done: Optional[Dict[Path, tuple]] = None, skip_dir: Optional[Path] = None
) -> Dict[Path, tuple]:
    """A last pass over everything the export wrote (screenshots show whatever a screen showed).

    `done`: files passed already, left out while still the file that was passed (same inode, size, mtime: every
    file is rewritten through a new one); `skip_dir`: a folder left out. Returns every file passed, as `done`."""
    passed: Dict[Path, tuple] = dict(done or {})
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or (skip_dir is not None and skip_dir in path.parents):
            continue
        if done is not None and done.get(path) == _identity(path):
            continue
        passed[path] = _scrub_file(path, scrubber)
    return passed


def _scrub_file(path: Path, scrubber: Scrubber) -> tuple:
    """One file's masking pass, rewritten only if it changed; the file's identity after it."""
    if path.stat().st_size > IN_MEMORY_LIMIT_BYTES:  # steps.csv of a long run: in blocks of lines
        _scrub_large(path, scrubber)
    else:
        data = path.read_bytes()
        clean = scrubber.file(path.name, data)
        if clean != data:
            write_text(path, clean.decode("utf-8"))
    return _identity(path)


def _identity(path: Path) -> tuple:
    stat = path.stat()
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _scrub_large(path: Path, scrubber: Scrubber) -> None:
    """Scrub a large file in blocks of lines; it is rewritten only from the first block that changes."""
    entry = Entry(path.name, path, None, 0.0, length=path.stat().st_size)
    spill = path.with_name("." + path.name + ".scrub.tmp")
    out = None
    kept = 0  # bytes before the first changed block, copied as they are
    try:
        for block in line_blocks(entry.chunks()):
            clean = scrubber.file(path.name, block)
            if out is None and clean != block:
                out = open(str(spill), "wb")
                with open(str(path), "rb") as src:
                    while kept:
                        part = src.read(min(kept, 1 << 20))
                        out.write(part)
                        kept -= len(part)
            if out is None:
                kept += len(block)
            else:
                out.write(clean)
    except BaseException:
        if out is not None:
            out.close()
            os.unlink(str(spill))
        raise
    if out is not None:
        out.close()
        os.replace(str(spill), str(path))


class OutsideOwnFolder(ValueError):
    """An --out that would write into the sessions tree (another session, or inside this one)."""


def check_out_dir(export_dir: Path, root: Path) -> None:
    """Refuse an --out inside the sessions root or holding it: the only folder there export owns is <sid>/export."""
    out, top = str(export_dir), str(root)
    inside = out == top or out.startswith(top.rstrip(os.sep) + os.sep)
    holds = top.startswith(out.rstrip(os.sep) + os.sep)
    if inside or holds:
        raise OutsideOwnFolder(
            "--out %s is %s the sessions root %s; export writes there only into <sid>/export "
            "(leave out --out), or choose a folder outside it" % (out, "inside" if inside else "a parent of", top)
        )


def _check_replaceable(export_dir: Path) -> None:
    """An existing folder is replaced only when it is empty or an earlier record (never someone's files)."""
    if not export_dir.exists():
        return
    if not export_dir.is_dir():
        raise FileExistsError("%s exists and is not a folder; choose another --out" % export_dir)
    if not any(export_dir.iterdir()):
        return
    try:
        earlier = json.loads((export_dir / "report.json").read_text(encoding="utf-8")).get("format")
    except (OSError, ValueError, AttributeError):
        earlier = None
    if earlier != FORMAT:
        raise FileExistsError(
            "%s is not empty and holds no earlier session record (report.json of format %s); "
            "choose another --out" % (export_dir, FORMAT)
        )


def _swap_in(stage: Path, export_dir: Path) -> None:
    """Replace the export folder by the staged one (the old one is removed only after the swap)."""
    old = None
    if export_dir.exists():
        old = Path(tempfile.mkdtemp(prefix=".export-old-", dir=str(export_dir.parent)))
        os.rmdir(str(old))
        os.replace(str(export_dir), str(old))
    os.replace(str(stage), str(export_dir))
    if old is not None:
        shutil.rmtree(str(old), ignore_errors=True)
