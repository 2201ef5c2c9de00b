"""Hand-computed schedules for every baseline dispatcher (3-10 jobs, worked out on paper).

Notation in the comments: ``Jk: submit, run (wall), units x cores``; nodes are numbered from 0.
"""

from __future__ import annotations

import pytest
from helpers import cores_system, job, placement, simulate, starts, system_of

from hpcdispatch.dispatchers import make_dispatcher

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)


def test_fifo_end_frees_resources_for_a_start_at_the_same_instant():
    # 2 nodes x 2 cores.  J1 takes both nodes until 10; J2 and J3 start exactly at 10;
    # J4 needs both nodes: node 1 is free at 13 but node 0 only at 15.
    system = cores_system(2, 2)
    jobs = [
        job(1, 0, 10, units=2, req=(2,)),
        job(2, 1, 5, units=1, req=(2,)),
        job(3, 2, 3, units=1, req=(2,)),
        job(4, 3, 4, units=2, req=(2,)),
    ]
    r = simulate(system, jobs, "fifo")
    assert starts(r) == {1: 0, 2: 10, 3: 10, 4: 15}
    assert placement(r) == {1: [(0, 1), (1, 1)], 2: [(0, 1)], 3: [(1, 1)], 4: [(0, 1), (1, 1)]}
    assert r.end[3] == 19


def _blocked_head_jobs(j3_wall: int):
    # 2 nodes x 2 cores. J1: 0, 10, 1x2 (node 0).  J2: 1, 5, 2x2 -> must wait for node 0 (t=10).
    # J3: 2, runs 2 s, wall-time j3_wall, 1x2 -> node 1 is free now.
    return [
        job(1, 0, 10, units=1, req=(2,)),
        job(2, 1, 5, units=2, req=(2,)),
        job(3, 2, 2, units=1, req=(2,), wall=j3_wall),
    ]


def test_fifo_never_overtakes_a_blocked_job():
    r = simulate(cores_system(2, 2), _blocked_head_jobs(2), "fifo")
    assert starts(r) == {1: 0, 2: 10, 3: 15}


def test_sjf_orders_by_planned_duration():
    # at t=2 the queue is {J2 (wall 5), J3 (wall 2)}: SJF tries J3 first, it fits on node 1.
    r = simulate(cores_system(2, 2), _blocked_head_jobs(2), "sjf")
    assert starts(r) == {1: 0, 3: 2, 2: 10}


def test_easy_backfills_a_job_that_ends_before_the_shadow_time():
    # head J2's shadow time is 10 (J1's planned end); J3 ends at 2 + 2 = 4 <= 10: backfilled.
    r = simulate(cores_system(2, 2), _blocked_head_jobs(2), "easy")
    assert starts(r) == {1: 0, 3: 2, 2: 10}
    info = [i for i in r.decisions["info"] if i.get("backfilled")]
    assert info[0]["shadow"] == 10 and info[0]["head"] == 2


def test_easy_refuses_a_job_that_would_delay_the_head():
    # J3 asks for 15 s: 2 + 15 > 10 and at the shadow time the head needs both nodes, so J3
    # (on node 1) would delay it: refused. J2 runs [10, 15), J3 then starts at 15.
    r = simulate(cores_system(2, 2), _blocked_head_jobs(15), "easy")
    assert starts(r) == {1: 0, 2: 10, 3: 15}


def test_easy_backfills_a_long_job_on_the_extra_nodes():
    # 3 nodes x 1 core. J1: 0, 10, 2 nodes (0, 1). J2: 1, 10, 2 nodes: blocked, shadow 10,
    # and at the shadow time 3 nodes are free for 2 needed: one *extra* node.
    # J3: 2, 100, 1 node: runs past the shadow time but only on the extra node 2 -> allowed.
    # J4: 3, 100, 1 node: no node is free now.
    jobs = [
        job(1, 0, 10, units=2),
        job(2, 1, 10, units=2),
        job(3, 2, 100, units=1),
        job(4, 3, 100, units=1),
    ]
    r = simulate(cores_system(3, 1), jobs, "easy")
    assert starts(r) == {1: 0, 3: 2, 2: 10, 4: 20}
    assert placement(r)[3] == [(2, 1)]


def _conservative_vs_easy_jobs():
    # 3 nodes x 1 core. J1: 0, 10, 2 nodes. J2: 1, 10, 2 nodes (reserved at 10).
    # J3: 2, 10, 3 nodes (reserved at 20, after J2). J4: 3, 100, 1 node.
    return [
        job(1, 0, 10, units=2),
        job(2, 1, 10, units=2),
        job(3, 2, 10, units=3),
        job(4, 3, 100, units=1),
    ]


