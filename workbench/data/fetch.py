"""Download the four official files, verify them like the loader does, then move them in place."""

from __future__ import annotations

import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Dict, List, Optional, Protocol, TextIO, Tuple, Union

from workbench.data.errors import DataError
from workbench.data.official import OFFICIAL_FILES, OfficialFile, read_official_file

# Download location given in the README of github.com/zalandoresearch/fashion-mnist.
OFFICIAL_URL_BASE = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
CHUNK_BYTES = 1 << 20

ProgressFn = Callable[[str, int, Optional[int]], None]


def fetch(
    dest_dir: Union[str, Path],
    progress: Optional[ProgressFn] = None,
    url_base: str = OFFICIAL_URL_BASE,
    timeout_s: float = 60.0,
) -> List[Path]:
    """Fetch all four .gz files into dest_dir; nothing is renamed into place unless all verify.

    progress(name, done_bytes, total_bytes) is called as bytes arrive; total_bytes is the
    server's Content-Length, else the official size.
    """
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    staged: List[Tuple[Path, Path]] = []
    try:
        for spec in OFFICIAL_FILES:
            name = spec.name + ".gz"
            url = url_base.rstrip("/") + "/" + name
            tmp = _download(url, dest, name, spec, progress, timeout_s)
            staged.append((tmp, dest / name))
            try:
                read_official_file(tmp, spec, verify=True, expect_gzip=True)
            except DataError as exc:
                raise DataError(url, f"download failed verification: {exc.problem}", exc.expected) from None
        for tmp, final in staged:
            os.replace(tmp, final)
        _fsync_dir(dest)
        return [final for _tmp, final in staged]
    finally:
        for tmp, _final in staged:
            if tmp.exists():
                tmp.unlink()


def _download(
    url: str,
    dest: Path,
    name: str,
    spec: OfficialFile,
    progress: Optional[ProgressFn],
    timeout_s: float,
) -> Path:
    fd, tmp_name = tempfile.mkstemp(prefix="." + name + ".", suffix=".part", dir=str(dest))
    tmp = Path(tmp_name)
    done_bytes = 0
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout_s) as response:
            length = response.headers.get("Content-Length")
            total_bytes = int(length) if length else spec.gz_bytes
            if progress:
                progress(name, 0, total_bytes)
            while True:
                chunk = response.read(CHUNK_BYTES)
                if not chunk:
                    break
                out.write(chunk)
                done_bytes += len(chunk)
                if progress:
                    progress(name, done_bytes, total_bytes)
            out.flush()
            os.fsync(out.fileno())
        if length and done_bytes != int(length):
            raise DataError(url, f"truncated download: received {done_bytes} bytes", f"{length} bytes")
        return tmp
    except BaseException as exc:
        if tmp.exists():
            tmp.unlink()
        if isinstance(exc, (urllib.error.URLError, OSError)) and not isinstance(exc, DataError):
            reason = getattr(exc, "reason", None) or exc
            raise DataError(url, f"download failed: {reason}", "the official file") from None
        raise


def _fsync_dir(directory: Path) -> None:
    # Make the renames themselves durable; not every platform can open a directory.
    try:
        fd = os.open(str(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FetchDisplay(Protocol):
    """Shows a download's progress: update() is fetch()'s progress callback, stop() ends the display."""

    def update(self, name: str, done_bytes: int, total_bytes: Optional[int]) -> None:
        """Progress callback of fetch()."""

    def stop(self) -> None:
        """End the display."""


class PlainDisplay:
    """One line when a file starts, at each quarter, and when it is complete."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.quarter: Dict[str, int] = {}

    def update(self, name: str, done_bytes: int, total_bytes: Optional[int]) -> None:
        """Progress callback of fetch()."""
        if name not in self.quarter:
            self.quarter[name] = 0
            self.stream.write("  %s: downloading %s bytes\n" % (name, total_bytes if total_bytes else "?"))
        elif total_bytes:
            quarter = min(4, done_bytes * 4 // total_bytes)
            if quarter > self.quarter[name]:
                self.quarter[name] = quarter
                self.stream.write("  %s: %d%% (%d of %d bytes)\n" % (name, quarter * 25, done_bytes, total_bytes))
        self.stream.flush()

    def stop(self) -> None:
        """Nothing to tear down."""


def fetch_cli(
    dest: Union[str, Path],
    url_base: str = OFFICIAL_URL_BASE,
    stream: Optional[TextIO] = None,
    err_stream: Optional[TextIO] = None,
    make_display: Optional[Callable[[TextIO], FetchDisplay]] = None,
) -> int:
    """`ms-workbench data fetch`: download and verify into dest; 0 when all four verify, else 1.

    make_display(stream) shows the progress: plain lines by default (the CLI gives a live bar at a terminal).
    """
    stream = stream or sys.stdout
    err_stream = err_stream or sys.stderr
    dest = Path(dest).expanduser()
    stream.write("fetching the official Fashion-MNIST files from %s into %s\n" % (url_base, dest))
    stream.flush()
    display = (make_display or PlainDisplay)(stream)
    try:
        paths = fetch(dest, progress=display.update, url_base=url_base)
    except DataError as exc:
        display.stop()
        err_stream.write("error: %s\n" % exc)
        err_stream.write(
            "hint: this needs a network that reaches %s. Without one, copy the four official files "
            "(raw or .gz) into data/fashion-mnist in the repository, into %s, or into a folder "
            "named by the config key data.dir.\n" % (url_base, dest)
        )
        err_stream.flush()
        return 1
    display.stop()
    for path in paths:
        stream.write(
            "verified %s (%d bytes; SHA-256 of the content matches the official file)\n" % (path, path.stat().st_size)
        )
    stream.write("done: %d files in %s\n" % (len(paths), dest))
    stream.flush()
    return 0
