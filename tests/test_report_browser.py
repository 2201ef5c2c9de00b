"""report.html in a real headless browser (Debian's chromium): it loads offline with no console
error, every figure decodes and is not blank, every dispatcher has the page's colour in every
figure (from the figures' legends and from their pixels), and a screenshot is saved (keep
them with HPCDISPATCH_SCREENSHOTS=DIR and look at them). Skipped, with the reason, only where
chromium is not installed (.ci/run installs it with apt-get when it can)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from browser import (
    Browser,
    data_url_png,
    decode_png,
    find_chromium,
    pixels_near,
    png_size,
    png_text,
)
from sweeps import cli, write_spec

from hpcdispatch.report import write_report
from hpcdispatch.report.style import dispatcher_styles
from hpcdispatch.sweep import LocalExecutor, load_sweep, run_sweep

CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="chromium is not installed, so report.html cannot be checked in a browser; .ci/run installs Debian's "
        "chromium with 'apt-get install chromium' when it runs as root (apt-get failed or was not run here)",
    ),
    pytest.mark.slow,  # (a headless browser, and whole reports to open in it)
]

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
    page.write_text(
        "<!DOCTYPE html><html><head><title>t</title></head><body>"
        "<img src='missing.png' alt='gone'><script>console.error('boom'); undefinedFunction();</script>"
        "</body></html>"
    )
    result = browser.open(page.as_uri())
    text = "\n".join(result.errors)
    assert (
        "console.error: boom" in text and "undefinedFunction" in text and "missing.png" in text
    ), text
    assert result.state["images"] == [
        {"alt": "gone", "complete": True, "width": 0, "height": 0, "data": False}
    ]


def _check(result, report_dir: Path) -> None:
    assert result.errors == [], result.errors
    pngs = sorted(p.name for p in report_dir.glob("*.png"))
    images = result.state["images"]
    assert (
        len(images) == result.state["figures"] == len(pngs) >= 3
    )  # every figure is on the page ...
    for img in images:  # ... embedded and decoded
        assert img["data"] and img["complete"] and img["width"] > 0 and img["height"] > 0, img
    assert (
        result.state["scripts"] == 0 and result.state["external"] == []
    )  # nothing to fetch: opens offline
    width, height = png_size(result.screenshot)
    assert (
        width >= 1200 and height > 900
    )  # the whole page (less a scrollbar), taller than one screen


def test_sweep_report_in_chromium(tmp_path, browser):
    out = tmp_path / "out"
    run_sweep(load_sweep(write_spec(tmp_path, SPEC)), out, LocalExecutor(2))
    html = write_report(out)
    result = browser.open(html.as_uri())
    assert result.state["title"] == "hpcdispatch sweep: browser"
    assert result.state["tables"] >= 3
    _check(result, html.parent)
    _save_screenshot(result.screenshot, tmp_path / "sweep-report.png")
    assert {
        "qos.png",
        "qos_ecdf.png",
        "resources.png",
        "cost.png",
        "decision_time.png",
        "prediction_accuracy.png",
    } <= {p.name for p in html.parent.glob("*.png")}
    for img in result.state["figure_data"]:
        _not_blank(data_url_png(img["src"]))
        _nothing_cut(data_url_png(img["src"]))
    _same_colours_everywhere(result.state, ["fifo", "easy-L2"])

    cell = next(p for p in (out / "cells").iterdir() if not p.name.startswith("."))
    run_html = write_report(cell)
    result = browser.open(run_html.as_uri())
    _check(result, run_html.parent)
    assert {"gantt.png", "utilization_time.png"} <= {p.name for p in run_html.parent.glob("*.png")}
    _save_screenshot(result.screenshot, tmp_path / "run-report.png")
    _log_axes_have_labels(result.state)
    # every row of the run's summary says its unit, and decision times are in it (ms)
    summary = next(t for t in result.state["table_text"] if t[0] == ["metric", "value", "unit"])
    assert len(summary) > 30
    for metric, value, unit in summary[1:]:
        assert unit, (metric, value)
        assert not metric.endswith("_s") or unit == "s", (metric, unit)
    units = {row[0]: row[2] for row in summary[1:]}
    assert units["decision_time_max"] == "ms" and units["wait_mean"] == "s"


def _log_axes_have_labels(state: dict) -> None:
    """Every log axis of every figure shows at least two tick labels (a narrow one labels its
    minor ticks, never a lone "1"); the figures list them in their PNG (report/plots.py)."""
    import json

    seen = 0
    for fig in state["figure_data"]:
        axes = png_text(data_url_png(fig["src"])).get("hpcdispatch-log-axes")
        for axis in json.loads(axes) if axes else []:
            assert len(axis["labels"]) >= 2, (fig["caption"], axis)
            seen += 1
    assert seen, "no figure with a log axis was checked"


def _every_trace_visible(state: dict, caption_start: str, labels: list[str]) -> None:
    """In the figure whose caption starts with ``caption_start``, each dispatcher's colour
    covers at least a third of the area of the most visible one's: no trace hides another."""
    fig = next(f for f in state["figure_data"] if f["caption"].startswith(caption_start))
    pixels = decode_png(data_url_png(fig["src"]))
    colours = {x: s.color for x, s in dispatcher_styles(labels).items()}
    counts = {x: pixels_near(pixels, c) for x, c in colours.items()}
    assert min(counts.values()) >= max(counts.values()) / 3, counts


def _not_blank(png: bytes) -> None:
    pixels = decode_png(png)
    ink = (pixels < 0.9).any(axis=-1).mean()  # share of pixels that are not white or near it
    assert pixels.std() > 0.05 and ink > 0.02, (pixels.std(), ink)


