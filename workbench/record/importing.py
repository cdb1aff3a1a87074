"""Import a session record (an `export` archive or its unpacked folder) as a read-only session.

Every member of an archive is checked before anything is extracted (no absolute path, no `..`,
no link, one top folder named like a session id); the files land in a temp folder inside the
sessions root, every file is checked against the record's manifests (`export/*.sha256`, each
against the base it states: `manifest_base`), and only then is the folder
renamed into place, so a refused record leaves nothing behind. The imported session keeps its
files byte for byte (session.json too); `imported.json` beside them says where it came from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import stat
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench.session.imported import IMPORT_MARK, imported_mark, imported_session_of
from workbench.session.refs import SID_FORM, SID_PATTERN
from workbench.system.atomic import read_json, sha256_file, write_json

MANIFEST_NAME = "manifest.sha256"
EXPORT_DIR = "export"
TEMP_PREFIX = ".import-"
BLOCK_BYTES = 1 << 20


class RecordRefused(Exception):
    """A record was not imported (or an imported file no longer matches): the message names why and the file."""


def manifest_base(manifest_path: Path, listed: Dict[str, str]) -> Path:
    """The folder a manifest's paths are relative to, as the manifest states it: the one place that knows.

    A manifest that lists `session.json` or `export/...` paths is based at the session folder (the
    `manifest.sha256` export wrote first, and `session.sha256`); any other one at its own folder
    (a `manifest.sha256` of the export folder's files, checkable with `sha256sum -c` right there).
    """
    here = Path(manifest_path).parent
    if "session.json" in listed or any(rel.startswith(EXPORT_DIR + "/") for rel in listed):
        return here.parent if here.name == EXPORT_DIR else here
    return here


def read_manifest(manifest_path: Path) -> Dict[str, str]:
    """Relative path -> sha256 of a manifest.sha256 (`sha256sum` format; '#' lines are comments)."""
    from workbench.record.manifest import parse_manifest

    try:
        text = Path(manifest_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordRefused("%s: cannot read the manifest (%s)" % (manifest_path, exc))
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    listed = parse_manifest("\n".join(lines))
    bad = [rel for rel, sha in listed.items() if not re.match(r"^[0-9a-f]{64}$", sha)]
    if bad or not listed:
        raise RecordRefused("%s: not a sha256sum manifest (line for %r)" % (manifest_path, bad[0] if bad else "-"))
    return listed


def record_manifests(session_dir: Path) -> List[Tuple[Path, Path, Dict[str, str]]]:
    """(manifest, its base, its entries) of every manifest of an unpacked record, `manifest.sha256` first."""
    session_dir = Path(session_dir)
    first = session_dir / EXPORT_DIR / MANIFEST_NAME
    if not first.is_file():
        raise RecordRefused(
            "%s: no %s/%s: not a record written by `ms-workbench export`" % (session_dir, EXPORT_DIR, MANIFEST_NAME)
        )
    out = []
    for path in [first] + sorted(p for p in (session_dir / EXPORT_DIR).glob("*.sha256") if p != first):
        listed = read_manifest(path)
        out.append((path, manifest_base(path, listed), listed))
    return out


def verify_record(session_dir: Path) -> Dict[str, Any]:
    """Check every file of an unpacked record against its manifests; RecordRefused names the first mismatch.

    Every listed file must exist with its hash, and every file present must be listed by a manifest
    (`manifest.sha256` itself, the archive beside it and `imported.json` excepted). Files are named
    from the session folder. Returns {files, manifest_sha256}.
    """
    session_dir = Path(session_dir).resolve()
    covered = set()
    for manifest, base, listed in record_manifests(session_dir):
        for rel in sorted(listed):
            path = Path(os.path.normpath(str(base / rel)))
            name = os.path.relpath(str(path), str(session_dir)).replace(os.sep, "/")
            if rel.startswith("/") or name.startswith("../") or name == "..":
                raise RecordRefused("%s lists %r, which leaves the record's folder" % (manifest.name, rel))
            if path.is_symlink() or not path.is_file():
                raise RecordRefused("%s: listed in %s but missing from the record" % (name, manifest.name))
            actual = sha256_file(path)
            if actual != listed[rel]:
                raise RecordRefused(
                    "%s: SHA-256 %s, %s says %s (the file changed after export)"
                    % (name, actual, manifest.name, listed[rel])
                )
            covered.add(name)
    unlisted = sorted(set(_files_under(session_dir)) - covered - _not_listed_by_design(session_dir))
    if unlisted:
        raise RecordRefused("%s: in the record but not in its manifest" % unlisted[0])
    return {"files": len(covered), "manifest_sha256": sha256_file(session_dir / EXPORT_DIR / MANIFEST_NAME)}


def _not_listed_by_design(session_dir: Path) -> set:
    """Files export writes after its manifests (manifest.sha256, the archive) and the import mark."""
    sid = Path(session_dir).name
    return {"%s/%s" % (EXPORT_DIR, MANIFEST_NAME), "%s/%s.tar.gz" % (EXPORT_DIR, sid), IMPORT_MARK}


def _files_under(base: Path) -> List[str]:
    out = []
    for dirpath, _, filenames in os.walk(str(base)):
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), str(base)).replace(os.sep, "/"))
    return out


MAX_MEMBERS = 50000  # a record of a long session holds a few thousand files
MAX_TOTAL_BYTES = 64 << 30
MAX_MANIFEST_BYTES = 16 << 20
FREE_MARGIN_BYTES = 64 << 20  # left free on the sessions' disk after an import


def _check_member(info: tarfile.TarInfo) -> List[str]:
    """The member's path parts; RecordRefused for a path that leaves the folder, a link or a special file."""
    name = info.name
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise RecordRefused("archive member %r has an absolute path" % name)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts or "\\" in name:
        raise RecordRefused("archive member %r leaves the folder (`..`)" % name)
    if info.issym() or info.islnk():
        target = info.linkname
        where = os.path.normpath(os.path.join(os.path.dirname(name), target)) if info.issym() else target
        if target.startswith("/") or where.split("/")[0] == ".." or ".." in target.split("/"):
            raise RecordRefused("archive member %r is a link to %r, outside the folder" % (name, target))
        raise RecordRefused(
            "archive member %r is a link (to %r); a record written by export holds none" % (name, target)
        )
    if not (info.isfile() or info.isdir()):
        raise RecordRefused("archive member %r is neither a file nor a folder" % name)
    return parts


def check_members(tar: tarfile.TarFile) -> Tuple[str, List[tarfile.TarInfo]]:
    """Refuse members that could write outside the folder, or too many; return (top folder, members).

    Nothing is extracted. The headers are read one by one, so an archive of millions of members is
    refused after MAX_MEMBERS of them, not after all are listed.
    """
    members: List[tarfile.TarInfo] = []
    tops = set()
    for info in tar:
        if len(members) >= MAX_MEMBERS:
            raise RecordRefused(
                "the archive holds more than %d members; a record written by export holds far fewer" % MAX_MEMBERS
            )
        parts = _check_member(info)
        if parts:
            tops.add(parts[0])
        members.append(info)
    if len(tops) != 1:
        raise RecordRefused(
            "the archive has %d top-level entries (%s); a record has one folder named by "
            "its session id" % (len(tops), ", ".join(sorted(tops))[:200])
        )
    return tops.pop(), members


def _member_rel(info: tarfile.TarInfo) -> str:
    """The member's path inside the record's folder (its top folder left out)."""
    return "/".join([p for p in info.name.split("/") if p not in ("", ".")][1:])


def listed_hashes(tar: tarfile.TarFile, members: List[tarfile.TarInfo]) -> Dict[str, Dict[str, str]]:
    """Path in the record -> the hashes its manifests give, read from the archive before anything is written."""
    found: Dict[str, Dict[str, str]] = {}  # rel -> {sha256: manifest name}
    for info in members:
        rel = _member_rel(info)
        if not (info.isfile() and rel.startswith(EXPORT_DIR + "/") and rel.endswith(".sha256") and rel.count("/") == 1):
            continue
        if info.size > MAX_MANIFEST_BYTES:
            raise RecordRefused(
                "archive member %r: a manifest of %d bytes (at most %d)" % (info.name, info.size, MAX_MANIFEST_BYTES)
            )
        src = tar.extractfile(info)
        if src is None:
            raise RecordRefused("archive member %r cannot be read" % info.name)
        from workbench.record.manifest import parse_manifest

        text = src.read(MAX_MANIFEST_BYTES).decode("utf-8", "replace")
        listed = parse_manifest("\n".join(ln for ln in text.splitlines() if ln and not ln.startswith("#")))
        base = manifest_base(Path("/r") / rel, listed)
        for entry, sha in listed.items():
            where = os.path.normpath(str(base / entry))
            if where.startswith("/r/"):
                found.setdefault(where[len("/r/") :], {})[sha] = rel.rsplit("/", 1)[-1]
    if not found:
        raise RecordRefused(
            "the archive holds no %s/%s: not a record written by `ms-workbench export`" % (EXPORT_DIR, MANIFEST_NAME)
        )
    return found


def check_bounds(count: int, total: int, root: Path, what: str) -> None:
    """Refuse a record whose declared size or member count is out of bounds, before one byte is written."""
    if count > MAX_MEMBERS:
        raise RecordRefused("%s holds %d files (at most %d)" % (what, count, MAX_MEMBERS))
    if total > MAX_TOTAL_BYTES:
        raise RecordRefused("%s declares %d bytes (at most %d)" % (what, total, MAX_TOTAL_BYTES))
    st = os.statvfs(str(root))
    free = st.f_bavail * st.f_frsize
    if total + FREE_MARGIN_BYTES > free:
        raise RecordRefused(
            "%s declares %.1f MB; %s has %.1f MB free (%.0f MB kept free)"
            % (what, total / 1048576.0, root, free / 1048576.0, FREE_MARGIN_BYTES / 1048576.0)
        )


def _check_listed(members: List[tarfile.TarInfo], listed: Dict[str, Dict[str, str]], sid: str) -> None:
    """Every file member must be one the manifests list (or one export writes after them)."""
    by_design = _not_listed_by_design(Path(sid))
    for info in members:
        rel = _member_rel(info)
        if info.isfile() and rel not in listed and rel not in by_design:
            raise RecordRefused("%s: in the record but not in its manifest (nothing was written)" % rel)


def _extract(
    tar: tarfile.TarFile, members: List[tarfile.TarInfo], dest: Path, listed: Dict[str, Dict[str, str]]
) -> None:
    """Write the checked members under dest by hand, hashing each against its manifests as it is written."""
    for info in members:
        target = dest.joinpath(*[p for p in info.name.split("/") if p not in ("", ".")])
        if info.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        src = tar.extractfile(info)
        if src is None:
            raise RecordRefused("archive member %r cannot be read" % info.name)
        digest = hashlib.sha256()
        with src, open(str(target), "xb") as out:  # "x": a duplicate member must not overwrite a checked one
            block = src.read(BLOCK_BYTES)
            while block:
                digest.update(block)
                out.write(block)
                block = src.read(BLOCK_BYTES)
        expected = listed.get(_member_rel(info))
        if expected and digest.hexdigest() not in expected:
            sha, manifest = sorted(expected.items())[0]
            raise RecordRefused(
                "%s: SHA-256 %s, %s says %s (the file changed after export)"
                % (_member_rel(info), digest.hexdigest(), manifest, sha)
            )


def _session_folder(path: Path) -> Path:
    """An unpacked record: the session folder itself, or a folder holding exactly one."""
    if (path / "session.json").is_file():
        return path
    inner = [p for p in path.iterdir() if p.is_dir() and (p / "session.json").is_file()]
    if len(inner) == 1:
        return inner[0]
    raise RecordRefused("%s holds no session record (a folder with session.json and export/%s)" % (path, MANIFEST_NAME))


def _folder_files(src: Path) -> Tuple[List[str], int]:
    """The regular files of an unpacked record and their total size; links and special files refused by name."""
    files: List[str] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(str(src)):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                raise RecordRefused(
                    "%s is a link (to %r); a record written by export holds none" % (full, os.readlink(full))
                )
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise RecordRefused(
                    "%s is neither a file nor a folder (a FIFO, device or socket); nothing was added" % full
                )
            if stat.S_ISREG(mode):
                files.append(os.path.relpath(full, str(src)))
                total += os.lstat(full).st_size
                if len(files) > MAX_MEMBERS:
                    raise RecordRefused("%s holds more than %d files (at most %d)" % (src, MAX_MEMBERS, MAX_MEMBERS))
    return files, total


def _copy_regular(src: str, dest: Path) -> None:
    """Copy one file, opened only if it is (still) a regular file, and no more than the size it had then."""
    fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordRefused("%s is not a regular file; nothing was added" % src)
        left = st.st_size
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(str(dest), "xb") as out:
            while left > 0:
                block = os.read(fd, min(BLOCK_BYTES, left))
                if not block:
                    break
                out.write(block)
                left -= len(block)
    finally:
        os.close(fd)


def _copy_folder(src: Path, dest: Path, root: Path) -> None:
    """Copy an unpacked record's regular files, within the bounds; links and special files refused."""
    files, total = _folder_files(src)
    check_bounds(len(files), total, root, str(src))
    dest.mkdir(parents=True, exist_ok=True)
    for rel in files:
        _copy_regular(os.path.join(str(src), rel), dest / rel)
    for dirpath, dirnames, _ in os.walk(str(src)):  # empty folders too, as the record had them
        for name in dirnames:
            (dest / os.path.relpath(os.path.join(dirpath, name), str(src))).mkdir(parents=True, exist_ok=True)


def _make_read_only(folder: Path) -> None:
    for dirpath, _, filenames in os.walk(str(folder)):
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & ~0o222)


