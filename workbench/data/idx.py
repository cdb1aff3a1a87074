"""Read IDX files (raw or gzip) and check their header against what the caller expects."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from workbench.data.errors import DataError

GZIP_MAGIC = b"\x1f\x8b"

# Magic numbers of unsigned-byte IDX files: 0x00 0x00 0x08 <ndim>.
KNOWN_MAGICS = {
    2049: "an IDX label file (ubyte, 1 dimension)",
    2051: "an IDX image file (ubyte, 3 dimensions)",
}


def read_content(path: Path, expect_gzip: Optional[bool] = None) -> Tuple[bytes, bool, int]:
    """Return (uncompressed bytes, was_gzip, bytes_on_disk) of a raw or gzipped file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, "file is missing", "the file to exist") from None
    except OSError as exc:
        raise DataError(path, f"cannot be read: {exc.strerror or exc}") from None
    if expect_gzip is None:
        # A name ending in .gz is a promise of gzip data; other names may hold either.
        expect_gzip = True if path.name.endswith(".gz") else None
    compressed = raw[:2] == GZIP_MAGIC
    if expect_gzip and not compressed:
        raise DataError(
            path,
            f"corrupt gzip: not gzip data (first bytes {raw[:4].hex() or 'none, file is empty'})",
            "a gzip stream starting with 1f8b",
        )
    content = gunzip(raw, path) if compressed else raw
    return content, compressed, len(raw)


def gunzip(raw: bytes, path: Path) -> bytes:
    """Decompress every gzip member of `raw`; CRC and length trailers are checked by zlib."""
    parts = []
    rest = raw
    while True:
        stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            parts.append(stream.decompress(rest))
            parts.append(stream.flush())
        except zlib.error as exc:
            raise DataError(path, f"corrupt gzip: {exc}", "a valid gzip stream") from None
        if not stream.eof:
            raise DataError(
                path,
                f"corrupt gzip: the stream ends early after {len(raw)} bytes (file truncated?)",
                "a complete gzip stream",
            )
        rest = stream.unused_data
        # gzip(1) accepts trailing zero padding and concatenated members; so do we.
        if not rest or not rest.strip(b"\0"):
            break
        if rest[:2] != GZIP_MAGIC:
            raise DataError(
                path,
                f"corrupt gzip: {len(rest)} bytes of trailing data after the gzip stream",
                "nothing after the gzip stream",
            )
    return b"".join(parts)


def parse_idx(
    content: bytes,
    path: Path,
    magic: int,
    item_shape: Tuple[int, ...],
    count: Optional[int],
) -> np.ndarray:
    """Check an unsigned-byte IDX header and return a read-only uint8 view [count, *item_shape]."""
    ndim = 1 + len(item_shape)
    header_bytes = 4 + 4 * ndim
    where = "uncompressed content" if path.name.endswith(".gz") else "file"
    if len(content) < header_bytes:
        raise DataError(
            path,
            f"truncated: {where} is {len(content)} bytes, shorter than the IDX header",
            f"at least {header_bytes} bytes",
        )
    found_magic = int.from_bytes(content[:4], "big")
    if found_magic != magic:
        what = KNOWN_MAGICS.get(found_magic, "not a known IDX ubyte magic")
        raise DataError(
            path,
            f"wrong magic number {found_magic} (0x{found_magic:08x}, {what})",
            f"{magic} (0x{magic:08x}, {KNOWN_MAGICS.get(magic, 'IDX')})",
        )
    dims = struct.unpack(f">{ndim}I", content[4:header_bytes])
    if tuple(dims[1:]) != tuple(item_shape):
        raise DataError(
            path,
            f"wrong item dimensions {_shape_text(dims[1:])} in the header",
            _shape_text(item_shape),
        )
    if count is not None and dims[0] != count:
        raise DataError(path, f"wrong count: header says {dims[0]} items", f"exactly {count}")
    data_bytes = int(np.prod(dims, dtype=np.int64))
    found_bytes = len(content) - header_bytes
    if found_bytes < data_bytes:
        raise DataError(
            path,
            f"truncated: {where} holds {found_bytes} data bytes after the header, the header promises {data_bytes}",
            f"{header_bytes + data_bytes} bytes in total",
        )
    if found_bytes > data_bytes:
        raise DataError(
            path,
            f"{found_bytes - data_bytes} unexpected bytes after the data",
            f"{header_bytes + data_bytes} bytes in total",
        )
    array = np.frombuffer(content, dtype=np.uint8, count=data_bytes, offset=header_bytes)
    return array.reshape(dims)


def _shape_text(shape) -> str:
    return "×".join(str(d) for d in shape) if len(shape) else "scalar"
