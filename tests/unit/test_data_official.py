"""Loading the official Fashion-MNIST files: the real bundled copy, raw and re-gzipped copies,
and every kind of damage the loader must reject with a message naming the file."""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.support.ascend_fakes import shared_dir
from workbench.data.dataset import CLASS_NAMES, scale
from workbench.data.errors import DataError
from workbench.data.loader import load_fashion_mnist
from workbench.data.locate import BUNDLED_DIR
from workbench.data.official import OFFICIAL_BY_KEY, OFFICIAL_FILES, read_official_file

TEST_LABELS = OFFICIAL_BY_KEY["test_labels"]
TEST_IMAGES = OFFICIAL_BY_KEY["test_images"]


@pytest.fixture(scope="module")
def real():
    """The bundled official files, loaded and verified once for this module."""
    return load_fashion_mnist(BUNDLED_DIR, verify=True)


@pytest.fixture(scope="module")
def contents():
    """Uncompressed content of each official file, keyed by base name."""
    return {spec.name: gzip.decompress((BUNDLED_DIR / (spec.name + ".gz")).read_bytes()) for spec in OFFICIAL_FILES}


def link_official(directory: Path, skip=()) -> None:
    """Put the bundled official .gz files into `directory` as symlinks (cheap, byte-identical)."""
    directory.mkdir(parents=True, exist_ok=True)
    for spec in OFFICIAL_FILES:
        if spec.name not in skip:
            os.symlink(BUNDLED_DIR / (spec.name + ".gz"), directory / (spec.name + ".gz"))


def assert_rejected(path: Path, spec, *words: str) -> str:
    """read_official_file must raise DataError naming `path` and containing `words`."""
    with pytest.raises(DataError) as info:
        read_official_file(path, spec)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message, message
    return message


# --- the real data ---------------------------------------------------------------------------