def import_record(root: Path, source: Path) -> Dict[str, Any]:
    """Import `source` (archive or unpacked folder) into the sessions root.

    Returns {sid, dir, status: "imported" | "already imported", files, ...}; raises RecordRefused.
    """
    root, source = Path(root).resolve(), Path(source)
    if not source.exists():
        raise RecordRefused("%s does not exist" % source)
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=str(root)))
    try:
        if source.is_dir():
            found = _session_folder(source.resolve())
            sid = _check_sid(found.name)
            staged = stage / sid
            _copy_folder(found, staged, root)
            origin_sha = None
        else:
            try:
                with tarfile.open(str(source), "r:*") as tar:
                    sid, members = check_members(tar)
                    _check_sid(sid)
                    listed = listed_hashes(tar, members)
                    _check_listed(members, listed, sid)
                    check_bounds(len(members), sum(m.size for m in members if m.isfile()), root, str(source))
                    _extract(tar, members, stage, listed)
            except (tarfile.TarError, EOFError, OSError) as exc:
                if isinstance(exc, RecordRefused):
                    raise
                raise RecordRefused("%s: not a readable tar archive (%s)" % (source, exc))
            staged = stage / sid
            origin_sha = sha256_file(source)
        verified = verify_record(staged)
        info = _session_info(staged, sid)
        existing = root / sid
        if existing.exists():
            return _already_there(existing, sid, verified)
        mark = {
            "id": sid,
            "imported_at": time.time(),
            "imported_on": socket.gethostname(),
            "source": str(source.resolve()),
            "source_sha256": origin_sha,
            "manifest_sha256": verified["manifest_sha256"],
            "files_verified": verified["files"],
            "host": info.get("host"),
            "revision": _revision(info, staged),
            "version": info.get("version"),
        }
        write_json(staged / IMPORT_MARK, mark)
        _make_read_only(staged)
        try:
            os.rename(str(staged), str(existing))  # atomic: the session appears whole or not at all
        except OSError:
            if existing.exists():  # another import won the race
                return _already_there(existing, sid, verified)
            raise
        return dict(mark, dir=str(existing), status="imported")
    finally:
        shutil.rmtree(str(stage), ignore_errors=True)


