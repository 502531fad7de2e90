"""Open a page in headless Chromium and report what happened, with the standard library only.

The browser is driven over the Chrome DevTools Protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so no websocket client and
no port is needed. Used by the report tests and by ``benchmarks/report/report_screenshots.py``::

    result = open_page(Path("report.html"), screenshot=Path("report.png"))
    result.console_errors, result.requests, result.figures

Debian's package is ``chromium``; :func:`find_chromium` also knows ``chromium-browser``,
``google-chrome`` and ``$CHROMIUM``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PageResult", "find_chromium", "open_page", "require_chromium"]

#: flags for a quiet, isolated, network-shy headless browser
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)

#: what the page says about its figures, evaluated in the page once it has loaded
_FIGURES = """JSON.stringify(Array.from(document.querySelectorAll('figure[data-figure]')).map(f => {
  const img = f.querySelector('img');
  return {name: f.dataset.figure, complete: !!img && img.complete,
          width: img ? img.naturalWidth : 0, height: img ? img.naturalHeight : 0,
          shownWidth: img ? img.getBoundingClientRect().width : 0,
          caption: (f.querySelector('figcaption') || {}).textContent || ''};
}))"""


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) executable, or None."""
    candidates = [os.environ.get("CHROMIUM", "")]
    candidates += ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
    for name in candidates:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def require_chromium() -> str:
    """The browser's path for a test: skipped locally without one, failed under ``CI=true``
    (where ``.ci/run`` installs it)."""
    import pytest

    path = find_chromium()
    if path is None:
        message = "headless Chromium not found (Debian: apt-get install -y chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@dataclass
class PageResult:
    """What happened while the page loaded."""

    loaded: bool = False
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    figures: list[dict] = field(default_factory=list)
    title: str = ""
    height: int = 0


class _Pipe:
    """The DevTools protocol over the browser's pipe: numbered commands, events kept."""

    def __init__(self, writer, reader, deadline: float) -> None:
        self.writer, self.reader, self.deadline = writer, reader, deadline
        self.buffer, self.next_id, self.events = b"", 0, []

    def _message(self) -> dict:
        while b"\0" not in self.buffer:
            if time.monotonic() > self.deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.reader, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self.writer, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            message = self._message()
            self.events.append(message)
            if message.get("method") == method:
                return message


def open_page(
    path: Path,
    *,
    screenshot: Path | None = None,
    width: int = 1200,
    full_page: bool = True,
    timeout: float = 60.0,
    chromium: str | None = None,
) -> PageResult:
    """Load ``path`` (a local HTML file) and collect console errors, network requests other
    than the page itself and ``data:`` URIs, and the state of every ``figure[data-figure]``;
    optionally save a PNG screenshot (the whole page with ``full_page``)."""
    executable = chromium or find_chromium()
    if executable is None:
        raise FileNotFoundError("no chromium executable found")
    url = Path(path).resolve().as_uri()
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def plumbing() -> None:  # in the child: its fd 3 reads commands, fd 4 writes answers
        # move both ends above 3 and 4 first, so that neither dup2 overwrites the other
        reader = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        writer = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        os.dup2(reader, 3)
        os.dup2(writer, 4)

    with tempfile.TemporaryDirectory(prefix="crowdbayes-chromium-") as profile:
        process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},900"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=plumbing,
            close_fds=False,  # fds 3 and 4 must survive; Python's own fds close on exec
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        try:
            pipe = _Pipe(to_browser_w, from_browser_r, time.monotonic() + timeout)
            return _visit(pipe, url, screenshot, width, full_page)
        finally:
            try:
                pipe.send("Browser.close")
            except Exception:
                pass
            os.close(to_browser_w)
            os.close(from_browser_r)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _visit(pipe: _Pipe, url: str, screenshot: Path | None, width: int, full: bool) -> PageResult:
    target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        pipe.send(f"{domain}.enable", session=session)
    pipe.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    pipe.events.clear()
    pipe.send("Page.navigate", {"url": url}, session=session)
    pipe.wait_for("Page.loadEventFired")
    result = PageResult(loaded=True)
    evaluated = pipe.send(
        "Runtime.evaluate", {"expression": _FIGURES, "returnByValue": True}, session=session
    )
    result.figures = json.loads(evaluated["result"]["value"])
    title = pipe.send(
        "Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session
    )
    result.title = title["result"]["value"]
    metrics = pipe.send("Page.getLayoutMetrics", session=session)
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    result.height = int(size["height"])
    if screenshot is not None:
        params = {"format": "png"}
        if full:
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": width, "height": result.height, "scale": 1},
            )
        shot = pipe.send("Page.captureScreenshot", params, session=session)
        Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
    for event in pipe.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(arg.get("value", arg.get("description", ""))) for arg in params["args"]]
            result.console_errors.append(" ".join(texts))
        elif method == "Runtime.exceptionThrown":
            result.console_errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            result.console_errors.append(params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            request = params["request"]["url"]
            if request != url and not request.startswith("data:"):
                result.requests.append(request)
    return result
