"""Numeric command-line arguments: one strict rule (finite, in range), refused before anything acts."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.cli.main import build_parser
from workbench.cli.numbers import number

BAD = ["nan", "NaN", "inf", "-inf", "Infinity", "-1", "1e400", "", "seven", "0x10", "1,5"]


@pytest.mark.parametrize("text", BAD)
def test_prune_refuses_what_is_not_a_finite_number_of_days(text, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["sessions", "--prune=" + text, "--yes"])
    assert exc.value.code == 2
    assert "argument --prune: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", "70000"],
        ["serve", "--port", "0"],
        ["serve", "--port", "nan"],
        ["run", "drill", "--every", "-3"],
        ["watch", "--every", "1.5"],
    ],
)
def test_ports_and_counts_out_of_range_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2 and "is not an integer" in capsys.readouterr().err


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_number_accepts_exactly_the_finite_values_in_range(value):
    parse = number(0, 10)
    text = repr(value)
    if value != value or value in (float("inf"), float("-inf")) or not 0 <= value <= 10:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    else:
        assert parse(text) == value


def test_good_values_pass():
    args = build_parser().parse_args(["sessions", "--prune", "7.5"])
    assert args.prune == 7.5
    assert build_parser().parse_args(["serve", "--port", "65535"]).port == 65535


def test_serve_on_a_port_in_use_or_an_unknown_host_is_a_usage_error(capsys):
    import socket

    from workbench.cli.main import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    assert "cannot serve on 127.0.0.1:%d" % port in capsys.readouterr().err
    assert main(["serve", "--host", "nosuchhost.invalid"]) == 2
    assert "cannot serve on nosuchhost.invalid:8000" in capsys.readouterr().err