def _check_sid(sid: str) -> str:
    if not SID_PATTERN.fullmatch(sid):
        raise RecordRefused("the record's folder is %r, not a session id (%s)" % (sid, SID_FORM))
    return sid


def _session_info(staged: Path, sid: str) -> Dict[str, Any]:
    try:
        info = read_json(staged / "session.json")
    except (OSError, ValueError) as exc:
        raise RecordRefused("session.json of %s cannot be read: %s" % (sid, exc))
    if not isinstance(info, dict) or info.get("id") != sid:
        raise RecordRefused(
            "session.json names session %r, the record's folder is %r"
            % (info.get("id") if isinstance(info, dict) else None, sid)
        )
    return info


RECORD_REVISION = "export/reproduce/revision.json"  # the record's own statement of the code it ran


def _revision(info: Dict[str, Any], staged: Optional[Path] = None) -> Optional[str]:
    """The code revision the record names: session.json's `revision` or `code.revision`, else the git commit in
    the record's reproduce/revision.json ('<commit> (dirty)' when it had uncommitted changes)."""
    code = info["code"] if isinstance(info.get("code"), dict) else {}
    value = info.get("revision") or code.get("revision") or info.get("git")
    if value:
        return str(value)
    try:
        rev = read_json(staged / RECORD_REVISION) if staged is not None else None
    except (OSError, ValueError):
        return None
    git = rev["git"] if isinstance(rev, dict) and isinstance(rev.get("git"), dict) else {}
    if not git.get("commit"):
        return None
    return "%s%s" % (git["commit"], " (dirty)" if git.get("dirty") else "")


