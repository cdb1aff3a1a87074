"""The one way to fold a job folder's events files (accept, export, compare): streamed a block at a time, no event kept.

Memory stays flat (one block of about 1 MB at a time), and a long file costs little more than
decoding its lines: a block that is valid UTF-8 is decoded to text once and each line is scanned
where it lies; lines that are anything but one JSON object take decode_text, as ingest_lines would.
The live UI follows growing files instead (workbench.fold.tracker), into the same JobRecord.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional

from workbench.events.files import SCAN_OBJECT, decode_line, decode_text, line_blocks
from workbench.fold.record import JobRecord, SessionModel
from workbench.session.store import job_status
from workbench.system.atomic import read_json
from workbench.system.regular import open_regular

BLOCK_BYTES = 1 << 20

BLANK = " \t\n\r\x0b\x0c"  # what bytes.strip() strips: a line of only these is skipped, as ingest_lines does


def has_object(ev: Dict[str, Any]) -> bool:
    """True when one of the event's top-level values is an object."""
    for value in ev.values():
        if isinstance(value, dict):
            return True
    return False


def fold_stream(
    rec: JobRecord,
    chunks: Iterable[bytes],
    tail: List[bytes],
    transform: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None,
    objects_only: bool = False,
) -> None:
    """Fold the complete lines of a stream of byte chunks into `rec`; what follows the last newline goes to `tail`.

    The same outcome as rec.ingest_lines(complete_lines(chunks, tail), transform, keep=False).
    objects_only=True calls `transform` only for events with an object among their top-level values.
    """
    rest = b""
    for block in line_blocks(chunks):
        if block.endswith(b"\n"):
            _fold_block(rec, block, transform, objects_only)
        else:
            rest = block  # only the last block can lack its newline
    tail.append(rest)
    rec.version += 1


def _fold_block(rec: JobRecord, block: bytes, transform: Any, objects_only: bool) -> None:
    """Lines of one block ending in a newline."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:  # decode_line replaces bad bytes line by line
        for raw in block[:-1].split(b"\n"):
            rec.lines += 1
            if raw.strip():
                one = decode_line(raw)
                if transform is not None and (not objects_only or (raw.find(b"{", 1) > 0 and has_object(one))):
                    one = transform(one)
                rec._fold(one, rec.lines)
        return
    scan, fold, find = SCAN_OBJECT, rec._fold, text.find  # the record's own per-line fold, as ingest_lines calls it
    idx, end_all = 0, len(text)
    while idx < end_all:
        nl = find("\n", idx)
        rec.lines += 1
        ev: Optional[Dict[str, Any]] = None
        whole = False  # the line is one JSON object as written: its text goes to the fold
        if text[idx] == "{" and text[nl - 1] == "}":  # one object filling the line: scanned where it lies
            found: Dict[str, Any]  # what the scan gives back from a "{"
            try:
                found, end = scan(text, idx)
            except (StopIteration, ValueError):
                found, end = {}, -1
            if end == nl and "type" in found:
                ev, whole = found, True
        if ev is None:
            line = text[idx:nl]
            if not line.strip(BLANK):
                idx = nl + 1
                continue
            ev = decode_text(line)
        # a line with no "{" after its first character holds no nested object: most lines, told without a walk
        if transform is not None and (not objects_only or (find("{", idx + 1, nl) > 0 and has_object(ev))):
            ev = transform(ev)
            whole = False  # the masking walk may have changed what the text says
        if whole:
            fold(ev, rec.lines, text, idx, nl)
        else:
            fold(ev, rec.lines)
        idx = nl + 1


def fold_file(rec: JobRecord, name: str, chunks: Iterable[bytes], transform: Any = None) -> None:
    """Fold one events file's complete lines into `rec`; its torn tail is noted, never folded.

    Lines whose fields hold no mapping skip `transform` (the record's masking walk): cutting
    environment mappings only concerns mappings.
    """
    tail: List[bytes] = []
    rec.begin_file(name)
    fold_stream(rec, chunks, tail, transform, objects_only=True)
    rec.note_torn_tail(len(tail[0]) if tail else 0)


def _blocks(path: Path) -> Iterator[bytes]:
    try:
        fh = open_regular(path)
    except OSError:  # a FIFO, folder or device in its place is never read: the status says damaged
        return
    with fh:
        yield from iter(lambda: fh.read(BLOCK_BYTES), b"")


def event_files(names: Iterable[str]) -> List[str]:
    """The events files among `names` in fold order: events.jsonl first, then the others by name."""
    found = [n for n in names if n.startswith("events") and n.endswith(".jsonl")]
    return sorted(found, key=lambda n: (n != "events.jsonl", n))


def read_spec(job_dir: Path) -> Dict[str, Any]:
    """A job folder's job.json, {} when it is missing or unreadable."""
    try:
        spec = read_json(Path(job_dir) / "job.json")
    except (OSError, ValueError):
        return {}
    return spec if isinstance(spec, dict) else {}


def fold_job(
    job_dir: Path,
    steps: Any = False,
    spec: Optional[Dict[str, Any]] = None,
    files: Optional[Mapping[str, Callable[[], Iterable[bytes]]]] = None,
    transform: Any = None,
) -> JobRecord:
    """Fold one job folder's events files into its JobRecord and attach its status.

    `steps` is JobRecord's keep_steps; `spec` the job.json (read from the folder when None); `files`
    maps each events file's name to its byte chunks (default: the folder's events*.jsonl in 1 MB blocks).
    """
    job_dir = Path(job_dir)
    spec = read_spec(job_dir) if spec is None else spec
    created: Any = spec.get("created")
    rec = JobRecord(
        job_dir.name,
        str(spec.get("kind") or job_dir.name.rsplit("-", 1)[0]),
        float(created) if isinstance(created, (int, float)) and not isinstance(created, bool) else 0.0,
        job_dir,
        keep_steps=steps,
    )
    if files is None:
        files = {p.name: partial(_blocks, p) for p in job_dir.glob("events*.jsonl")}
    for name in event_files(files):
        fold_file(rec, name, files[name](), transform)
    # Without a finished event folded, the status reads the folder itself: a damaged events file says so.
    rec.status = job_status(job_dir, events=[rec.finished]) if rec.finished else job_status(job_dir)
    return rec


def fold_session(session_dir: Path) -> SessionModel:
    """Every job folder (one with a job.json) of a session, folded."""
    model = SessionModel()
    jobs = Path(session_dir) / "jobs"
    if jobs.is_dir():
        for job_dir in sorted(jobs.iterdir()):
            if (job_dir / "job.json").is_file():
                model.add(fold_job(job_dir))
    return model
