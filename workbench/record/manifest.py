"""A snapshot of a session folder, its manifest.sha256 (`sha256sum -c` format) and the tar.gz."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import queue
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from workbench.system.atomic import write_text

MANIFEST_NAME = "manifest.sha256"
IN_MEMORY_LIMIT_BYTES = 8 << 20  # bigger files (checkpoints, long event files) are read from disk in blocks
BLOCK = 1 << 20
STAGING_PREFIXES = (".export-staging-", ".export-old-")


@dataclass
class Entry:
    """One file of the record: its path relative to the session folder and its bytes (or where they are)."""

    rel: str
    path: Path
    data: Optional[bytes] = None
    mtime: float = 0.0
    _sha256: Optional[str] = field(default=None, repr=False)
    length: Optional[int] = None  # a file left on disk: its size when the snapshot was taken (a job may append)

    @property
    def size(self) -> int:
        """Size in bytes of the recorded content."""
        if self.data is not None:
            return len(self.data)
        return self.length if self.length is not None else self.path.stat().st_size

    def chunks(self) -> Iterator[bytes]:
        """The recorded content in blocks of about 1 MB (a file on disk: up to its size at the snapshot)."""
        if self.data is not None:
            yield self.data
            return
        left = self.size
        with open(self.path, "rb") as fh:
            while left > 0:
                block = fh.read(min(BLOCK, left))
                if not block:
                    break
                left -= len(block)
                yield block

    @property
    def sha256(self) -> str:
        """SHA-256 of the recorded content."""
        if self._sha256 is None:
            digest = hashlib.sha256()
            for block in self.chunks():
                digest.update(block)
            self._sha256 = digest.hexdigest()
        return self._sha256

    def replace(self, data: bytes) -> None:
        """Record new content (a scrubbed copy) for this file."""
        self.data = data
        self._sha256 = None

    def replace_path(self, path: Path) -> None:
        """Record new content held in another file (a scrubbed copy of a large one)."""
        self.path, self.data, self.length, self._sha256 = Path(path), None, Path(path).stat().st_size, None

    def read(self) -> bytes:
        """The recorded content."""
        return self.data if self.data is not None else b"".join(self.chunks())


def _skipped(name: str) -> bool:
    # Temp files of atomic writes are half-written by definition.
    return name.endswith(".tmp") and name.startswith(".")


class SessionFiles:
    """Every file of a session folder read once, so the report, manifest and archive agree."""

    def __init__(self, root: Path, entries: Dict[str, Entry], dirs: List[str]):
        self.root = Path(root)
        self.entries = entries
        self.dirs = dirs

    @classmethod
    def snapshot(cls, root: Path, exclude: Sequence[str] = ("export",)) -> SessionFiles:
        """Read the folder, leaving out `exclude` (top-level names) and export staging folders."""
        root = Path(root)
        entries: Dict[str, Entry] = {}
        dirs: List[str] = []
        for dirpath, dirnames, filenames in os.walk(str(root)):
            rel_dir = os.path.relpath(dirpath, str(root))
            if rel_dir == ".":
                dirnames[:] = [d for d in dirnames if d not in exclude and not d.startswith(STAGING_PREFIXES)]
            dirnames.sort()
            for d in dirnames:
                dirs.append(_rel(rel_dir, d))
            for name in sorted(filenames):
                if _skipped(name) or (rel_dir == "." and name in exclude):
                    continue
                path = Path(dirpath) / name
                try:
                    st = path.lstat()
                    if not path.is_file() or path.is_symlink():
                        continue
                    data = path.read_bytes() if st.st_size <= IN_MEMORY_LIMIT_BYTES else None
                except OSError:
                    continue  # vanished while we looked (a running job's temp file)
                rel = _rel(rel_dir, name)
                entries[rel] = Entry(rel, path, data, st.st_mtime, length=None if data is not None else st.st_size)
        return cls(root, entries, dirs)

    def get(self, rel: str) -> Optional[Entry]:
        """The entry of a relative path, or None."""
        return self.entries.get(rel)

    def read(self, rel: str) -> Optional[bytes]:
        """Content of a relative path, or None when the file is not in the snapshot."""
        entry = self.entries.get(rel)
        return entry.read() if entry is not None else None

    def under(self, prefix: str) -> List[Entry]:
        """Entries whose path starts with `prefix/`."""
        prefix = prefix.rstrip("/") + "/"
        return [e for rel, e in sorted(self.entries.items()) if rel.startswith(prefix)]

    def total_bytes(self) -> int:
        """Sum of the recorded sizes."""
        return sum(e.size for e in self.entries.values())


def _rel(rel_dir: str, name: str) -> str:
    return name if rel_dir == "." else "%s/%s" % (rel_dir.replace(os.sep, "/"), name)


def manifest_line(sha256: str, rel: str) -> str:
    """One `sha256sum` line; names with a backslash or newline use GNU's escaped form."""
    if "\\" in rel or "\n" in rel:
        return "\\%s  %s\n" % (sha256, rel.replace("\\", "\\\\").replace("\n", "\\n"))
    return "%s  %s\n" % (sha256, rel)


def manifest_text(items: Iterable[Tuple[str, str]]) -> str:
    """The manifest for (relative path, sha256) pairs, sorted by path."""
    return "".join(manifest_line(sha, rel) for rel, sha in sorted(items))


def parse_manifest(text: str) -> Dict[str, str]:
    """Relative path -> sha256 from a manifest written by manifest_text."""
    out = {}
    for line in text.splitlines():
        if not line:
            continue
        escaped = line.startswith("\\")
        if escaped:
            line = line[1:]
        sha, rel = line[:64], line[66:]
        if escaped:
            rel = rel.replace("\\n", "\n").replace("\\\\", "\\")
        out[rel] = sha
    return out