def _already_there(existing: Path, sid: str, verified: Dict[str, Any]) -> Dict[str, Any]:
    """Same record again: a no-op; a different session with the same id: refused."""
    mark = imported_mark(existing)
    if mark is not None and mark.get("manifest_sha256") == verified["manifest_sha256"]:
        return dict(mark, dir=str(existing), status="already imported")
    what = "an imported record with another manifest" if mark is not None else "a local session"
    raise RecordRefused("session %s already exists under %s as %s; nothing was added" % (sid, existing.parent, what))


def _artifact_sha256(session_dir: Path, rel: str) -> Optional[str]:
    """The sha256 the job's last `artifact` event recorded for this file (rel to the session), if any."""
    parts = rel.split("/")
    if len(parts) < 3 or parts[0] != "jobs":
        return None
    in_job = "/".join(parts[2:])
    found = None
    try:
        with open(str(session_dir / "jobs" / parts[1] / "events.jsonl"), "rb") as fh:
            for raw in fh:
                if b'"artifact"' not in raw:
                    continue
                try:
                    ev = json.loads(raw.decode("utf-8"))
                except ValueError:
                    continue
                if isinstance(ev, dict) and ev.get("type") == "artifact" and ev.get("path") == in_job:
                    found = ev.get("sha256")
    except OSError:
        return None
    return found if isinstance(found, str) and len(found) == 64 else None


