"""A plain start of the TUI is parsed without the subcommands' parsers, exactly as the whole tree parses it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.cli.main import build_parser, parse_args

PLAIN = [
    [],
    ["--sessions", "s"],
    ["--sessions=s", "--low-bandwidth"],
    ["--set", "a.b=1", "--set", "c=2", "--config", "c.yaml", "--python", "/usr/bin/python3", "--sessions", "s"],
]
NOT_PLAIN = [
    ["run", "train", "--sessions", "s"],
    ["--sessions", "s", "attach", "20260101-000000-abcd"],
    ["sessions", "--json"],
    ["--sess", "s"],  # an abbreviation: the whole tree decides
]


@pytest.mark.parametrize("argv", PLAIN + NOT_PLAIN)
def test_the_same_namespace_as_the_whole_tree(argv):
    assert vars(parse_args(argv)) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [["--sessions"], ["--bogus"], ["--set"], ["--low-bandwidth", "x"], ["--help"]])
def test_errors_and_help_are_the_whole_trees(argv, capsys):
    with pytest.raises(SystemExit) as plain:
        parse_args(argv)
    said = capsys.readouterr()
    with pytest.raises(SystemExit) as whole:
        build_parser().parse_args(argv)
    assert plain.value.code == whole.value.code
    assert said == capsys.readouterr()  # the same usage, message or help, on the same stream


def test_a_plain_start_does_not_build_the_subcommands():
    code = (
        "import json, sys\n"
        "from workbench.cli.main import parse_args\n"
        "parse_args(['--sessions', 's'])\n"
        "print(json.dumps(sorted(m for m in ('workbench.cli.accept', 'workbench.cli.freeze', 'workbench.cli.records',"
        " 'workbench.cli.reproduce') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
