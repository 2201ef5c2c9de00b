"""Real traces at scale (marked slow; CI runs them).

- every trace of ../shared/traces: FIFO, SJF and EASY on the first 3,000 jobs with the default
  unit mapping, conservative on the first 3,000 jobs with one 1-core unit per processor
  (pooled planning); every schedule validated. Whole traces: benchmarks/all_traces.py.
- duration predictors on whole traces: last-two beats wall-time on mean absolute error
  (HPC2N, SDSC-SP2) and EASY with the oracle beats EASY with wall-times on HPC2N.
"""

from __future__ import annotations

import pytest
from helpers import all_traces, trace

from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload import SwfOptions, UnitMapping, load_workload, resolve_system

# whole traces: minutes each on a loaded machine, beyond the suite's default timeout
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ALL = all_traces() or [
    pytest.param(
        "",
        marks=pytest.mark.skip(
            reason="../shared/traces is absent (not beside this repository): no real trace to run"
        ),
    )
]


@pytest.mark.parametrize("name", ALL)
def test_every_trace_with_every_baseline(name):
    path = str(trace(name))
    system = resolve_system("auto", path)
    wl = load_workload(path, system, SwfOptions(max_jobs=3000))
    unit_wl = load_workload(
        path, system, SwfOptions(max_jobs=3000, units=UnitMapping(mode="processor"))
    )
    for spec, workload in (
        ("fifo", wl),
        ("sjf", wl),
        ("easy:allocator=best-fit", wl),
        ("conservative", unit_wl),
    ):
        out = run_simulation(
            system, workload, spec, options=SimulationOptions(record_decisions=False)
        )
        assert out.validation.ok, (name, spec, out.validation.describe())
        assert out.summary["started"] == len(workload)


@pytest.fixture(scope="module")
def hpc2n():
    path = str(trace("HPC2N-2002-2.2-cln.swf.gz"))
    system = resolve_system("auto", path)
    return system, load_workload(path, system)


def test_easy_with_the_oracle_beats_easy_with_walltimes_on_hpc2n(hpc2n):
    system, wl = hpc2n
    w = run_simulation(system, wl, "easy-W", options=SimulationOptions(record_decisions=False))
    r = run_simulation(system, wl, "easy-R", options=SimulationOptions(record_decisions=False))
    assert w.validation.ok and r.validation.ok
    assert r.summary["bounded_slowdown_mean"] < w.summary["bounded_slowdown_mean"]


@pytest.mark.parametrize("name", ["HPC2N-2002-2.2-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz"])
def test_last_two_has_a_lower_error_than_walltimes(name):
    path = str(trace(name))
    system = resolve_system("auto", path)
    wl = load_workload(path, system)
    w = run_simulation(system, wl, "fifo-W", options=SimulationOptions(record_decisions=False))
    l2 = run_simulation(system, wl, "fifo-L2", options=SimulationOptions(record_decisions=False))
    assert l2.summary["prediction_mae_s"] < w.summary["prediction_mae_s"]
    assert 0 < l2.summary["prediction_under_rate"] < 1
    assert l2.summary["prediction_time_s"] < 0.05 * l2.wall_seconds
