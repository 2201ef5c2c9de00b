"""A headless Chromium driven over the Chrome DevTools protocol (websocket-client), for
checking report.html the way a reader sees it: console errors, uncaught exceptions, failed
resource loads, images that did not decode, and a full-page screenshot."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import websocket

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
]

PAGE_STATE = """JSON.stringify({
  title: document.title,
  images: Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete,
                                                 width: i.naturalWidth, height: i.naturalHeight,
                                                 data: i.src.startsWith('data:image/png;base64,')})),
  figures: document.querySelectorAll('figure').length,
  tables: document.querySelectorAll('table').length,
  scripts: document.scripts.length,
  external: Array.from(document.querySelectorAll('[src],[href]'))
                 .map(e => e.getAttribute('src') || e.getAttribute('href'))
                 .filter(u => !u.startsWith('data:')),
  colours: Object.fromEntries(Array.from(document.querySelectorAll('table.colours tr[data-dispatcher]'))
                 .map(r => [r.dataset.dispatcher, r.dataset.colour])),
  swatches: Object.fromEntries(Array.from(document.querySelectorAll('table.colours tr[data-dispatcher]'))
                 .map(r => [r.dataset.dispatcher, getComputedStyle(r.querySelector('span.swatch')).backgroundColor])),
  table_text: Array.from(document.querySelectorAll('table')).map(t => Array.from(t.rows)
                 .map(r => Array.from(r.cells).map(c => c.textContent.trim()))),
  figure_data: Array.from(document.querySelectorAll('figure')).map(f => ({
                 legend: f.dataset.legend ? JSON.parse(f.dataset.legend) : null,
                 panels: f.dataset.panels ? JSON.parse(f.dataset.panels) : null,
                 caption: f.querySelector('figcaption') ? f.querySelector('figcaption').textContent : '',
                 src: f.querySelector('img') ? f.querySelector('img').src : ''}))
})"""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageResult:
    state: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    screenshot: bytes = b""


class Browser:
    def __init__(self, binary: str, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="hpcdispatch-chromium-")
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"chromium exited with {self.proc.returncode}: {self.proc.stderr.read().decode()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}{path}", timeout=timeout, suppress_origin=True
        )
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _wait_event(self, method: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(
            e.get("method") == method and e.get("sessionId") == session for e in self.events
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {method} within {self.timeout} s")
            self.events.append(json.loads(self.ws.recv()))

    def _drain(self, seconds: float) -> None:
        """Collect events that arrive within ``seconds`` (late console messages)."""
        self.ws.settimeout(seconds)
        try:
            while True:
                self.events.append(json.loads(self.ws.recv()))
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(self.timeout)

    def open(
        self, url: str, width: int = 1280, height: int = 900, extra: str | None = None
    ) -> PageResult:
        """Load ``url`` and return its state (``PAGE_STATE``), errors and a screenshot;
        ``extra``, a JavaScript expression returning a JSON string (or a promise of one), adds
        ``state["extra"]``."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session,
        )
        self.events = [e for e in self.events if e.get("sessionId") != session]
        self.call("Page.navigate", {"url": url}, session)
        self._wait_event("Page.loadEventFired", session)
        self._drain(0.5)
        state = json.loads(
            self.call(
                "Runtime.evaluate", {"expression": PAGE_STATE, "returnByValue": True}, session
            )["result"]["value"]
        )
        if extra is not None:
            state["extra"] = json.loads(
                self.call(
                    "Runtime.evaluate",
                    {"expression": extra, "returnByValue": True, "awaitPromise": True},
                    session,
                )["result"]["value"]
            )
        size = self.call("Page.getLayoutMetrics", session=session)["cssContentSize"]
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": size["height"],
                    "scale": 1,
                },
            },
            session,
        )["data"]
        errors = []
        for e in self.events:
            if e.get("sessionId") != session:
                continue
            p = e.get("params", {})
            if e.get("method") == "Runtime.exceptionThrown":
                errors.append(
                    "exception: "
                    + p["exceptionDetails"].get("text", "")
                    + " "
                    + str(p["exceptionDetails"].get("exception", {}).get("description", ""))
                )
            elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in (
                "error",
                "assert",
            ):
                errors.append(
                    "console."
                    + p["type"]
                    + ": "
                    + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
                )
            elif e.get("method") == "Log.entryAdded" and p["entry"].get("level") == "error":
                errors.append(
                    "log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", "")
                )
        self.call("Target.closeTarget", {"targetId": target})
        return PageResult(state, errors, base64.b64decode(shot))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stderr.close()
            shutil.rmtree(self.profile, ignore_errors=True)


def decode_png(data: bytes) -> np.ndarray:
    """RGB pixels (floats in 0..1, alpha dropped) of a PNG (matplotlib's reader: no Pillow needed)."""
    import io

    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    return pixels[..., :3] if pixels.ndim == 3 else pixels


def data_url_png(src: str) -> bytes:
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:40]
    return base64.b64decode(src[len(prefix) :])


def pixels_near(pixels: np.ndarray, colour: str, tolerance: float = 10 / 255) -> int:
    """How many pixels are within ``tolerance`` (per channel) of ``colour`` (``#rrggbb``)."""
    rgb = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(pixels - rgb) <= tolerance).all(axis=-1).sum())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def png_text(data: bytes) -> dict[str, str]:
    """The tEXt chunks of a PNG (keyword -> text): what a figure says of itself."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    out, i = {}, 8
    while i + 8 <= len(data):
        length = int.from_bytes(data[i : i + 4], "big")
        kind = data[i + 4 : i + 8]
        body = data[i + 8 : i + 8 + length]
        if kind == b"tEXt":
            key, _, text = body.partition(b"\0")
            out[key.decode("latin-1")] = text.decode("latin-1")
        i += 12 + length
    return out