def _nothing_cut(png: bytes) -> None:
    """Figures are saved with a tight bounding box and a margin: a legend or label that ran
    off the figure would touch its edge, so the outermost pixels must all be white."""
    pixels = decode_png(png)
    edge = np.concatenate(
        [
            pixels[:3].reshape(-1, 3),
            pixels[-3:].reshape(-1, 3),
            pixels[:, :3].reshape(-1, 3),
            pixels[:, -3:].reshape(-1, 3),
        ]
    )
    assert (edge > 0.97).all(), "something is drawn up to the figure's edge (clipped?)"


def _same_colours_everywhere(state: dict, labels: list[str]) -> None:
    """The page's colour key is dispatcher_styles' (tab10 in the order of --dispatchers); every
    figure's legend gives each dispatcher that colour, and the figure's pixels hold it."""
    expected = {x: s.color for x, s in dispatcher_styles(labels).items()}
    assert state["colours"] == expected
    for label, css in state["swatches"].items():  # the swatch the reader sees
        r, g, b = (int(expected[label][i : i + 2], 16) for i in (1, 3, 5))
        assert css == f"rgb({r}, {g}, {b})", (label, css)
    seen = set()
    for fig in state["figure_data"]:
        assert fig["legend"], fig["caption"]  # every figure of the page is about the dispatchers
        pixels = decode_png(data_url_png(fig["src"]))
        for label, colour in fig["legend"].items():
            assert colour == expected[label], (fig["caption"], label, colour)
            assert pixels_near(pixels, colour) >= 20, (fig["caption"], label, colour)
            seen.add(label)
    assert seen == set(labels)


def test_compare_report_in_chromium(tmp_path, browser):
    out = tmp_path / "cmp"
    dispatchers = ["fifo", "sjf", "easy", "easy-L2:allocator=best-fit"]
    p = cli(
        "compare",
        "-w",
        "synthetic:lublin,jobs=300,seed=2,load=0.9",
        "-d",
        ",".join(dispatchers),
        "-o",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    html = out / "report.html"
    assert str(html) in p.stdout.replace("\n", "")  # the main job prints the page's path
    result = browser.open(html.as_uri())
    _save_screenshot(result.screenshot, tmp_path / "compare-report.png")
    assert result.state["title"] == "hpcdispatch comparison"
    _check(result, out)
    labels = ["fifo", "sjf", "easy", "easy-L2 (best-fit)"]  # readable labels; the key: specs
    for img in result.state["figure_data"]:
        _not_blank(data_url_png(img["src"]))
        _nothing_cut(data_url_png(img["src"]))
    _not_blank(result.screenshot)
    _same_colours_everywhere(result.state, labels)
    _log_axes_have_labels(result.state)
    _every_trace_visible(result.state, "Utilisation", labels)
    key = next(t for t in result.state["table_text"] if t[0] == ["dispatcher", "spec", "outputs"])
    assert key[4] == [
        "easy-L2 (best-fit)",
        "easy-L2:allocator=best-fit",
        "easy-L2-allocator_best-fit/",
    ]
    captions = {f["caption"].split(" ")[0]: f["caption"] for f in result.state["figure_data"]}
    assert {"Distribution", "Mean", "Utilisation", "Wall-clock", "Accuracy"} <= set(captions)
    # three dispatchers with wall-time predictions: one accuracy curve, named for all three
    assert "Identical for fifo, sjf, easy: drawn once." in captions["Accuracy"]
    md = (out / "report.md").read_text()
    assert "gpu: no job used any" in md  # machine-s has GPUs, Lublin jobs use none: no empty panel
    assert (
        "| dispatcher | mean wait [s] |" not in md
    )  # the table's first columns are dispatcher, predictor
    assert "mean wait [s]" in md and "p95 decision [ms]" in md  # units in the headers


DEADLINE_SPEC = """
name = "deadline-browser"
systems = ["auto"]
dispatchers = ["count-only", "hilbert", "manhattan"]
[simulation]
record_decisions = false
[[workloads]]
generator = "deadline"
jobs = 40
load = ["normal", "very-heavy"]
types = [0, 3, "uniform"]
comm = ["async", "sync"]
seeds = [1, 2]
"""


def test_deadline_panels_in_chromium(tmp_path, browser):
    """The deadline paper's Figs 14-18 panels: six figures (3 metrics x 2 patterns), each with a
    panel per load in which every strategy x type mix bar has a value, in the page's colours."""
    out = tmp_path / "out"
    run_sweep(load_sweep(write_spec(tmp_path, DEADLINE_SPEC)), out, LocalExecutor(2))
    html = write_report(out)
    result = browser.open(html.as_uri())
    _check(result, html.parent)
    _save_screenshot(result.screenshot, tmp_path / "deadline-report.png")
    panels = {
        Path(html.parent / name).name
        for name in (p.name for p in html.parent.glob("deadline_*.png"))
    }
    assert panels == {
        f"deadline_{m}_{c}.png"
        for m in ("accepted", "cancel_rate", "on_time")
        for c in ("async", "sync")
    }
    figures = [f for f in result.state["figure_data"] if f["panels"] is not None]
    assert len(figures) == 6
    for fig in figures:
        # one panel per load, each with 3 strategies x 3 mixes = 9 bars holding a value
        assert fig["panels"] == {"normal load (1500 s)": 9, "very heavy load (1 s)": 9}, fig[
            "caption"
        ]
        _not_blank(data_url_png(fig["src"]))
        _nothing_cut(data_url_png(fig["src"]))
    _same_colours_everywhere(result.state, ["count-only", "hilbert", "manhattan"])
    table = (html.parent / "deadline_panels.csv").read_text().splitlines()
    assert len(table) == 1 + 3 * 2 * 2 * 3 * 3  # header + metric x comm x load x mix x strategy
