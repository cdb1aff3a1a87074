"""The TUI keys the acceptance hints name are the keys the named screens bind (the hints are copied facts)."""

from __future__ import annotations

import re

from screens.alignment import AlignmentScreen
from screens.base import NAV_BINDINGS
from screens.data import DataScreen
from screens.environment import EnvironmentScreen
from screens.export import ExportScreen
from screens.session import SessionScreen
from screens.training import TrainingScreen
from workbench.acceptance.how import _HOW

SCREENS = {
    "Environment": EnvironmentScreen,
    "Data": DataScreen,
    "Training": TrainingScreen,
    "Alignment": AlignmentScreen,
    "Export": ExportScreen,
    "Session": SessionScreen,
}
HINT = re.compile(r"^(\S+) on the (\w+) screen$")


def bound_keys(screen) -> set:
    """Every key a screen binds, its own and the navigation keys (a Binding's key may list several: 'r,ctrl+s')."""
    keys = set()
    for binding in list(screen.BINDINGS) + NAV_BINDINGS:
        key = binding.key if hasattr(binding, "key") else binding[0]
        keys.update(k.strip() for k in key.split(","))
    return keys


def hints() -> list:
    """(check, key, screen name) of every hint that names a TUI key."""
    found = []
    for check, (_, _, where) in _HOW.items():
        match = HINT.match(where)
        if match:
            found.append((check, match.group(1), match.group(2)))
    return found


def test_every_hint_names_a_screen_and_a_key():
    assert len(hints()) == len([w for _, _, w in _HOW.values() if w]) > 5  # every key given names its screen
    assert {screen for _, _, screen in hints()} <= set(SCREENS)


def test_every_key_a_hint_names_is_bound_on_that_screen():
    unbound = [(check, key, screen) for check, key, screen in hints() if key not in bound_keys(SCREENS[screen])]
    assert unbound == [], "hints name keys their screen does not bind"


def test_the_key_check_would_see_a_key_no_screen_binds():
    assert "z" not in bound_keys(TrainingScreen) and "s" in bound_keys(TrainingScreen)
