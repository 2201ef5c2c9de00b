"""Deadline metrics (metrics/deadline.py) by hand: per-type counts and rates, the "best"
partition the compactness is normalised by (against exhaustive search), free-space
fragmentation over time."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.metrics import summarize
from hpcdispatch.metrics.deadline import best_pairwise_sum, free_fragmentation_of, pairwise_hops
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.system.grid import grid_of
from hpcdispatch.system.io import load_system
from hpcdispatch.system.partition import manhattan_grow
from hpcdispatch.validation import validate_result
from hpcdispatch.workload.deadline import deadline_job
from hpcdispatch.workload.job import AppSpec, Workload

GRID = load_system("hlrn2-grid")


def djob(i, submit, run, procs, deadline, est=None, behaviour=0):
    return deadline_job(GRID, i, submit, run, est, deadline, AppSpec(behaviour, "async", procs))


def run(jobs, dispatcher):
    result = Simulator(
        GRID,
        Workload(jobs, GRID.resources),
        make_dispatcher(dispatcher),
        None,
        SimulationOptions(engine="python"),
    ).run()
    assert validate_result(result).ok
    return result


def exhaustive_optimum(rows: int, cols: int) -> list[float]:
    """The least pairwise Manhattan sum of k nodes, k = 0 .. rows * cols, over every subset."""
    grid = grid_of(rows, cols)
    n = rows * cols
    d = np.asarray(grid.distance_matrix, dtype=np.float64)
    subsets = np.arange(2**n, dtype=np.int64)
    bits = ((subsets[:, None] >> np.arange(n)) & 1).astype(np.float32)
    sums = (bits * (bits @ d.astype(np.float32))).sum(axis=1) / 2
    k = bits.sum(axis=1).astype(np.int64)
    best = np.full(n + 1, np.inf)
    np.minimum.at(best, k, sums)
    return best.tolist()


@pytest.mark.parametrize("rows, cols", [(4, 4), (3, 6), (4, 5)])
def test_best_partition_is_the_true_optimum_on_small_meshes(rows, cols):
    optimum = exhaustive_optimum(rows, cols)
    grid = grid_of(rows, cols)
    got = [best_pairwise_sum(grid, k) for k in range(rows * cols + 1)]
    assert got == pytest.approx(optimum)


def test_best_partition_on_hlrn2_grid_matches_the_design_notes_brute_force():
    grid = GRID.topology.grid
    assert [best_pairwise_sum(grid, k) for k in range(1, 9)] == [0, 1, 4, 8, 16, 25, 38, 54]
    # the greedy growth from the centre alone is not the optimum at k = 4 (an L, 9 instead of 8)
    centre = 4 * 16 + 8
    assert pairwise_hops(grid, manhattan_grow(np.ones(128, bool), grid, centre, 4)) == 9
    # the whole machine is its own best partition
    assert best_pairwise_sum(grid, 128) == pairwise_hops(grid, np.arange(128))


def test_best_partition_never_above_a_brute_force_of_connected_shapes_k9():
    # k = 9 on 8 x 16: the 3 x 3 square, sum 72, is optimal among all 9-node subsets of a 4 x 4 corner
    grid = GRID.topology.grid
    window = [r * 16 + c for r in range(4) for c in range(4)]
    least = min(pairwise_hops(grid, np.array(s)) for s in itertools.combinations(window, 9))
    assert least == 72 == best_pairwise_sum(grid, 9)


def test_free_fragmentation_by_hand_on_a_2x3_mesh():
    # nodes 0 1 2 / 3 4 5. [0, 5): 1 and 4 busy -> free {0, 3} and {2, 5}: 1 - 2/4 = 0.5;
    # [5, 10): only 1 busy -> the 5 free nodes are connected: 0; [10, 12): every node busy,
    # nothing free: left out. (0.5 * 5 + 0 * 5) / 10 = 0.25
    grid = grid_of(2, 3)
    node = np.array([1, 4, 0, 1, 2, 3, 4, 5])
    t_from = np.array([0, 0, 10, 10, 10, 10, 10, 10], dtype=float)
    t_to = np.array([10, 5, 12, 12, 12, 12, 12, 12], dtype=float)
    assert free_fragmentation_of(grid, node, t_from, t_to) == pytest.approx(0.25)
    # everything busy all the time: nothing to fragment
    assert np.isnan(free_fragmentation_of(grid, np.arange(6), np.zeros(6), np.ones(6)))
    # one corner busy: no fragmentation
    assert free_fragmentation_of(grid, np.array([0]), np.array([0.0]), np.array([3.0])) == 0.0


def test_free_fragmentation_of_a_run_by_hand(monkeypatch):
    # the execution model without network costs (network=none): these type-0 jobs then run
    # exactly R wherever they are placed, as the hand computation below assumes
    from functools import partial

    from hpcdispatch.sim import execution

    monkeypatch.setattr(
        execution, "AppModelParams", partial(execution.AppModelParams, network="none")
    )
    # count-only takes the lowest free ids: job 1 rows 0-3 (nodes 0-63) over [0, 100), job 2
    # row 4 (64-79) over [0, 300). [0, 100): rows 5-7 free and connected: 0. [100, 300): rows
    # 0-3 and 5-7 free, cut by row 4: 1 - 64 / 112 = 3/7. Time-weighted: 3/7 * 200 / 300 = 2/7
    s = summarize(run([djob(1, 0, 100, 256, 1000), djob(2, 0, 300, 64, 1000)], "count-only"))
    assert s["free_fragmentation"] == pytest.approx(2 / 7)
    assert s["span_days"] == pytest.approx(300 / 86400)


def test_per_type_counts_and_rates_by_hand():
    jobs = [
        djob(1, 0, 1000, 512, 5000, behaviour=0),  # the whole machine until 1000: accepted
        djob(2, 10, 500, 4, 1500, behaviour=1),  # books [1000, 1500): accepted, on time
        djob(3, 20, 500, 4, 1499, behaviour=1),  # no window before 1499: rejected (count)
        djob(4, 30, 500, 4, 529, behaviour=2),  # 30 + 500 > 529: rejected (deadline)
        djob(5, 40, 200, 8, 2000, est=1200, behaviour=2),
    ]  # books [1200, 1400): accepted
    s = summarize(run(jobs, "manhattan"))
    assert (s["type0_submitted"], s["type0_accepted"], s["type0_on_time"]) == (1, 1, 1)
    assert (s["type1_submitted"], s["type1_accepted"], s["type1_rejected"], s["type1_on_time"]) == (
        2,
        1,
        1,
        1,
    )
    assert (s["type2_submitted"], s["type2_accepted"], s["type2_rejected"]) == (2, 1, 1)
    assert (
        s["type1_acceptance_rate"] == 0.5
        and s["type1_success_rate"] == 0.5
        and s["type1_cancel_rate"] == 0.0
    )
    assert s["type0_acceptance_rate"] == 1.0
    assert "type3_submitted" not in s  # no type-3 job: no type-3 columns
    assert sum(s[f"type{b}_submitted"] for b in range(3)) == s["submitted"] == 5


def test_per_type_cancellations_waiting_and_running_by_hand():
    # the U9 scenario under FIFO: job 3 (type 2) stopped running at its deadline, job 2 (type 3)
    # cancelled while waiting
    jobs = [
        djob(1, 0, 1000, 512, 5000, behaviour=1),
        djob(2, 5, 100, 4, 500, behaviour=3),
        djob(3, 0, 100, 4, 5000, behaviour=2)._replace(
            run_time=900, wall_time=900, deadline=1600.0
        ),
    ]
    s = summarize(run(jobs, "fifo"))
    assert (s["cancelled"], s["cancelled_waiting"], s["cancelled_running"], s["on_time"]) == (
        2,
        1,
        1,
        1,
    )
    assert (s["type2_cancelled_running"], s["type2_cancelled_waiting"], s["type2_cancel_rate"]) == (
        1,
        0,
        1.0,
    )
    assert (
        s["type3_cancelled_waiting"],
        s["type3_cancelled_running"],
        s["type3_success_rate"],
    ) == (1, 0, 0.0)
    assert (s["type1_on_time"], s["type1_cancel_rate"], s["type1_success_rate"]) == (1, 0.0, 1.0)
    assert s["cancel_rate"] == pytest.approx(2 / 3)


def test_line0_passed_counts_shape_rejections_by_hand():
    # hilbert: A takes curve positions 0-62, B 63 (until 100), C 64, E 65 (until 100), F 66-127.
    # D (2 nodes, R = 100, deadline 1000): at t = 1 nothing is free (count fails); at the
    # boundary t = 100 positions 63 and 65 are free (count passes) but not consecutive (shape
    # fails); the next boundary, 5000, is past the deadline: rejected at the shape stage
    jobs = [
        djob(1, 0, 5000, 252, 9000),
        djob(2, 0, 100, 4, 9000),
        djob(3, 0, 5000, 4, 9000),
        djob(4, 0, 100, 4, 9000),
        djob(5, 0, 5000, 248, 9000),
        djob(6, 1, 100, 8, 1000),
    ]
    r = run(jobs, "hilbert")
    assert r.reject_reason[5].startswith("shape")
    s = summarize(r)
    assert (s["accepted"], s["reject_reasons"], s["line0_passed"]) == (5, {"shape": 1}, 6)
    s = summarize(
        run(jobs, "count-only")
    )  # any two free nodes will do: positions 63 and 65 at t = 100
    assert (s["accepted"], s["line0_passed"]) == (6, 6)


# ---- free_fragmentation_of against a direct computation, interval by interval ---------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _direct_fragmentation(rows, cols, torus, node, t_from, t_to):
    grid = grid_of(rows, cols, torus)
    times = sorted(set(t_from) | set(t_to))
    num = den = 0.0
    for a, b in zip(times, times[1:]):
        busy = {v for v, f, t in zip(node, t_from, t_to) if f <= a and b <= t}
        free = [v for v in range(rows * cols) if v not in busy]
        if not free:
            continue
        largest, seen = 0, set()
        for v in free:  # flood fill
            if v in seen:
                continue
            comp, todo = {v}, [v]
            while todo:
                for m in grid.neighbours(todo.pop()).tolist():
                    if m not in busy and m not in comp:
                        comp.add(m)
                        todo.append(m)
            seen |= comp
            largest = max(largest, len(comp))
        num += (1 - largest / len(free)) * (b - a)
        den += b - a
    return num / den if den else float("nan")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.booleans(), st.data())
def test_free_fragmentation_equals_a_direct_computation(rows, cols, torus, data):
    n_rows = data.draw(st.integers(1, 8))
    node = [data.draw(st.integers(0, rows * cols - 1)) for _ in range(n_rows)]
    t_from = [data.draw(st.integers(0, 20)) for _ in range(n_rows)]
    t_to = [f + data.draw(st.integers(1, 20)) for f in t_from]
    got = free_fragmentation_of(
        grid_of(rows, cols, torus), np.array(node), np.array(t_from, float), np.array(t_to, float)
    )
    want = _direct_fragmentation(rows, cols, torus, node, t_from, t_to)
    assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(want)
    assert np.isnan(got) or 0.0 <= got < 1.0
