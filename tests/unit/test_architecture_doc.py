"""docs/ARCHITECTURE.md names only files and folders that exist, and stays a page (at most 150 lines)."""

from __future__ import annotations

import re

from tests.support.cli import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "ARCHITECTURE.md"
PATH = re.compile(r"`((?:workbench|jobs|screens|tests|docs|bench)/[\w/.]*)`")


def test_every_path_the_page_names_exists():
    named = sorted(set(PATH.findall(DOC.read_text(encoding="utf-8"))))
    assert len(named) > 20
    assert [p for p in named if not (PROJECT_ROOT / p).exists()] == []


def test_the_page_stays_short():
    assert len(DOC.read_text(encoding="utf-8").splitlines()) <= 150