class _ChunkReader(io.RawIOBase):
    """A file-like view of an entry's recorded content (tarfile reads exactly `size` bytes of it)."""

    def __init__(self, entry: Entry, stop: Optional[threading.Event] = None):
        super().__init__()
        self._stop = stop
        self._chunks = entry.chunks()
        self._buf, self._pos = b"", 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            out = self._buf[self._pos :] + b"".join(self._chunks)
            self._buf, self._pos = b"", 0
            return out
        if self._stop is not None and self._stop.is_set():
            raise _Stopped()
        parts, want = [], n
        while want > 0:
            if self._pos >= len(self._buf):
                self._buf, self._pos = next(self._chunks, b""), 0
                if not self._buf:
                    break
            part = self._buf[self._pos : self._pos + want]
            self._pos += len(part)
            want -= len(part)
            parts.append(part)
        return b"".join(parts)


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, top: str, entry: Entry, stop: Optional[threading.Event] = None) -> None:
    info = tarfile.TarInfo("%s/%s" % (top, entry.rel))
    info.mode = 0o644
    info.mtime = int(entry.mtime or time.time())
    if entry.data is not None:
        info.size = len(entry.data)
        tar.addfile(info, io.BytesIO(entry.data))
    else:
        info.size = entry.size
        tar.addfile(info, _ChunkReader(entry, stop))


class _Stopped(Exception):
    """The archive's head was cancelled (the export stopped)."""


class ArchiveHead(threading.Thread):
    """The archive's first part, the session's folders and files, written in a thread to a gzip member while the
    export folds (file reads and zlib run without the interpreter lock); write_archive appends the rest to it.

    `extend` queues more folders and finished files for the same part (the export's large files, while the
    export waits for its pictures); their SHA-256 is taken there too. write_archive closes the queue."""

    def __init__(self, folder: Path, top: str, entries: Sequence[Entry], dirs: Sequence[str] = ()):
        super().__init__(name="export-archive", daemon=True)
        fd, tmp = tempfile.mkstemp(prefix=".archive-head.", suffix=".tmp", dir=str(folder))
        os.close(fd)
        self.path = Path(tmp)
        self.top, self.entries, self.dirs = top, list(entries), list(dirs)
        self.error: Optional[BaseException] = None
        self.stop = threading.Event()
        self.more: queue.Queue[Optional[Tuple[List[str], List[Entry]]]] = queue.Queue()
        self.start()

    def extend(self, dirs: Sequence[str], entries: Sequence[Entry]) -> None:
        """Add these folders, then these files (left as they are from now on), after what is queued already."""
        self.more.put((list(dirs), list(entries)))

    def finish(self) -> None:
        """Nothing more will be queued: the part ends once what is queued is written."""
        self.more.put(None)

    def run(self) -> None:
        try:
            with open(str(self.path), "wb") as raw:
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as gz:
                    # tarfile copies 16 KB at a time by default: each copy takes the interpreter lock back from the fold
                    tar = tarfile.TarFile(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT, copybufsize=BLOCK)
                    _add_dir(tar, self.top)
                    for rel in self.dirs:
                        _add_dir(tar, "%s/%s" % (self.top, rel))
                    for entry in self.entries:
                        _add_file(tar, self.top, entry, self.stop)
                    while True:
                        more = self.more.get()
                        if more is None or self.stop.is_set():
                            break
                        for rel in more[0]:
                            _add_dir(tar, "%s/%s" % (self.top, rel))
                        for entry in more[1]:
                            _add_file(tar, self.top, entry, self.stop)
                            entry.sha256  # noqa: B018  (kept by the entry: the manifest reads it)
                    # not closed: the end-of-archive blocks come after the rest, in write_archive's member
        except BaseException as exc:  # raised where the archive is finished (a full disk says so there)
            self.error = exc

    def cancel(self) -> None:
        """Stop (the export ended without sealing) and remove the file."""
        self.stop.set()
        self.finish()
        self.join()
        if self.path.exists():
            os.unlink(str(self.path))


def write_archive(
    path: Path, top: str, entries: Sequence[Entry], dirs: Sequence[str] = (), head: Optional[ArchiveHead] = None
) -> Path:
    """Write `top/<rel>` for every entry into a gzip tar, atomically (temp file + rename).

    With `head` the archive starts with what it wrote (its folders and files, then these): its gzip member is
    followed by a second one, which gzip, tar and Python read as one stream.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=str(path.parent))
    os.close(fd)
    try:
        # gzip level 1, not tarfile's 9 (nor the default 6): compressing long event files was the largest single
        # cost of an export after the fold; level 1 takes half the time of 6 for an archive about a fifth larger
        if head is not None:
            head.finish()
            head.join()
            if head.error is not None:
                raise head.error
            os.replace(str(head.path), tmp)
        with open(tmp, "wb" if head is None else "ab") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as gz:
                with tarfile.TarFile(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT, copybufsize=BLOCK) as tar:
                    if head is None:
                        _add_dir(tar, top)
                    for rel in dirs:
                        _add_dir(tar, "%s/%s" % (top, rel))
                    for entry in entries:
                        _add_file(tar, top, entry)
        # The archive ends up on disk in one piece or not at all.
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, str(path))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_manifest(path: Path, entries: Iterable[Entry]) -> Path:
    """Write manifest.sha256 for these entries, atomically."""
    return write_text(path, manifest_text((e.rel, e.sha256) for e in entries))
