"""Reports: sweep tables are the mean and standard deviation of the cells, optional metric
families appear exactly when the summaries carry them, the single-run Gantt chart and
utilisation over time are exact, report.html embeds every figure, the command line."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import cores_system
from sweeps import cli, summary, write_spec

from hpcdispatch.errors import ConfigError
from hpcdispatch.report import report_kind, write_report
from hpcdispatch.report.run import gantt_data, parse_range, usage_over_time
from hpcdispatch.report.sweep import (
    RunSet,
    _job_distributions,
    load_sweep_runs,
    write_runset_report,
)
from hpcdispatch.results.store import read_run
from hpcdispatch.runner import run_simulation
from hpcdispatch.sweep import LocalExecutor, load_sweep, run_sweep
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload

SPEC = """
name = "report"
systems = ["machine-s"]
dispatchers = ["fifo", "easy"]
predictors = ["W", "R"]
[[workloads]]
generator = "lublin"
jobs = 70
seeds = [1, 2, 3]
"""


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.srcs: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.srcs.append(a["src"])
        for key in ("href", "src"):
            if key in a and tag != "img":
                self.links.append(a[key])


def html_images(path: Path) -> list[bytes]:
    parser = _Images()
    parser.feed(path.read_text())
    assert all(link.startswith("data:") for link in parser.links), parser.links
    prefix = "data:image/png;base64,"
    assert all(s.startswith(prefix) for s in parser.srcs)
    return [base64.b64decode(s[len(prefix) :]) for s in parser.srcs]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("report-sweep")
    out = d / "out"
    run_sweep(load_sweep(write_spec(d, SPEC)), out, LocalExecutor(2))
    return out


@pytest.mark.slow
def test_sweep_tables_are_mean_and_std_over_seeds(sweep_dir, tmp_path):
    html = write_report(sweep_dir, tmp_path / "rep")
    rep = html.parent
    cells = summary(sweep_dir)
    qos = pd.read_csv(rep / "qos.csv")
    assert qos["run"].tolist() == ["fifo", "fifo-R", "easy", "easy-R"] and (qos["n"] == 3).all()
    for _, row in qos.iterrows():
        values = cells.loc[cells["run_label"] == row["run"], "wait_mean"].to_numpy()
        assert row["wait_mean_mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert row["wait_mean_std"] == pytest.approx(values.std(ddof=1), rel=1e-12)
    # the oracle predictor is exact: its accuracy is 1 everywhere, W over-estimates
    cost = pd.read_csv(rep / "cost.csv").set_index("run")
    assert (
        cost.loc["easy-R", "prediction_mae_s_mean"] == 0
        and cost.loc["easy", "prediction_mae_s_mean"] > 0
    )
    md = (rep / "qos.md").read_text()
    assert re.search(r"\| machine-s \| lublin-70j \| easy-R \| 3 \| [\d,.]+ ± [\d,.]+ \|", md), md
    expected_png = {
        "qos.png",
        "qos_ecdf.png",
        "resources.png",
        "cost.png",
        "decision_time.png",
        "prediction_accuracy.png",
    }
    assert {p.name for p in rep.glob("*.png")} == expected_png
    rs = load_sweep_runs(sweep_dir)  # the wait / bsld ECDFs pool every started job of the 3 seeds
    waits, bslds = _job_distributions(rs, rs.frame[rs.frame["status"] == "done"])
    assert {k: len(v) for k, v in waits.items()} == {
        k: 210 for k in ("fifo", "fifo-R", "easy", "easy-R")
    }
    assert all(np.all(v >= 1.0) for v in bslds.values()) and all(
        np.all(np.diff(v) >= 0) for v in waits.values()
    )
    assert not (
        rep / "outcomes.csv"
    ).exists()  # no acceptance/cancel/success columns in these summaries
    images = html_images(html)
    assert sorted(images) == sorted(p.read_bytes() for p in rep.glob("*.png"))
    text = (rep / "report.md").read_text()
    for name in expected_png:
        assert f"]({name})" in text
    assert pd.read_csv(rep / "cells.csv")["cell_id"].tolist() == cells["cell_id"].tolist()


def _synthetic(with_optional: bool) -> RunSet:
    rows = []
    for run, base in (("aucsched", 1.0), ("pcp", 2.0)):
        for seed in (1, 2, 3):
            r = {
                "status": "done",
                "label": f"{run}/{seed}",
                "system": "eurora",
                "workload": "w",
                "run": run,
                "error": None,
                "wait_mean": 100.0 * base + seed,
                "slowdown_mean": base + seed,
                "bounded_slowdown_mean": base,
                "utilization_core": 0.5 + 0.1 * seed,
                "decision_time_mean_s": 0.001,
                "utilization_gpu": 0.0,
                "prediction_under_rate": 0.0,
            }
            if with_optional:
                r.update(
                    fragmentation_mean=0.1 * seed * base,
                    spread_mean=1.0 + seed,
                    acceptance_rate=0.9 - 0.1 * seed,
                    cancel_rate=0.01 * seed,
                    success_rate=0.5 * base / seed,
                )
            rows.append(r)
    rows.append(
        {
            "status": "failed",
            "label": "pcp/4",
            "system": "eurora",
            "workload": "w",
            "run": "pcp",
            "error": "CP-SAT: model invalid",
            "error_type": "SolverError",
        }
    )
    return RunSet("synthetic", pd.DataFrame(rows), {}, [("cells", "7")])


@pytest.mark.slow
def test_optional_metric_families_are_reported_when_present(tmp_path):
    html = write_runset_report(_synthetic(True), tmp_path / "with")
    rep = html.parent
    outcomes = pd.read_csv(rep / "outcomes.csv").set_index("run")
    assert outcomes.loc["aucsched", "acceptance_rate_mean"] == pytest.approx(
        np.mean([0.8, 0.7, 0.6])
    )
    assert outcomes.loc["pcp", "success_rate_std"] == pytest.approx(
        np.std([1.0, 0.5, 1 / 3], ddof=1)
    )
    assert outcomes.loc["pcp", "n"] == 3  # the failed cell is not averaged in
    resources = pd.read_csv(rep / "resources.csv").set_index("run")
    assert resources.loc["pcp", "fragmentation_mean_mean"] == pytest.approx(0.4)
    assert resources.loc["aucsched", "spread_mean_mean"] == pytest.approx(3.0)
    header = (rep / "resources.md").read_text().splitlines()[0]
    assert (
        "core utilisation" in header and "fragmentation mean" in header and "spread mean" in header
    )
    assert {"outcomes.png", "resources.png", "qos.png", "cost.png"} <= {
        p.name for p in rep.glob("*.png")
    }
    assert "CP-SAT: model invalid" in (rep / "failed.md").read_text()
    page = html.read_text()
    assert "Job outcomes: acceptance, cancellation, success" in page and "Failed cells (1)" in page
    assert len(html_images(html)) == len(list(rep.glob("*.png")))

    html = write_runset_report(_synthetic(False), tmp_path / "without")
    rep = html.parent
    assert not (rep / "outcomes.csv").exists() and not (rep / "outcomes.png").exists()
    assert list(pd.read_csv(rep / "resources.csv").columns) == [
        "system",
        "workload",
        "run",
        "n",
        "utilization_core_mean",
        "utilization_core_std",
        "utilization_gpu_mean",
        "utilization_gpu_std",
    ]
    assert "Job outcomes" not in html.read_text()
    # all-zero metrics stay in the tables but get no empty panel: a line says so
    md = (rep / "report.md").read_text()
    assert "0 for every run, so not drawn: gpu utilisation." in md
    assert "0 for every run, so not drawn: under-estimated." in md
    assert "utilization_gpu_mean" in pd.read_csv(rep / "resources.csv").columns


def test_usage_over_time_by_hand():
    alloc = pd.DataFrame({"from": [0.0, 5.0, 10.0], "to": [10.0, 15.0, 20.0], "core": [4, 4, 2]})
    t, share = usage_over_time(alloc, "core", 8.0)
    assert t.tolist() == [0, 5, 10, 15, 20]
    assert share.tolist() == [0.5, 1.0, 0.75, 0.25, 0.0]


def test_gantt_lanes_never_overlap_and_cover_every_core_second(tmp_path):
    system = load_system("machine-s")
    wl = load_workload("synthetic:lublin,jobs=150,seed=4,load=1.0", system)
    out = run_simulation(system, wl, "easy:allocator=best-fit", out_dir=tmp_path / "run")
    run = read_run(tmp_path / "run")
    window = (float(out.summary["first_submit"]), float(out.summary["last_end"]))
    g = gantt_data(run.allocations, system, window, (0, system.n_nodes - 1))
    assert g.overlaps == 0 and g.resource == "core"
    r = g.rects
    assert ((r["lane"] >= 0) & (r["lane"] + r["lanes"] <= 8)).all()
    for node, sub in r.groupby("node"):
        for lane in range(8):
            on = sub[(sub["lane"] <= lane) & (sub["lane"] + sub["lanes"] > lane)].sort_values("x0")
            assert (on["x0"].to_numpy()[1:] >= on["x1"].to_numpy()[:-1]).all(), (node, lane)
    # area: every core-second of every allocation row is drawn once
    drawn = float((r["lanes"] * (r["x1"] - r["x0"])).sum())
    held = float(
        (run.allocations["core"] * (run.allocations["to"] - run.allocations["from"])).sum()
    )
    assert drawn == pytest.approx(held, rel=1e-12)
    # a window clips the rectangles
    mid = sum(window) / 2
    g2 = gantt_data(run.allocations, system, (mid, mid + 600), (3, 9))
    assert g2.rects.empty or ((g2.rects["x0"] >= mid) & (g2.rects["x1"] <= mid + 600)).all()
    assert g2.rects.empty or g2.rects["node"].between(3, 9).all()
    assert g2.lanes_per_node.tolist() == [8] * 7


@pytest.mark.slow
def test_single_run_report_and_command_line(tmp_path):
    system = cores_system(6, 4)
    wl = load_workload("synthetic:lublin,jobs=60,seed=2", system)
    run_dir = tmp_path / "run"
    run_simulation(system, wl, "sjf", out_dir=run_dir)
    assert report_kind(run_dir) == "run"
    p = cli("report", str(run_dir), "--window", "0:50000", "--nodes", "0:3")
    assert p.returncode == 0, p.stderr
    assert "run report:" in p.stdout
    rep = run_dir / "report"
    assert {p.name for p in rep.glob("*.png")} == {
        "gantt.png",
        "utilization_time.png",
        "wait_cdf.png",
        "decision_time.png",
        "prediction_accuracy.png",
    }
    table = pd.read_csv(rep / "summary.csv").set_index("metric")
    assert table.loc["jobs", "value"] == "60" and table.loc["valid", "value"] == "True"
    assert len(html_images(rep / "report.html")) == 5
    assert "nodes 0-3 of 6" in (rep / "report.md").read_text()
    again = cli("report", str(run_dir))  # like every writer: no silent overwrite
    assert again.returncode != 0 and "--force" in again.stderr and "Traceback" not in again.stderr
    assert cli("report", str(run_dir), "--force").returncode == 0
    bad = cli("report", str(run_dir), "--window", "50:10")
    assert bad.returncode == 2 and "START < END" in bad.stderr and "Traceback" not in bad.stderr, (
        bad.stderr
    )
    with pytest.raises(ConfigError, match="outside the system's nodes 0:5"):
        write_report(run_dir, nodes=(0, 99))
    with pytest.raises(ConfigError, match="must be START:END"):
        parse_range("a:b", "--window")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="neither a sweep directory"):
        write_report(tmp_path / "empty")


@pytest.mark.slow
def test_report_of_a_compare_folder(tmp_path):
    out = tmp_path / "cmp"
    p = cli(
        "compare", "-w", "synthetic:lublin,jobs=80,seed=5", "-d", "fifo,easy", "-o", str(out), "-q"
    )
    assert p.returncode == 0, p.stderr
    assert (out / "comparison.csv").is_file() and (
        out / "report.md"
    ).is_file()  # compare itself is unchanged
    assert report_kind(out) == "runs"
    html = write_report(out)
    qos = pd.read_csv(html.parent / "qos.csv")
    assert (
        qos["run"].tolist() == ["fifo", "easy"] and (qos["n"] == 1).all()
    )  # compare's order, not the names'
    key = re.compile(r'data-dispatcher="([^"]+)" data-colour="(#[0-9a-f]{6})"')
    assert (
        key.findall(html.read_text())
        == key.findall((out / "report.html").read_text())
        == [("fifo", "#1f77b4"), ("easy", "#ff7f0e")]
    )  # each dispatcher has one colour on both pages
    run_page = write_report(
        out / "easy"
    ).read_text()  # a run of the folder: its colour on the compare page
    assert (
        run_page.count('data-legend="{&quot;easy&quot;: &quot;#ff7f0e&quot;}"') == 3
    )  # wait, decision, accuracy
    cmp = pd.read_csv(out / "comparison.csv").set_index("label")
    assert qos.set_index("run").loc["fifo", "wait_mean_mean"] == pytest.approx(
        cmp.loc["fifo", "wait_mean"]
    )
    with pytest.raises(ConfigError, match="single run directory"):
        write_report(out, window=(0, 1))
    assert parse_range("3:5", "--nodes", int) == (3, 5)


@pytest.mark.slow
def test_a_deadline_sweep_report_opens_with_the_paper_panels(tmp_path):
    """A sweep of deadline workloads: its report starts with the Figs 14-18 panels, before the
    generic tables (quality of service, resources, outcomes, cost); other sweeps have none."""
    spec = (
        'name = "dl"\nsystems = ["auto"]\ndispatchers = ["count-only", "leak"]\n[simulation]\n'
        'record_decisions = false\n[[workloads]]\ngenerator = "deadline"\njobs = 20\nseeds = [1, 2]\n'
    )
    out = tmp_path / "out"
    run_sweep(load_sweep(write_spec(tmp_path, spec)), out, LocalExecutor(1))
    html = write_report(out)
    headings = re.findall(r"^## (.+)$", (html.parent / "report.md").read_text(), flags=re.M)
    assert headings[0] == "Deadline paper panels (Figs 14-18)", headings
    assert "Quality of service" in headings[1:]


@pytest.mark.slow
def test_report_refuses_a_run_that_does_not_validate(tmp_path):
    """A run whose summary.json was edited (or whose schedule breaks a rule) is refused by
    ``report`` -- of the folder and of the run alone -- with one line naming the run and the
    field, and nothing is written; the same runs untouched are reported."""
    import json

    from hpcdispatch.errors import ScheduleValidationError

    out = tmp_path / "cmp"
    p = cli(
        "compare", "-w", "synthetic:lublin,jobs=30,seed=5", "-d", "fifo,easy", "-o", str(out), "-q"
    )
    assert p.returncode == 0, p.stderr
    path = out / "easy" / "summary.json"
    honest = path.read_text()
    edited = json.loads(honest)
    edited["utilization_core"] = 0.99
    path.write_text(json.dumps(edited))
    for target in (out, out / "easy"):
        with pytest.raises(
            ScheduleValidationError, match=r"easy: INVALID: .*utilization_core is 0\.99"
        ):
            write_report(target)
        assert not (target / "report").exists()
    bad = cli("report", str(out))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "report refused" in bad.stderr and "utilization_core" in bad.stderr, bad.stderr
    path.write_text(honest)
    assert write_report(out).is_file()
