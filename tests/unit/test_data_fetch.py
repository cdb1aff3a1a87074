"""fetch: download, verify with the loader's checks, rename into place only when all are good.
The network is not reachable here, so the official files are served from a file:// URL."""

from __future__ import annotations

import os

import pytest

from workbench.data.errors import DataError
from workbench.data.fetch import OFFICIAL_URL_BASE, fetch
from workbench.data.loader import load_fashion_mnist
from workbench.data.locate import BUNDLED_DIR
from workbench.data.official import OFFICIAL_FILES

NAMES = [spec.name + ".gz" for spec in OFFICIAL_FILES]


def test_official_url_base_is_zalandos_download_location():
    assert OFFICIAL_URL_BASE == "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"


def test_fetch_from_file_url_verifies_and_renames(tmp_path):
    calls = []
    dest = tmp_path / "cache"
    paths = fetch(dest, progress=lambda *a: calls.append(a), url_base=BUNDLED_DIR.as_uri())
    assert paths == [dest / name for name in NAMES]
    assert sorted(os.listdir(dest)) == sorted(NAMES)  # no .part files left behind
    for name in NAMES:
        assert (dest / name).read_bytes() == (BUNDLED_DIR / name).read_bytes()
    # progress: starts at 0 and ends at the full size, for every file
    for spec, name in zip(OFFICIAL_FILES, NAMES):
        mine = [c for c in calls if c[0] == name]
        assert mine[0] == (name, 0, spec.gz_bytes) and mine[-1] == (name, spec.gz_bytes, spec.gz_bytes)
    ds = load_fashion_mnist(dest)
    assert ds.dir == dest and ds.train_labels[:3].tolist() == [9, 0, 0]


def test_damaged_download_renames_nothing(tmp_path):
    source = tmp_path / "mirror"
    source.mkdir()
    for name in NAMES:
        os.symlink(BUNDLED_DIR / name, source / name)
    bad = "train-labels-idx1-ubyte.gz"
    (source / bad).unlink()
    (source / bad).write_bytes((BUNDLED_DIR / bad).read_bytes()[:-50])
    dest = tmp_path / "cache"
    with pytest.raises(DataError) as info:
        fetch(dest, url_base=source.as_uri() + "/")
    message = str(info.value)
    assert (source / bad).as_uri() in message and "verification" in message and "corrupt gzip" in message
    assert os.listdir(dest) == []  # the good train-images download was not moved in either


def test_missing_remote_file_names_the_url(tmp_path):
    source = tmp_path / "empty-mirror"
    source.mkdir()
    with pytest.raises(DataError) as info:
        fetch(tmp_path / "cache", url_base=source.as_uri())
    assert (source / NAMES[0]).as_uri() in str(info.value) and "download failed" in str(info.value)
    assert os.listdir(tmp_path / "cache") == []
