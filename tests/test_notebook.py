"""examples/notebook.ipynb runs top to bottom (nbclient, a real Jupyter kernel), and the
notebook views it shows are what they claim: HTML tables and matplotlib figures."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_example_notebook_runs_top_to_bottom(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_path = os.environ.get("PYTHONPATH")
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    if env_path:  # (a checkout's src/ on the path reaches the kernel through its environment)
        os.environ["PYTHONPATH"] = env_path
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    # the result, its summary, the comparison and two data frames render as tables
    assert sum("<table" in x for x in html) >= 4, len(html)
    assert any("hpcdispatch run" in x for x in html)
    assert any(">ms<" in x and "decision_time_mean" in x for x in html)  # units, in ms
    assert len(images) >= 4  # gantt, utilisation, qos ECDF, usage over time


def test_notebook_views_are_tables_and_figures():
    import matplotlib.figure

    import hpcdispatch as h

    system = h.load_system("machine-s")
    workload = h.load_workload("synthetic:lublin,jobs=120,seed=1", system)
    result = h.simulate(system, workload, "easy")
    assert "<table" in result._repr_html_() and "mean" not in result.__repr__()[:0]
    assert isinstance(result.gantt(), matplotlib.figure.Figure)
    assert isinstance(result.utilisation(), matplotlib.figure.Figure)
    summary = h.summarize(result)
    assert (
        isinstance(summary, dict) and "<td style='text-align:left'>ms</td>" in summary._repr_html_()
    )
    cmp = h.compare(system, workload, "fifo,easy:allocator=bestfit")
    assert list(cmp.results) == ["fifo", "easy (best-fit)"]
    table = cmp._repr_html_()
    assert "easy (best-fit)" in table and "120 jobs" in table
    assert isinstance(cmp.qos_ecdf(), matplotlib.figure.Figure)
    assert isinstance(cmp.usage_over_time(), matplotlib.figure.Figure)
    import matplotlib.pyplot as plt

    plt.close("all")