def test_easy_only_protects_the_head():
    # EASY backfills J4 on node 2 at t=3 (the head J2 still fits at 10 on nodes 0-1), which
    # pushes J3 (3 nodes) back until J4 ends at 103.
    r = simulate(cores_system(3, 1), _conservative_vs_easy_jobs(), "easy")
    assert starts(r) == {1: 0, 4: 3, 2: 10, 3: 103}


def test_conservative_does_not_delay_any_earlier_reservation():
    # Conservative: J4 would overlap J3's reservation [20, 30) on all 3 nodes, so its
    # earliest slot is 30. Nobody ahead of it is delayed.
    r = simulate(cores_system(3, 1), _conservative_vs_easy_jobs(), "conservative")
    assert starts(r) == {1: 0, 2: 10, 3: 20, 4: 30}


def test_fifo_on_the_same_jobs():
    r = simulate(cores_system(3, 1), _conservative_vs_easy_jobs(), "fifo")
    assert starts(r) == {1: 0, 2: 10, 3: 20, 4: 30}


def test_conservative_backfills_without_delaying_reservations():
    # 2 nodes x 2 cores. J1: 0, 10, 1x2 (node 0). J2: 1, 10, 2x2 reserved [10, 20).
    # J3: 2, 5, 1x2: [2, 7) on node 1 ends before J2's reservation -> starts now.
    # J4: 3, 10, 1x2: at 7 it would overlap J2's reservation; earliest slot is 20.
    system = cores_system(2, 2)
    jobs = [
        job(1, 0, 10, units=1, req=(2,)),
        job(2, 1, 10, units=2, req=(2,)),
        job(3, 2, 5, units=1, req=(2,)),
        job(4, 3, 10, units=1, req=(2,)),
    ]
    r = simulate(system, jobs, "conservative")
    assert starts(r) == {1: 0, 3: 2, 2: 10, 4: 20}


def test_conservative_compresses_when_a_job_ends_early():
    # 2 nodes x 1 core. J1: 0, runs 5 but asked 10 (node 0). J2: 1, 10, 2 nodes: reserved at
    # 10. J1 ends at 5: the schedule is compressed and J2 starts at 5, not 10.
    # J3: 2, 20, 1 node: [2, 22) on node 1 would overlap J2's reservation: reserved at 20,
    # after compression at 15 (J2 ends at 15).
    jobs = [job(1, 0, 5, wall=10), job(2, 1, 10, units=2), job(3, 2, 20)]
    r = simulate(cores_system(2, 1), jobs, "conservative")
    assert starts(r) == {1: 0, 2: 5, 3: 15}


def test_walltime_kill_and_no_kill():
    # J1 runs 20 s but asked for 10: killed at 10, so J2 (needs the node) starts at 10.
    jobs = [job(1, 0, 20, wall=10), job(2, 1, 5)]
    r = simulate(cores_system(1, 1), jobs, "fifo")
    assert starts(r) == {1: 0, 2: 10}
    assert bool(r.killed[0]) and not bool(r.killed[1])
    r2 = simulate(cores_system(1, 1), jobs, "fifo", walltime_kill=False)
    assert starts(r2) == {1: 0, 2: 20}
    assert not r2.killed.any()


def test_first_fit_and_best_fit_choose_different_nodes():
    # 3 nodes x 4 cores. J1: 0, 5, 1x4 -> node 0. J2: 0, 100, 1x3 -> node 1 (node 0 is full;
    # best fit: nodes 1 and 2 tie, the lower index wins). J1 ends at 5: node 0 has 4 free,
    # node 1 has 1, node 2 has 4. J3: 10, 1x1: first fit takes node 0 (first with room), best
    # fit takes node 1 (nothing left after placement).
    system = cores_system(3, 4)
    jobs = [job(1, 0, 5, req=(4,)), job(2, 0, 100, req=(3,)), job(3, 10, 100, req=(1,))]
    ff = placement(simulate(system, jobs, "fifo:allocator=first-fit"))
    bf = placement(simulate(system, jobs, "fifo:allocator=best-fit"))
    assert ff == {1: [(0, 1)], 2: [(1, 1)], 3: [(0, 1)]}
    assert bf == {1: [(0, 1)], 2: [(1, 1)], 3: [(1, 1)]}


def test_best_fit_fills_the_fullest_node_first_with_several_units():
    # free before J3: node 0: 4, node 1: 1, node 2: 4 (as above). J3: 3 units x 1 core: best
    # fit puts one unit on node 1 (fullest), then two on node 0 (tie with node 2, lower index).
    system = cores_system(3, 4)
    jobs = [job(1, 0, 5, req=(4,)), job(2, 0, 100, req=(3,)), job(3, 10, 100, units=3, req=(1,))]
    assert placement(simulate(system, jobs, "fifo:allocator=best-fit"))[3] == [(0, 2), (1, 1)]
    assert placement(simulate(system, jobs, "fifo:allocator=first-fit"))[3] == [(0, 3)]


