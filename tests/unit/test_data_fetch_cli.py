"""`ms-workbench data fetch`: plain lines off a terminal, exit 0 only when all four files verify.
The network is not reachable here, so the official files are served from a file:// URL."""

from __future__ import annotations

import io
import os

from workbench.data.fetch import fetch_cli
from workbench.data.loader import load_fashion_mnist
from workbench.data.locate import BUNDLED_DIR
from workbench.data.official import OFFICIAL_FILES

NAMES = [spec.name + ".gz" for spec in OFFICIAL_FILES]


def test_fetch_cli_prints_plain_progress_and_verifies(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    dest = tmp_path / "cache"
    code = fetch_cli(dest, url_base=BUNDLED_DIR.as_uri() + "/", stream=out, err_stream=err)
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text  # not a terminal: no bar, no escapes
    for name in NAMES:
        assert "%s: downloading" % name in text and "%s: 100%%" % name in text
        assert "verified %s" % (dest / name) in text
    assert "train-images-idx3-ubyte.gz: 50%" in text  # the big file reports quarters on the way
    assert sorted(os.listdir(dest)) == sorted(NAMES)
    assert load_fashion_mnist(dest).train_labels[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]


def test_fetch_cli_without_the_files_exits_1_with_a_hint(tmp_path):
    mirror = tmp_path / "unreachable"
    mirror.mkdir()
    out, err = io.StringIO(), io.StringIO()
    code = fetch_cli(tmp_path / "cache", url_base=mirror.as_uri() + "/", stream=out, err_stream=err)
    assert code == 1
    message = err.getvalue()
    assert (mirror / NAMES[0]).as_uri() in message and "download failed" in message
    assert "hint:" in message and "data.dir" in message and str(tmp_path / "cache") in message
    assert os.listdir(tmp_path / "cache") == []


def test_the_command_lines_bar_shows_every_file(tmp_path):
    """The rich bar lives with the entry point (screens.progress, drawn for the entry point); fetch only calls it back."""
    from screens.progress import FetchBar

    out, err = io.StringIO(), io.StringIO()
    code = fetch_cli(
        tmp_path / "cache", url_base=BUNDLED_DIR.as_uri() + "/", stream=out, err_stream=err, make_display=FetchBar
    )
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "downloading" not in text  # the bar, not the plain lines
    bars = [line for line in text.splitlines() if "━" in line]
    assert [line.split()[0] for line in bars] == NAMES  # one finished bar per file, in download order
    for name in NAMES:
        assert "verified %s" % (tmp_path / "cache" / name) in text
