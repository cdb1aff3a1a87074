"""`compare --out` onto something that is not a folder it may write: refused or reported, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.sessions import set_interpreter

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "compare"
SID = "20261201-141656-3875"


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(str(FIXTURE / SID), str(root / SID))
    set_interpreter(root / SID)
    return root


def _compare(root: Path, out: Path):
    return run_cli("compare", "%s/train-001" % SID, "%s/train-002" % SID, "--sessions", root, "--out", out)


def test_compare_out_onto_an_existing_file_is_refused_and_the_file_kept(tmp_path):
    root, out = _root(tmp_path), tmp_path / "notes.txt"
    out.write_text("mine\n")
    proc = _compare(root, out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2 and "--out %s exists and is not a folder" % out in proc.stderr, proc.stderr
    assert "nothing written" in proc.stderr and out.read_text() == "mine\n"


def test_compare_out_into_an_existing_folder_replaces_its_three_files_whole(tmp_path):
    root, out = _root(tmp_path), tmp_path / "cmp"
    out.mkdir()
    (out / "compare.md").write_text("an older comparison\n")
    (out / "keep.txt").write_text("mine\n")
    proc = _compare(root, out)
    assert proc.returncode == 1, proc.stderr  # observed-fail with the default tolerances
    assert "train.lr" in (out / "compare.md").read_text() and (out / "keep.txt").read_text() == "mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["compare.json", "compare.md", "keep.txt", "loss.svg"]


def test_compare_out_where_a_file_cannot_go_exits_1_naming_it(tmp_path):
    root, out = _root(tmp_path), tmp_path / "cmp"
    (out / "compare.json").mkdir(parents=True)  # a folder where compare.json must go
    proc = _compare(root, out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1 and "error: compare could not write %s" % (out / "compare.json") in proc.stderr
