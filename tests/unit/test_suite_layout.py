"""The test suite's own layout: shared helpers live in tests/support, and no test module imports another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _imported_test_modules(path: Path) -> list:
    """The `tests.*` modules a file imports, other than tests.support."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + ["%s.%s" % (node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("tests.") and not name.startswith("tests.support"):
                found.append(name)
    return sorted(set(found))


def _suite_files() -> list:
    """Test modules, conftest files and the support modules (fixture recorder scripts are programs, not the suite)."""
    found = [p for p in TESTS.rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"]
    return sorted(found + list((TESTS / "support").glob("*.py")))


def test_no_test_module_imports_another_or_a_conftest():
    assert len(_suite_files()) > 100
    offenders = {
        str(p.relative_to(TESTS)): _imported_test_modules(p) for p in _suite_files() if _imported_test_modules(p)
    }
    assert offenders == {}, "import shared helpers from tests/support instead: %s" % offenders


def test_the_layout_check_sees_an_import_of_a_test_module(tmp_path):
    """The check above would catch the imports it forbids (it is not vacuous)."""
    bad = tmp_path / "test_x.py"
    bad.write_text("from tests.ui.test_screen_states import KEYS\nfrom tests.support.pilot import until\n")
    assert _imported_test_modules(bad) == ["tests.ui.test_screen_states", "tests.ui.test_screen_states.KEYS"]


def test_support_modules_are_not_collected_as_tests():
    assert not [p.name for p in (TESTS / "support").glob("test_*.py")]
