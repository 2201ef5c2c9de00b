"""report.html in a real headless browser (Debian's chromium): it loads offline with no console
error, every figure decodes, and a screenshot is saved. Skipped, with the reason, only where
chromium is not installed (.ci/run installs it with apt-get when it can)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser import Browser, find_chromium, png_size
from sweeps import write_spec

from hpcdispatch.report import write_report
from hpcdispatch.sweep import LocalExecutor, load_sweep, run_sweep

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed, so report.html cannot be checked in a browser; .ci/run installs Debian's "
           "chromium with 'apt-get install chromium' when it runs as root (apt-get failed or was not run here)",
)

SPEC = """
name = "browser"
systems = ["machine-s"]
dispatchers = ["fifo", "easy-L2"]
[[workloads]]
generator = "lublin"
jobs = 80
seeds = [1, 2]
"""


@pytest.fixture(scope="module")
def browser():
    b = Browser(CHROMIUM)
    try:
        yield b
    finally:
        b.close()


def _save_screenshot(data: bytes, path: Path) -> None:
    path.write_bytes(data)
    keep = os.environ.get("HPCDISPATCH_SCREENSHOTS")  # e.g. a CI artifacts folder
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def test_the_harness_sees_errors_and_broken_images(tmp_path, browser):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><head><title>t</title></head><body>"
                    "<img src='missing.png' alt='gone'><script>console.error('boom'); undefinedFunction();</script>"
                    "</body></html>")
    result = browser.open(page.as_uri())
    text = "\n".join(result.errors)
    assert "console.error: boom" in text and "undefinedFunction" in text and "missing.png" in text, text
    assert result.state["images"] == [{"alt": "gone", "complete": True, "width": 0, "height": 0, "data": False}]


def _check(result, report_dir: Path) -> None:
    assert result.errors == [], result.errors
    pngs = sorted(p.name for p in report_dir.glob("*.png"))
    images = result.state["images"]
    assert len(images) == result.state["figures"] == len(pngs) >= 3  # every figure is on the page ...
    for img in images:  # ... embedded and decoded
        assert img["data"] and img["complete"] and img["width"] > 0 and img["height"] > 0, img
    assert result.state["scripts"] == 0 and result.state["external"] == []  # nothing to fetch: opens offline
    width, height = png_size(result.screenshot)
    assert width >= 1200 and height > 900  # the whole page (less a scrollbar), taller than one screen


def test_sweep_report_in_chromium(tmp_path, browser):
    out = tmp_path / "out"
    run_sweep(load_sweep(write_spec(tmp_path, SPEC)), out, LocalExecutor(2))
    html = write_report(out)
    result = browser.open(html.as_uri())
    assert result.state["title"] == "hpcdispatch sweep: browser"
    assert result.state["tables"] >= 3
    _check(result, html.parent)
    _save_screenshot(result.screenshot, tmp_path / "sweep-report.png")
    assert {"qos.png", "resources.png", "cost.png", "decision_time.png", "prediction_accuracy.png"} <= {
        p.name for p in html.parent.glob("*.png")}

    cell = next(p for p in (out / "cells").iterdir() if not p.name.startswith("."))
    run_html = write_report(cell)
    result = browser.open(run_html.as_uri())
    _check(result, run_html.parent)
    assert {"gantt.png", "utilization_time.png"} <= {p.name for p in run_html.parent.glob("*.png")}
    _save_screenshot(result.screenshot, tmp_path / "run-report.png")