def reverify_imported_file(path: Path) -> Optional[Dict[str, Any]]:
    """Before a checkpoint of an imported record is reused: its hash against the manifest and its artifact event.

    None when `path` lies in no imported session (nothing to check); {session, file, sha256} when it
    matches; RecordRefused naming the file and both hashes when it does not.
    """
    session_dir = imported_session_of(path)
    if session_dir is None:
        return None
    path = Path(path).resolve()
    rel = os.path.relpath(str(path), str(session_dir)).replace(os.sep, "/")
    expected, manifest_name = None, MANIFEST_NAME
    for manifest, base, listed in record_manifests(session_dir):
        expected = listed.get(os.path.relpath(str(path), str(base)).replace(os.sep, "/"))
        if expected is not None:
            manifest_name = manifest.name
            break
    if expected is None:
        raise RecordRefused("%s is not in the manifests of imported session %s" % (rel, session_dir.name))
    actual = sha256_file(path)
    if actual != expected:
        raise RecordRefused(
            "%s of imported session %s: SHA-256 %s, its %s says %s (changed since import)"
            % (rel, session_dir.name, actual, manifest_name, expected)
        )
    recorded = _artifact_sha256(session_dir, rel)
    if recorded is not None and recorded != actual:
        raise RecordRefused(
            "%s of imported session %s: SHA-256 %s, its artifact event says %s"
            % (rel, session_dir.name, actual, recorded)
        )
    return {
        "session": session_dir.name,
        "file": rel,
        "sha256": actual,
        "manifest": manifest_name,
        "artifact_event": recorded is not None,
    }
