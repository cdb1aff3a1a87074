"""A real headless chromium driven over the DevTools protocol (localhost only), for the `serve` test."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


def chromium_path() -> Optional[str]:
    """Debian's chromium (apt-get install chromium), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One chromium process with a fresh profile; `page()` gives the DevTools websocket of its tab."""

    def __init__(self, profile_dir: Path) -> None:
        self.profile_dir = Path(profile_dir)
        exe = chromium_path()
        assert exe, "no chromium"
        self.proc = subprocess.Popen(
            [exe] + FLAGS + ["--user-data-dir=%s" % self.profile_dir, "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def debug_port(self, timeout_s: float = 30.0) -> int:
        """The DevTools port chromium picked (it writes it into the profile)."""
        marker = self.profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while not (marker.exists() and marker.read_text().strip()):
            assert self.proc.poll() is None, "chromium exited with %s" % self.proc.returncode
            assert time.monotonic() < deadline, "chromium wrote no DevToolsActivePort in %.0f s" % timeout_s
            time.sleep(0.05)  # the poll interval of this condition wait
        return int(marker.read_text().split()[0])

    def page_ws(self) -> str:
        """The websocket URL of the first page."""
        port = self.debug_port()
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10) as reply:
            targets = json.load(reply)
        return next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")

    def close(self) -> None:
        """Stop chromium (our own process only)."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class Page:
    """Send DevTools commands to a page and read their results."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.n = 0
        self.events: List[Dict[str, Any]] = []  # every DevTools event that arrived while waiting for a reply

    async def call(self, method: str, **params: Any) -> Any:
        """One command; its result."""
        self.n += 1
        await self.ws.send_json({"id": self.n, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), 30)
            if msg.get("id") == self.n:
                assert "error" not in msg, msg
                return msg.get("result")
            if "method" in msg:
                self.events.append(msg)

    def requested_urls(self) -> List[str]:
        """Every URL the page asked for so far (Network.enable first): requests and websockets."""
        urls = []
        for msg in self.events:
            params = msg.get("params") or {}
            if msg["method"] == "Network.requestWillBeSent":
                urls.append(params["request"]["url"])
            elif msg["method"] == "Network.webSocketCreated":
                urls.append(params["url"])
        return urls

    async def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value."""
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return (result.get("result") or {}).get("value")
