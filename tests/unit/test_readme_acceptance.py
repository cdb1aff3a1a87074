"""README's acceptance defaults table says what the config schema's defaults are, key by key."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.config.layers import defaults

README = Path(__file__).resolve().parents[2] / "README.md"


def _shown(value) -> str:
    """A default as the README writes it: lists comma-separated, null, {} and numbers as typed."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    if isinstance(value, float) and value < 1e-3 and value:
        return "%g" % value
    if isinstance(value, float):
        return "%.2f" % value if value % 1 else "%d" % value
    return str(value)


def readme_defaults() -> dict:
    """key -> default text of every row of the table under '## Acceptance' (a 'k_mlp / _cnn' row gives two)."""
    section = README.read_text(encoding="utf-8").split("## Acceptance", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        found = re.match(r"^\| `([a-z0-9_]+)`(?: / `(_[a-z]+)`)? \| ([^|]+) \|", line)
        if not found:
            continue
        key, alt, default = found.group(1), found.group(2), found.group(3).strip()
        if alt:
            first, second = [d.strip() for d in default.split(" / ")]
            out[key] = first
            out[key.rsplit("_", 1)[0] + alt] = second
        else:
            out[key] = default
    return out


def test_every_acceptance_default_in_the_readme_is_the_schema_s():
    schema = defaults()["acceptance"]
    shown = readme_defaults()
    assert set(shown) == set(schema), "README table keys vs schema keys: %s" % (set(shown) ^ set(schema))
    for key, value in schema.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert float(shown[key]) == float(value), "%s: README says %r, the schema's default is %r" % (
                key,
                shown[key],
                value,
            )
            continue
        assert shown[key] == _shown(value), "%s: README says %r, the schema's default is %r" % (key, shown[key], value)
