"""The pieces of the comparison page, by hand: dispatcher colours, CP'19 job classes, binned
means of step functions, identical series drawn once, colours read back from the figures,
empty panels left out, and ``report --window`` counted from the first submission."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest
from helpers import cores_system, job, workload
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.colors import to_hex
from sweeps import cli

from hpcdispatch.errors import ConfigError
from hpcdispatch.metrics.classes import class_means, run_time_classes, size_classes
from hpcdispatch.metrics.summary import time_weighted_mean
from hpcdispatch.report import write_report
from hpcdispatch.report.compare import (
    ComparedRun,
    class_rows,
    comparison_frame,
    write_comparison_report,
)
from hpcdispatch.report.plots import (
    ClassPanel,
    TimePanel,
    identical_groups,
    plot_class_bars,
    plot_ecdf,
    plot_time_series,
)
from hpcdispatch.report.series import binned_means, duration_text, step_integral, time_unit
from hpcdispatch.report.style import TAB10, dispatcher_styles
from hpcdispatch.runner import run_simulation


def test_dispatcher_colours_are_tab10_in_order_then_a_new_line_style():
    assert TAB10 == tuple(to_hex(c) for c in matplotlib.colormaps["tab10"].colors)
    labels = [f"d{k}" for k in range(12)]
    styles = dispatcher_styles(labels)
    assert [styles[x].color for x in labels[:3]] == ["#1f77b4", "#ff7f0e", "#2ca02c"]
    assert styles["d9"].color == "#17becf" and styles["d9"].linestyle == "-"
    assert (
        styles["d10"].color == "#1f77b4" and styles["d10"].linestyle == "--"
    )  # colour repeats, line does not
    assert len({(s.color, s.linestyle) for s in styles.values()}) == 12
    again = dispatcher_styles(["easy", "fifo", "easy"])  # a repeated label keeps its first place
    assert list(again) == ["easy", "fifo"] and again["fifo"].color == "#ff7f0e"


def test_cp19_run_time_classes_and_size_classes_by_hand():
    runs = np.array([1, 3599, 3600, 17999, 18000, 86400])
    c = run_time_classes(runs)
    assert c.code.tolist() == [0, 0, 1, 1, 2, 2]
    assert c.names == ("short (< 1 h)", "medium (1-5 h)", "long (>= 5 h)")
    s = size_classes(np.array([1, 2, 8, 9, 16]), cores_per_node=8)
    assert s.code.tolist() == [0, 1, 1, 2, 2] and s.counts().tolist() == [1, 2, 2]
    means = class_means(np.array([1.0, 3.0, 10.0, 20.0, 5.0, 7.0]), c)
    assert means.tolist() == [2.0, 15.0, 6.0]
    empty = class_means(np.array([4.0]), run_time_classes(np.array([10])))
    assert empty[0] == 4.0 and np.isnan(empty[1:]).all()


def test_binned_means_of_a_step_function_by_hand():
    times, values = np.array([0.0, 10.0, 20.0]), np.array([1.0, 3.0, 0.0])
    # [0,5): 1; [5,15): 5 s at 1 + 5 s at 3 = 20 / 10; [15,30): 5 s at 3 + 10 s at 0 = 15 / 15
    assert binned_means(times, values, np.array([0.0, 5.0, 15.0, 30.0])).tolist() == [1.0, 2.0, 1.0]
    assert step_integral(times, values, np.array([-5.0, 0.0, 12.0, 100.0])).tolist() == [
        0.0,
        0.0,
        16.0,
        40.0,
    ]
    # before the first time the function is 0
    assert binned_means(
        np.array([10.0]), np.array([2.0]), np.array([0.0, 10.0, 20.0])
    ).tolist() == [0.0, 2.0]
    assert binned_means(np.zeros(0), np.zeros(0), np.array([0.0, 1.0])).tolist() == [0.0]
    assert time_unit(86400 * 10) == ("days", 86400.0) and time_unit(7200) == ("min", 60.0)
    assert (
        duration_text(7420) == "2.06 h"
        and duration_text(45) == "45 s"
        and duration_text(129600) == "1.5 days"
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 50)), min_size=1, max_size=30),
    st.integers(1, 20),
)
def test_binned_means_average_to_the_time_weighted_mean(steps, n_bins):
    times = np.unique(np.array([t for t, _ in steps], dtype=float))
    values = np.array([dict(steps)[int(t)] for t in times], dtype=float)
    t_end = times[-1] + 7.0
    edges = np.linspace(times[0], t_end, n_bins + 1)
    means = binned_means(times, values, edges)
    assert np.average(means, weights=np.diff(edges)) == pytest.approx(
        time_weighted_mean(times, values, t_end)
    )


def test_identical_series_are_drawn_once_with_every_name(tmp_path):
    a = np.array([3.0, 1.0, 2.0])
    groups = identical_groups(
        {"fifo": a, "sjf": np.array([3.0, 1.0, 2.0]), "easy": a + 1, "cons": a.copy()}
    )
    assert groups == [["fifo", "sjf", "cons"], ["easy"]]
    styles = dispatcher_styles(["fifo", "sjf", "easy", "cons"])
    info = plot_ecdf(
        {"fifo": a, "sjf": a[::-1], "easy": a + 1, "cons": a},
        tmp_path / "e.png",
        "x",
        "t",
        styles=styles,
    )
    assert info.identical == [("fifo", "sjf", "cons")]  # an ECDF compares the sorted values
    assert info.legend == {"fifo": styles["fifo"].color, "easy": styles["easy"].color}


def test_figures_report_the_colours_they_drew(tmp_path):
    styles = dispatcher_styles(["fifo", "easy-allocator_best-fit-L2"])
    panel = ClassPanel(
        "by run time",
        ("short", "medium", "long"),
        np.array([2, 0, 1]),
        {
            "fifo": np.array([4.0, np.nan, 2.0]),
            "easy-allocator_best-fit-L2": np.array([2.0, np.nan, 1.0]),
        },
    )
    info = plot_class_bars([panel], tmp_path / "c.png", "mean bsld", styles)
    assert info.legend == {k: v.color for k, v in styles.items()}
    x = np.array([0.0, 1.0, 2.0])
    info = plot_time_series(
        [
            TimePanel(
                "q",
                {
                    "fifo": (x, np.array([1.0, 2.0, 0.0])),
                    "easy-allocator_best-fit-L2": (x, np.array([1.0, 0.0, 0.0])),
                },
            )
        ],
        tmp_path / "t.png",
        "time",
        "title",
        styles,
    )
    assert info.legend == {k: v.color for k, v in styles.items()} and info.identical == []


def _shifted_run(tmp_path, offset: int):
    """A run whose first job is submitted at t = offset (as HPC2N's at 342,072 s)."""
    jobs = [job(i + 1, offset + 60 * i, 600 + 30 * i, units=2) for i in range(12)]
    run_dir = tmp_path / "run"
    run_simulation(cores_system(4, 4), workload(jobs), "fifo", out_dir=run_dir)
    return run_dir


@pytest.mark.slow
def test_report_window_counts_from_the_first_submission(tmp_path):
    run_dir = _shifted_run(tmp_path, 342_072)
    html = write_report(run_dir, window=(0, 900), allow_unverified=True)  # (a memory workload)
    md = (html.parent / "report.md").read_text()
    assert "window 0-900 s after the first submission (t = 342,072 s" in md
    with pytest.raises(
        ConfigError,
        match=r"--window 86400:172800 \(seconds after the first submission\) holds no "
        r"job on nodes 0-3 of 4; this run's jobs run from 0 to 1,800 s",
    ):
        write_report(run_dir, window=(86_400, 172_800), allow_unverified=True)
    p = cli("report", str(run_dir), "--window", "86400:172800", "--allow-unverified", "--force")
    assert p.returncode == 2 and "holds no job" in p.stderr and "Traceback" not in p.stderr, (
        p.stderr
    )
    assert len(p.stderr.strip().splitlines()) <= 3  # one message (rich may wrap it), nothing else


def _run(label: str, start: list[float], usage_core: list[float]) -> ComparedRun:
    submit = np.array([0.0, 0.0, 0.0])
    run_time = np.array([100.0, 4000.0, 20000.0])
    s = np.array(start, dtype=float)
    return ComparedRun(
        label=label,
        submit=submit,
        start=s,
        end=s + run_time,
        run_time=run_time,
        cores=np.array([1.0, 4.0, 16.0]),
        accepted=np.ones(3, dtype=bool),
        planned=run_time * 2,
        usage={
            "core": (np.array([0.0, 100.0]) if usage_core else np.zeros(0), np.array(usage_core)),
            "gpu": (np.array([0.0]), np.array([0.0])),
        },
        cores_per_node=8.0,
    )


@pytest.mark.slow
def test_comparison_page_by_hand(tmp_path):
    runs = [
        _run("fifo", [0, 400, 4400], [0.5, 0.0]),
        _run("easy", [0, 0, 200], [0.5, 0.0]),
        _run("none", [np.nan] * 3, []),
    ]  # nothing started: no curve, no class, no accuracy
    frame = comparison_frame(
        [
            {
                "label": r.label,
                "system": "s",
                "workload": "w",
                "jobs": 3,
                "predictor": "walltime",
                "wait_mean": 1.0,
                "decision_time_mean_s": 1e-4 * (k + 1),
                "decision_time_p95_s": 2e-4 * (k + 1),
                "sim_wall_s": 0.1,
                "valid": True,
            }
            for k, r in enumerate(runs)
        ]
    )
    html = write_comparison_report(tmp_path, frame, runs, ["none: a note"])
    # bounded slowdown = max(1, (end - submit) / max(run, 10 s)): fifo 100/100, 4400/4000, 24400/20000
    header, rows, numbers = class_rows(runs)
    assert header == [
        "dispatcher",
        "short (< 1 h) (run time)",
        "medium (1-5 h) (run time)",
        "long (>= 5 h) (run time)",
        "1 core (size)",
        "<= 1 node (size)",
        "> 1 node (size)",
    ]
    assert rows == [
        ["fifo", "1.00", "1.10", "1.22", "1.00", "1.10", "1.22"],
        ["easy", "1.00", "1.00", "1.01", "1.00", "1.00", "1.01"],
        ["none", "-", "-", "-", "-", "-", "-"],
    ]
    assert numbers["jobs"].tolist() == [1] * 12
    md = (tmp_path / "report.md").read_text()
    assert "gpu: no job used any" in md and "none: a note" in md
    assert "Identical for fifo, easy: drawn once." in md  # the same core usage: one line
    assert "| `fifo` | #1f77b4 | solid |" in md and "| `none` | #2ca02c | solid |" in md
    page = html.read_text()
    assert (
        page.count("<figure") == 5 and 'data-legend="{&quot;fifo&quot;: &quot;#1f77b4&quot;' in page
    )


def test_log_axis_labels():
    from hpcdispatch.report.plots import _plain_log_label

    labels = [_plain_log_label(v, 0) for v in (0.001, 0.1, 1, 10, 1000, 1e4, 1e5, 1e6, 1e7, 1e9)]
    assert labels == ["0.001", "0.1", "1", "10", "1,000", "10k", "100k", "1M", "10M", "1G"]


def test_ecdf_identity_is_on_the_values_and_long_lines_are_thinned():
    import matplotlib.pyplot as plt

    from hpcdispatch.report.plots import ECDF_POINTS, PlotInfo, _draw_ecdf

    styles = dispatcher_styles(["a", "b", "c"])
    fig, ax = plt.subplots()
    info = PlotInfo(Path("unused.png"))
    many = np.arange(10_000, 0, -1, dtype=float)
    # a and b look the same once raised to the 1 s floor, but their values differ: two lines
    _draw_ecdf(
        ax,
        {"a": np.array([0.2, 5.0]), "b": np.array([0.5, 5.0]), "c": many},
        styles,
        1.0,
        None,
        info,
    )
    assert info.identical == [] and set(info.legend) == {"a", "b", "c"}
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["a (n=2)", "b (n=2)", "c (n=10,000)"]
    x, y = lines["c (n=10,000)"].get_data()
    assert len(x) <= ECDF_POINTS + 1 and x[0] == 1.0 and x[-1] == 10_000.0 and y[-1] == 1.0
    assert np.allclose(y, x / 10_000)  # thinned, but every point drawn is on the ECDF
    plt.close(fig)
