"""Where the data is looked for, in which order, and what the error lists when it is nowhere."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from workbench.data.errors import DataError, DataNotFound
from workbench.data.locate import BUNDLED_DIR, SYSTEM_DIR, candidate_dirs, locate
from workbench.data.official import OFFICIAL_FILES

# By module path: the package re-exports a function of the same name.
locate_module = importlib.import_module("workbench.data.locate")
REPO = Path(__file__).resolve().parents[2]


def link_official(directory: Path, skip=()) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for spec in OFFICIAL_FILES:
        if spec.name not in skip:
            os.symlink(BUNDLED_DIR / (spec.name + ".gz"), directory / (spec.name + ".gz"))


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """A world where no default location holds the data: empty cwd, bundled, system, home."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(locate_module, "BUNDLED_DIR", tmp_path / "bundled")
    monkeypatch.setattr(locate_module, "SYSTEM_DIR", tmp_path / "system")
    return tmp_path


def test_bundled_dir_is_the_repo_copy():
    assert BUNDLED_DIR == REPO / "data" / "fashion-mnist"
    assert SYSTEM_DIR == Path("/usr/share/datasets/fashion-mnist")


def test_search_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    places = candidate_dirs(tmp_path / "configured")
    assert places == [
        tmp_path / "configured",
        tmp_path / "data" / "fashion-mnist",
        BUNDLED_DIR,
        SYSTEM_DIR,
        tmp_path / "home" / ".cache" / "ms-workbench" / "fashion-mnist",
    ]


def test_cwd_copy_and_bundled_copy_listed_once_from_repo_root(monkeypatch):
    monkeypatch.chdir(REPO)
    places = candidate_dirs()
    assert places.count(REPO / "data" / "fashion-mnist") == 1
    assert places[0] == REPO / "data" / "fashion-mnist"


def test_configured_dir_wins(tmp_path):
    link_official(tmp_path / "mine")
    found, tried = locate(tmp_path / "mine")
    assert found == tmp_path / "mine" and tried == [tmp_path / "mine"]


def test_raw_and_gz_names_both_count(tmp_path):
    link_official(tmp_path / "mixed", skip={"train-labels-idx1-ubyte"})
    (tmp_path / "mixed" / "train-labels-idx1-ubyte").write_bytes(b"raw, checked later by the loader")
    assert locate(tmp_path / "mixed")[0] == tmp_path / "mixed"


def test_absent_configured_dir_falls_through_and_is_reported(nowhere, monkeypatch):
    link_official(nowhere / "bundled")
    found, tried = locate(nowhere / "typo")
    assert found == nowhere / "bundled"
    assert tried == [nowhere / "typo", nowhere / "data" / "fashion-mnist", nowhere / "bundled"]


def test_cache_is_the_last_resort(nowhere):
    cache = nowhere / "home" / ".cache" / "ms-workbench" / "fashion-mnist"
    link_official(cache)
    found, tried = locate()
    assert found == cache and len(tried) == 4


def test_incomplete_copy_is_an_error_naming_the_missing_file(nowhere):
    link_official(nowhere / "bundled")
    link_official(nowhere / "partial", skip={"t10k-images-idx3-ubyte"})
    with pytest.raises(DataError) as info:
        locate(nowhere / "partial")
    assert str(nowhere / "partial" / "t10k-images-idx3-ubyte") in str(info.value)


def test_not_found_lists_every_place_tried(nowhere):
    (nowhere / "empty").mkdir()
    with pytest.raises(DataNotFound) as info:
        locate(nowhere / "empty")
    expected = [
        nowhere / "empty",
        nowhere / "data" / "fashion-mnist",
        nowhere / "bundled",
        nowhere / "system",
        nowhere / "home" / ".cache" / "ms-workbench" / "fashion-mnist",
    ]
    assert info.value.tried == expected
    message = str(info.value)
    for place in expected:
        assert str(place) in message
    assert "holds none of the four files" in message and "does not exist" in message


def imported_modules(path: Path) -> set:
    """Every module a source file imports, function-local imports included."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_official_does_not_import_locate():
    # One way: locate reads official's file list; loading (locate + read) lives in workbench.data.loader.
    import workbench.data.official as official

    assert not imported_modules(Path(official.__file__)) & {
        "workbench.data.locate",
        "workbench.data.loader",
        "workbench.data",
    }