def test_best_fit_keeps_gpu_nodes_for_gpu_jobs():
    # node 0: 4 cores + 2 gpus, node 1: 4 cores. A CPU-only job: first fit takes node 0 (first);
    # best fit takes node 1 (less remaining capacity). Then a GPU job finds node 0 whole.
    system = system_of([(1, {"core": 4, "gpu": 2}), (1, {"core": 4})], ["core", "gpu"])
    jobs = [job(1, 0, 100, req=(4, 0)), job(2, 1, 100, req=(4, 1))]
    bf = simulate(system, jobs, "fifo:allocator=best-fit")
    assert starts(bf) == {1: 0, 2: 1} and placement(bf) == {1: [(1, 1)], 2: [(0, 1)]}
    ff = simulate(system, jobs, "fifo:allocator=first-fit")
    assert starts(ff) == {1: 0, 2: 100}


def test_units_are_spread_over_nodes_and_packed():
    # 2 nodes x 4 cores: 3 units of 2 cores -> 2 on node 0 and 1 on node 1 (first fit packs).
    r = simulate(cores_system(2, 4), [job(1, 0, 10, units=3, req=(2,))], "fifo")
    assert placement(r) == {1: [(0, 2), (1, 1)]}


def test_max_units_per_node_spreads_units():
    r = simulate(
        cores_system(3, 4), [job(1, 0, 10, units=3, req=(1,), max_units_per_node=1)], "fifo"
    )
    assert placement(r) == {1: [(0, 1), (1, 1), (2, 1)]}


@pytest.mark.parametrize("name", ["fifo", "sjf", "easy", "conservative"])
def test_dispatchers_are_deterministic(name):
    from hpcdispatch.system import load_system
    from hpcdispatch.workload import load_workload

    system = load_system("eurora")
    wl = load_workload("synthetic:lublin,jobs=300,seed=5,load=0.95", system)
    a = simulate(system, wl, make_dispatcher(name))
    b = simulate(system, wl, make_dispatcher(name))
    assert (a.start == b.start).all()
    assert placement(a) == placement(b)


def test_easy_backfills_a_job_that_ends_exactly_at_the_shadow_time_despite_float_rounding():
    # 3 nodes x 3 cores, planned durations 0.3 x run time. At t=88 A ends; J1 starts on node 0
    # and is expected to end at 88 + 7.8; the head H needs all three nodes, so its shadow time
    # is 88 + 7.8 = 95.8 (B, overdue, is expected at 89). C (planned 7.8) fits on node 1 and
    # is expected to end at 88 + 7.8 -- exactly the shadow time, so it must backfill. In
    # floats 95.8 - 88 < 7.8: comparing the planned duration with ``shadow - now`` refused it.
    from hpcdispatch.predictors import Predictor

    class Scaled(Predictor):
        name = "scaled"

        def predict(self, job, now):
            return 0.3 * job.run_time

    assert 88 + 0.3 * 26 - 88 < 0.3 * 26  # the rounding this test is about
    system = cores_system(3, 3)
    jobs = [
        job(1, 0, 88, units=2, req=(3,), wall=1000, max_units_per_node=1),  # A: nodes 0 and 1
        job(2, 0, 200, units=1, req=(3,), wall=1000),  # B: node 2, planned end 60 (overdue at 88)
        job(3, 1, 26, units=1, req=(3,), wall=1000),  # J1
        job(4, 2, 50, units=3, req=(3,), wall=1000, max_units_per_node=1),  # H: all three nodes
        job(5, 3, 26, units=1, req=(3,), wall=1000),  # C
    ]
    r = simulate(system, jobs, make_dispatcher("easy"), Scaled(), walltime_kill=False)
    s = starts(r)
    assert s[3] == 88 and s[5] == 88
    assert placement(r)[3] == [(0, 1)] and placement(r)[5] == [(1, 1)]


def test_best_fit_ties_go_to_the_lower_node_exactly():
    # maxcap (6 cores, 2 GPUs): after the first two jobs node 0 has (1, 2) free and node 1
    # (4, 1): both leave 1/6 + 2/2 = 4/6 + 1/2 = 7/6 -- a tie, so the third job goes to
    # node 0 (in floating point the two scores differed in their last bit and it went to 1)
    system = system_of([(2, {"core": 6, "gpu": 2})], ["core", "gpu"])
    jobs = [job(1, 0, 10, req=(5, 0)), job(2, 0, 10, req=(2, 1)), job(3, 0, 10, req=(1, 0))]
    for engine in ("python", "compiled"):
        r = simulate(system, jobs, "easy:allocator=best-fit", engine=engine)
        assert placement(r) == {1: [(0, 1)], 2: [(1, 1)], 3: [(0, 1)]}, (engine, placement(r))