def test_bundled_files_load_with_official_counts_and_labels(real):
    assert real.train_images.shape == (60000, 28, 28) and real.train_images.dtype == np.uint8
    assert real.test_images.shape == (10000, 28, 28) and real.test_images.dtype == np.uint8
    assert real.train_labels.shape == (60000,) and real.train_labels.dtype == np.int32
    assert real.test_labels.shape == (10000,)
    assert real.train_labels[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert real.test_labels[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
    assert np.bincount(real.train_labels).tolist() == [6000] * 10
    assert np.bincount(real.test_labels).tolist() == [1000] * 10
    assert real.synthetic is False and real.verified is True


def test_file_records_carry_official_hashes(real):
    assert [f["name"] for f in real.files] == [s.name + ".gz" for s in OFFICIAL_FILES]
    for record, spec in zip(real.files, OFFICIAL_FILES):
        assert record["sha256"] == spec.content_sha256
        assert record["bytes"] == spec.gz_bytes == os.path.getsize(record["path"])
        assert record["compressed"] is True
    assert real.dir == BUNDLED_DIR


def test_bundled_copy_is_byte_identical_to_shared_source():
    shared = shared_dir() / "data" / "fashion-mnist"
    if not shared.is_dir():
        pytest.skip("no shared/data/fashion-mnist at %s (set MSWB_SHARED)" % shared)
    for name in sorted(p.name for p in shared.iterdir()):
        assert (BUNDLED_DIR / name).read_bytes() == (shared / name).read_bytes(), name


def test_scale_gives_float32_nchw_in_unit_range_with_known_statistics(real):
    x = scale(real.train_images)
    assert x.shape == (60000, 1, 28, 28) and x.dtype == np.float32
    assert x.min() == 0.0 and x.max() == 1.0
    assert abs(float(x.mean(dtype=np.float64)) - 0.286041) < 1e-5
    assert abs(float(x.std(dtype=np.float64)) - 0.353024) < 1e-5
    assert x[0, 0, 14, 14] == np.float32(real.train_images[0, 14, 14]) / np.float32(255)


def test_scale_rejects_wrong_dtype_and_shape():
    with pytest.raises(ValueError, match="uint8"):
        scale(np.zeros((2, 28, 28), np.float32))
    with pytest.raises(ValueError, match=r"\[N, 28, 28\]"):
        scale(np.zeros((2, 1, 28, 28), np.uint8))


def test_class_names_in_official_order():
    assert CLASS_NAMES == (
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    )


def test_raw_uncompressed_files_load(tmp_path, contents, real):
    for name, content in contents.items():
        (tmp_path / name).write_bytes(content)
    ds = load_fashion_mnist(tmp_path)
    assert ds.dir == tmp_path
    assert [f["compressed"] for f in ds.files] == [False] * 4
    assert [f["bytes"] for f in ds.files] == [len(contents[s.name]) for s in OFFICIAL_FILES]
    assert np.array_equal(ds.train_images, real.train_images)
    assert np.array_equal(ds.test_labels, real.test_labels)


def test_regzipped_copy_like_debian_is_accepted(tmp_path, contents, real):
    for spec in OFFICIAL_FILES:
        data = gzip.compress(contents[spec.name], compresslevel=1, mtime=1234567890)
        official = (BUNDLED_DIR / (spec.name + ".gz")).read_bytes()
        assert data != official  # really a different .gz
        (tmp_path / (spec.name + ".gz")).write_bytes(data)
    ds = load_fashion_mnist(tmp_path)
    assert [f["sha256"] for f in ds.files] == [f["sha256"] for f in real.files]
    assert [f["bytes"] for f in ds.files] != [f["bytes"] for f in real.files]
    assert np.array_equal(ds.train_labels, real.train_labels)


def test_verify_false_skips_only_the_hash(tmp_path, contents):
    link_official(tmp_path, skip={TEST_LABELS.name})
    labels = bytearray(contents[TEST_LABELS.name])
    labels[8], labels[9] = labels[9], labels[8]  # valid labels, different content
    (tmp_path / TEST_LABELS.name).write_bytes(bytes(labels))
    ds = load_fashion_mnist(tmp_path, verify=False)
    assert ds.verified is False and all(f["sha256"] is None for f in ds.files)
    with pytest.raises(DataError, match="wrong hash"):
        load_fashion_mnist(tmp_path, verify=True)


# --- damage the loader must reject -----------------------------------------------------------


def test_missing_file(tmp_path):
    assert_rejected(tmp_path / TEST_LABELS.name, TEST_LABELS, "file is missing")


def test_missing_file_in_data_dir_is_an_error_not_a_fallback(tmp_path):
    link_official(tmp_path, skip={TEST_LABELS.name})
    with pytest.raises(DataError) as info:
        load_fashion_mnist(tmp_path)
    assert str(tmp_path / TEST_LABELS.name) in str(info.value)
    assert "missing" in str(info.value)


def test_truncated_raw_file(tmp_path, contents):
    path = tmp_path / TEST_LABELS.name
    path.write_bytes(contents[TEST_LABELS.name][:-10])
    assert_rejected(path, TEST_LABELS, "truncated", "9990 data bytes", "10008 bytes")


def test_truncated_header(tmp_path, contents):
    path = tmp_path / TEST_IMAGES.name
    path.write_bytes(contents[TEST_IMAGES.name][:9])
    assert_rejected(path, TEST_IMAGES, "truncated", "shorter than the IDX header")


def test_truncated_gzip(tmp_path):
    path = tmp_path / (TEST_LABELS.name + ".gz")
    path.write_bytes((BUNDLED_DIR / path.name).read_bytes()[:-100])
    assert_rejected(path, TEST_LABELS, "corrupt gzip", "ends early")


def test_corrupt_gzip(tmp_path):
    data = bytearray((BUNDLED_DIR / (TEST_LABELS.name + ".gz")).read_bytes())
    for i in range(2000, 2040):
        data[i] ^= 0xFF
    path = tmp_path / (TEST_LABELS.name + ".gz")
    path.write_bytes(bytes(data))
    assert_rejected(path, TEST_LABELS, "corrupt gzip")


def test_gz_name_with_raw_content(tmp_path, contents):
    path = tmp_path / (TEST_LABELS.name + ".gz")
    path.write_bytes(contents[TEST_LABELS.name])
    assert_rejected(path, TEST_LABELS, "corrupt gzip", "not gzip data", "1f8b")


def test_raw_name_with_gzip_content_is_read(tmp_path):
    path = tmp_path / TEST_LABELS.name
    path.write_bytes((BUNDLED_DIR / (TEST_LABELS.name + ".gz")).read_bytes())
    labels, record = read_official_file(path, TEST_LABELS)
    assert record["compressed"] is True and labels[:3].tolist() == [9, 2, 1]


def test_wrong_magic(tmp_path, contents):
    path = tmp_path / TEST_LABELS.name
    path.write_bytes(struct.pack(">I", 2051) + contents[TEST_LABELS.name][4:])
    assert_rejected(path, TEST_LABELS, "wrong magic number 2051", "expected 2049")


def test_wrong_item_dimensions(tmp_path):
    path = tmp_path / TEST_IMAGES.name
    path.write_bytes(struct.pack(">4I", 2051, 10000, 27, 28) + bytes(10000 * 27 * 28))
    assert_rejected(path, TEST_IMAGES, "wrong item dimensions 27×28", "28×28")


def test_wrong_count_consistent_file(tmp_path, contents):
    path = tmp_path / TEST_LABELS.name
    path.write_bytes(struct.pack(">II", 2049, 9999) + contents[TEST_LABELS.name][8:-1])
    assert_rejected(path, TEST_LABELS, "wrong count", "9999", "exactly 10000")


def test_extra_bytes_after_data(tmp_path, contents):
    path = tmp_path / TEST_LABELS.name
    path.write_bytes(contents[TEST_LABELS.name] + b"\0\0\0")
    assert_rejected(path, TEST_LABELS, "3 unexpected bytes")


def test_label_out_of_range(tmp_path, contents):
    labels = bytearray(contents[TEST_LABELS.name])
    labels[8 + 123] = 10
    path = tmp_path / TEST_LABELS.name
    path.write_bytes(bytes(labels))
    assert_rejected(path, TEST_LABELS, "label out of range", "item 123 has label 10", "0..9")


def test_wrong_hash_in_images(tmp_path, contents):
    images = bytearray(contents[TEST_IMAGES.name])
    images[16 + 400] ^= 1  # one pixel, one bit: structure is intact
    path = tmp_path / (TEST_IMAGES.name + ".gz")
    path.write_bytes(gzip.compress(bytes(images), compresslevel=1))
    assert_rejected(path, TEST_IMAGES, "wrong hash", TEST_IMAGES.content_sha256)


def test_damaged_file_stops_the_loader(tmp_path, contents):
    link_official(tmp_path, skip={TEST_LABELS.name})
    path = tmp_path / TEST_LABELS.name
    path.write_bytes(contents[TEST_LABELS.name][:-1])
    with pytest.raises(DataError) as info:
        load_fashion_mnist(tmp_path)
    assert str(path) in str(info.value) and "truncated" in str(info.value)
