"""`serve` in a real headless chromium: a clear "starting…" state within 2 s of loading, then the app itself,
and not one request of the page leaving 127.0.0.1 (a board has no internet)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from urllib.parse import urlsplit

import pytest

from tests.support.browser import Browser, Page, chromium_path
from tests.support.cli import cli_argv, cli_env

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="no chromium here (Debian: apt-get install -y chromium)"
)
aiohttp = pytest.importorskip("aiohttp", reason="aiohttp comes with textual-serve")
pytest.importorskip("textual_serve", reason="textual-serve is not installed (ms-workbench[serve])")

# Milliseconds since the page's HTML arrived (the server's own latency on a loaded machine is not the page's).
SINCE_LOADED_JS = "performance.now() - (performance.timing.responseEnd - performance.timing.navigationStart)"
STATE_JS = (
    "!document.body ? 'blank' : document.body.classList.contains('-first-byte') ? 'app' : "
    "((document.getElementById('starting') || {}).innerText || '').includes('starting') ? 'starting' : "
    "(document.body.innerText.trim() ? 'splash' : 'blank')"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, "serve exited: %s" % proc.stderr.read()
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "serve did not listen on %d" % port
            time.sleep(0.1)  # the poll interval of this condition wait


async def _watch(ws_url: str, url: str) -> tuple:
    """Load the page and sample what it shows every 50 ms until the app is there: ([(seconds, state)], urls).

    Every request the page made is recorded from navigation on, until its fonts have loaded after the app showed.
    """
    seen = []
    async with aiohttp.ClientSession() as client:
        async with client.ws_connect(ws_url, max_msg_size=0) as ws:
            page = Page(ws)
            await page.call("Page.enable")
            await page.call("Network.enable")
            t0 = time.monotonic()
            await page.call("Page.navigate", url=url)
            while time.monotonic() - t0 < 60:
                state = await page.evaluate(STATE_JS)
                since_loaded_ms = await page.evaluate(SINCE_LOADED_JS)
                seen.append((time.monotonic() - t0, state, since_loaded_ms))
                if state == "app":
                    break
                await asyncio.sleep(0.05)  # this test measures time: it samples the page every 50 ms
            fonts = await page.call(
                "Runtime.evaluate",
                expression="document.fonts.ready.then(() => [...document.fonts].map(f => f.family + ' ' + f.status))",
                awaitPromise=True,
                returnByValue=True,
            )
            seen.append((time.monotonic() - t0, "fonts", (fonts.get("result") or {}).get("value")))
    return seen, page.requested_urls()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Serve an empty session, open it in chromium once: what the page showed and every URL it requested."""
    tmp_path = tmp_path_factory.mktemp("serve")
    port = _free_port()
    serve = subprocess.Popen(
        cli_argv("--sessions", tmp_path / "sessions", "serve", "--host", "127.0.0.1", "--port", port),
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    browser = None
    try:
        _wait_listening(port, serve)
        browser = Browser(tmp_path / "profile")
        return asyncio.run(_watch(browser.page_ws(), "http://127.0.0.1:%d/" % port))
    finally:
        if browser is not None:
            browser.close()
        serve.terminate()
        serve.wait(15)


def leaves_the_machine(url: str) -> bool:
    """True for a URL whose host is not 127.0.0.1 (data: and blob: URLs name no host and go nowhere)."""
    parts = urlsplit(url)
    return parts.scheme not in ("data", "blob") and parts.hostname != "127.0.0.1"


def test_no_request_leaves_127_0_0_1(served):
    seen, urls = served
    assert seen[-2][1] == "app", "the app never showed: %s" % seen[-3:]
    assert any(u.startswith("ws://127.0.0.1:") for u in urls), "the recording missed the app's websocket: %s" % urls
    outside = [u for u in urls if leaves_the_machine(u)]
    assert not outside, "the page reached outside 127.0.0.1: %s" % outside
    fonts = [u for u in urls if "/static/fonts/RobotoMono" in u]
    assert fonts, "the page's font was not fetched from this server: %s" % urls
    assert "Roboto Mono loaded" in (seen[-1][2] or []), "the bundled font did not load: %s" % seen[-1][2]


def test_the_check_sees_a_request_to_the_internet():
    assert leaves_the_machine("https://fonts.googleapis.com/css?family=Roboto%20Mono")
    assert leaves_the_machine("http://localhost:8000/")  # a name, not the loopback address the page was served on
    assert not leaves_the_machine("http://127.0.0.1:8000/static/fonts/RobotoMono-VariableFont_wght.ttf")
    assert not leaves_the_machine("data:font/ttf;base64,AAAA")


def test_page_says_starting_within_2s_then_shows_the_app(served):
    seen = [row for row in served[0] if row[1] != "fonts"]
    shown = [row for row in seen if row[1] not in ("blank", None)]
    assert shown, "the page never showed anything: %s" % seen[-5:]
    first_t, first, since_loaded_ms = shown[0]
    assert first in ("starting", "app"), "the page first showed %r at %.2f s" % (first, first_t)
    assert since_loaded_ms < 2000, "%r only %.0f ms after the page loaded" % (first, since_loaded_ms)
    assert seen[-1][1] == "app", "the app never replaced the starting page: %s" % seen[-3:]
    print(
        "starting page %.0f ms after the HTML arrived (%.2f s after navigating), app at %.2f s"
        % (since_loaded_ms, first_t, seen[-1][0])
    )
