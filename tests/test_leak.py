"""The leak strategies (dispatchers/leak.py) by hand: the snake search and growth of Fig. 11
(U5), the fork rules of Figs. 12-13 (U6), admission (A18)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import Allocation, ForkRequest, RunningJob
from hpcdispatch.protocol.view import QueueView
from hpcdispatch.system.io import load_system
from hpcdispatch.system.model import NodeType, System, Topology
from hpcdispatch.system.partition import leak_grow
from hpcdispatch.workload.deadline import deadline_job
from hpcdispatch.workload.job import AppSpec, Workload

GRID4 = System(
    "grid-4x4", ("core",), (NodeType("node", 16, {"core": 1}),), Topology("grid2d", (4, 4))
)
HLRN = load_system("hlrn2-grid")


class FakeView:
    """What the leak reads of a DispatchView."""

    def __init__(self, system, busy, queue, now=0.0):
        self.system = system
        self.capacity = system.capacity
        free = system.capacity.copy()
        free[list(busy)] = 0
        self.free = free
        self.queue = QueueView({j.index: j for j in queue})
        self.requests = (
            np.array([j.unit_request for j in queue], dtype=np.int64) if queue else np.zeros((0, 1))
        )
        self.now = now
        self.running = {}


def _jobs(system, specs):
    jobs = [
        deadline_job(system, i + 1, 0, 100, 0.0, 1000.0, AppSpec(b, "async", n))
        for i, (b, n) in enumerate(specs)
    ]
    return Workload(jobs, system.resources).jobs


def _timed_jobs(specs):
    """One-process type-0 jobs of R = 100 s on GRID4 from ``(id, submit, deadline)``."""
    jobs = [
        deadline_job(GRID4, i, t, 100, float(t), d, AppSpec(0, "async", 1)) for i, t, d in specs
    ]
    return Workload(jobs, GRID4.resources).jobs


FIG11_BUSY = {0, 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 15}  # free: (1,2)=6, (2,1)=9, (2,2)=10, (3,2)=14


def test_fig11_snake_search_then_growth():
    """U5: from start node 0 the snake runs row 0 left to right (busy), row 1 right to left:
    node 7 busy, 6 free -- the first node; its only free neighbour 10 below; then 9 and 14 at once."""
    free = np.ones(16, bool)
    free[list(FIG11_BUSY)] = False
    assert GRID4.topology.grid.snake_order(0).tolist()[:8] == [0, 1, 2, 3, 7, 6, 5, 4]
    assert leak_grow(free, GRID4.topology.grid, 6, 4).tolist() == [6, 10, 9, 14]
    leak = make_dispatcher("leak")
    leak.setup(GRID4)
    (job,) = _jobs(GRID4, [(1, 4)])
    decision = leak.dispatch(FakeView(GRID4, FIG11_BUSY, [job]))
    assert [s.allocation.nodes.tolist() for s in decision.starts] == [[6, 9, 10, 14]]


def test_start_nodes_spread_jobs_over_the_rows():
    """A23: start nodes are the first nodes of rows 0, R/4, R/2, 3R/4 (0, 32, 64, 96 on the
    8 x 16 mesh), one per started job in turn."""
    leak = make_dispatcher("leak")
    leak.setup(HLRN)
    jobs = _jobs(HLRN, [(0, 4)] * 5)
    decision = leak.dispatch(FakeView(HLRN, set(), jobs))
    assert [s.allocation.nodes.tolist() for s in decision.starts] == [[0], [32], [64], [96], [1]]


def test_partial_start_and_the_noncontiguous_jump():
    """Contiguous: the job starts with what its free component offers (a partial start);
    leak-nc jumps along the snake to the next free node and grows there (Fig. 13)."""
    busy = FIG11_BUSY - {4}  # 4 is free too, but touches none of 6, 9, 10, 14
    (job,) = _jobs(GRID4, [(1, 6)])
    leak = make_dispatcher("leak")
    leak.setup(GRID4)
    assert leak.dispatch(FakeView(GRID4, busy, [job])).starts[0].allocation.nodes.tolist() == [
        6,
        9,
        10,
        14,
    ]
    nc = make_dispatcher("leak-nc")
    nc.setup(GRID4)
    assert nc.dispatch(FakeView(GRID4, busy, [job])).starts[0].allocation.nodes.tolist() == [
        4,
        6,
        9,
        10,
        14,
    ]


def test_partial_false_waits_for_the_whole_request():
    """partial=false: a job whose free component is too small does not start, and (FIFO)
    nobody behind it does either."""
    busy = FIG11_BUSY - {4}
    big, small = _jobs(GRID4, [(1, 6), (0, 1)])
    leak = make_dispatcher("leak:admission=queue,partial=false")
    leak.setup(GRID4)
    assert leak.dispatch(FakeView(GRID4, busy, [big, small])).starts == []
    leak = make_dispatcher("leak")
    leak.setup(GRID4)
    starts = leak.dispatch(FakeView(GRID4, busy, [big, small])).starts
    # the partial start takes 6, 9, 10, 14; the small job the next free node along the snake
    # from the next start node (4): row 1 from node 4 left to right -- node 4 itself
    assert [s.allocation.nodes.tolist() for s in starts] == [[6, 9, 10, 14], [4]]


def _running(job, nodes):
    nodes = np.asarray(sorted(nodes), dtype=np.int64)
    return RunningJob(
        job, 0.0, Allocation.trusted(nodes, np.ones(len(nodes), dtype=np.int64)), 100.0
    )


def _whole(busy):
    free = np.ones(16, bool)
    free[list(busy)] = False
    return free


@pytest.mark.parametrize("name", ["leak", "leak-nc"])
def test_forks_figs_12_13(name):
    """U6: a free neighbour of the parent's node first (lowest id); else a free neighbour of
    any node of the job, nearest the parent; else (leak-nc) the first free node along the snake
    from the job's start node; else refused."""
    leak = make_dispatcher(name)
    leak.setup(GRID4)
    (job,) = _jobs(GRID4, [(3, 3)])
    # Fig. 12: the parent on node 5; its neighbours 1, 4, 6, 9 -- 1 busy: node 4
    rj = _running(job, [5])
    assert leak.fork_node(rj, 5, _whole({1, 5})) == 4
    # a neighbour released earlier was taken by another job: the parent's neighbours are busy,
    # the job's nodes 5, 6, 7 have free neighbours 2 (2 hops from the parent) and 11 (3 hops)
    rj = _running(job, [5, 6, 7])
    busy = set(range(16)) - {2, 11}
    assert leak.fork_node(rj, 5, _whole(busy)) == 2
    # nothing next to the job: the contiguous leak refuses (the child shares its parent's
    # core), the non-contiguous one takes the first free node along the snake from node 0:
    # row 0, row 1 reversed, row 2, then row 3 reversed: 15 before 12
    busy = set(range(16)) - {12, 15}
    want = None if name == "leak" else 15
    assert leak.fork_node(rj, 5, _whole(busy)) == want
    # through the contract: one whole free node as an Allocation, or None
    view = FakeView(GRID4, busy, [])
    got = leak.on_resize(rj, ForkRequest(5), view)
    assert (got is None) if name == "leak" else got.nodes.tolist() == [15]
    assert leak.on_resize(rj, object(), view) is None  # a growth request: not the leak's


def test_admission_queue_accepts_and_queues():
    """admission=queue (the first build's A18): accepted unless the earliest start + R is
    after the deadline, whatever is free."""
    leak = make_dispatcher("leak:admission=queue")
    leak.setup(GRID4)
    (ok,) = _jobs(GRID4, [(0, 1)])
    late = deadline_job(GRID4, 9, 0, 100, 50.0, 149.0, AppSpec(0, "async", 1))
    full = FakeView(GRID4, set(range(16)), [])
    assert leak.admit(ok, full).accept
    answer = leak.admit(late, full)
    assert not answer.accept and answer.reason.startswith("deadline:")


def test_admission_free_node_is_fig10_without_a_queue():
    """The default (Fig. 10 as written): at the job's earliest start (its submission here)
    the first free node along the snake from the next start node is claimed; none free:
    rejected (line 7). Two jobs submitted at one instant with one free node: the first
    claims it, the second is rejected; the call of that instant starts the first there,
    and a fork at that instant cannot take a claimed node."""
    leak = make_dispatcher("leak")
    assert leak.admission == "free-node"
    leak.setup(GRID4)
    a, b = _jobs(GRID4, [(0, 1), (0, 1)])
    full = FakeView(GRID4, set(range(16)), [])
    answer = leak.admit(a, full)
    assert not answer.accept and answer.reason.startswith("count:")
    one_free = FakeView(GRID4, set(range(16)) - {9}, [a, b])
    assert leak.admit(a, one_free).accept
    assert leak._claims == {a.index: (9, 0)}
    # a fork of another running job must not take the claimed node 9
    (other,) = _jobs(GRID4, [(3, 1)])
    assert (
        leak.fork_node(_running(other, [8]), 8, _whole(set(range(16)) - {9}) & ~leak._claimed)
        is None
    )
    assert not leak.admit(b, one_free).accept  # 9 is claimed
    decision = leak.dispatch(FakeView(GRID4, set(range(16)) - {9}, [a]))
    assert [(s.job.id, s.allocation.nodes.tolist()) for s in decision.starts] == [(a.id, [9])]
    assert leak._claims == {} and not leak._claimed.any()
    late = deadline_job(GRID4, 9, 0, 100, 50.0, 149.0, AppSpec(0, "async", 1))
    assert leak.admit(late, FakeView(GRID4, set(), [])).reason.startswith("deadline:")


def test_admission_overbook_places_cores():
    """admission=overbook on a 2 x 2 grid of 4-core nodes: a job takes the free cores of the
    first node along the snake with a free core, then of its neighbours (breadth first),
    only as many as it has processes; with no free core anywhere, one core on the node with
    the fewest held cores (lowest id), time-shared."""
    grid = System(
        "grid-2x2", ("core",), (NodeType("node", 4, {"core": 4}),), Topology("grid2d", (2, 2))
    )
    leak = make_dispatcher("leak:admission=overbook")
    leak.setup(grid)
    tags = leak.get_tags()
    assert tags.per_core and not tags.forks and not tags.contiguous_grants
    six, two, one = _jobs(grid, [(0, 6), (0, 2), (0, 1)])
    view = FakeView(grid, set(), [six, two])
    view.free[0, 0] = 1  # node 0: 3 of its 4 cores held
    starts = leak.dispatch(view).starts
    # six: snake from node 0 (start nodes 0 and 2 on 2 rows): node 0 (1 core), then its
    # neighbours 1 and 2 (4 + 1 cores); two: snake from node 2 (its 3 free cores): 2
    assert [(s.allocation.nodes.tolist(), s.allocation.units.tolist()) for s in starts] == [
        ([0, 1, 2], [1, 4, 1]),
        ([2], [2]),
    ]
    full = FakeView(grid, set(), [one])
    full.free[:, 0] = 0
    leak._excess = {99: 0}  # a time-shared job already on node 0
    running = {99: object()}
    full.running = running
    (start,) = leak.dispatch(full).starts
    assert start.allocation.nodes.tolist() == [1] and start.allocation.units.tolist() == [1]


def test_deadline_aware_order_and_hopeless_jobs():
    """The options after the gates: ``order=edf`` takes ready jobs by deadline (no deadline
    last); ``skip_hopeless`` passes over a job that would not end by its deadline at its run
    time. At t = 950 (R = 100 for all): job 1 (deadline 1,000) is hopeless; job 4 (1,050)
    ends exactly at its deadline, which is on time, so it is not; job 5 has no deadline."""
    specs = [(1, 0, 1000.0), (2, 10, 3000.0), (3, 20, 2000.0), (4, 30, 1050.0), (5, 40, None)]
    jobs = _timed_jobs(specs)
    every = set(range(16))

    def started(spec, busy, queue=jobs):
        leak = make_dispatcher(spec)
        leak.setup(GRID4)
        return [s.job.id for s in leak.dispatch(FakeView(GRID4, busy, queue, now=950.0)).starts]

    assert started("leak:admission=queue", every - {5}) == [
        1
    ]  # FIFO, deadline-unaware: the hopeless job takes the node
    assert started("leak:admission=queue,order=edf", every - {5}) == [
        1
    ]  # it also has the earliest deadline
    assert started("leak:admission=queue,skip_hopeless=true", every - {5}) == [2]
    assert started("leak-nc:admission=queue,order=edf,skip_hopeless=true", every - {5}) == [
        4
    ]  # on time to the second
    assert started(
        "leak:admission=queue,order=edf,skip_hopeless=true", every - {5, 6, 7, 8, 9}
    ) == [4, 3, 2, 5]
    assert started("leak:admission=queue,skip_hopeless=true", every - {5, 6, 7, 8, 9}) == [
        2,
        3,
        4,
        5,
    ]
    assert started("leak:admission=queue,order=edf", every - {5, 6, 7, 8, 9}) == [1, 4, 3, 2, 5]
    with pytest.raises(ConfigError, match="order must be one of fifo, edf"):
        make_dispatcher("leak:admission=queue,order=lifo").setup(GRID4)


def test_deadline_checks_read_the_wall_time_not_the_run_time():
    """Admission and ``skip_hopeless`` judge a job by what a dispatcher may know, its wall time
    (R for a deadline job), never its true run time: a job that runs 100 s but asks for 200 s
    with a deadline 150 s after its earliest start is rejected, and skipped once queued."""
    (job,) = _jobs(GRID4, [(0, 1)])
    asks_more = job._replace(wall_time=200, deadline=150.0)
    leak = make_dispatcher("leak:admission=queue,skip_hopeless=true")
    leak.setup(GRID4)
    answer = leak.admit(asks_more, FakeView(GRID4, set(), []))
    assert not answer.accept and "+ 200 s" in answer.reason
    assert leak.dispatch(FakeView(GRID4, set(), [asks_more], now=0.0)).starts == []
    assert [
        s.job.id
        for s in leak.dispatch(
            FakeView(GRID4, set(), [asks_more._replace(wall_time=100)], now=0.0)
        ).starts
    ] == [asks_more.id]


def test_edf_order_is_kept_across_calls():
    """``order=edf`` keeps its sorted keys between calls: a job that left the queue is dropped
    when the walk meets it, a new arrival is inserted at its deadline's place."""
    specs = [(1, 0, 3000.0), (2, 10, 2000.0), (3, 500, 1500.0), (4, 900, 1200.0)]
    j1, j2, j3, j4 = _timed_jobs(specs)
    leak = make_dispatcher("leak:admission=queue,order=edf,skip_hopeless=true")
    leak.setup(GRID4)
    every = set(range(16))
    assert [
        s.job.id for s in leak.dispatch(FakeView(GRID4, every - {0}, [j1, j2], now=100.0)).starts
    ] == [2]
    # job 2 runs; 3 and 4 arrive with earlier deadlines than 1's; one node free: 4 first
    assert [
        s.job.id
        for s in leak.dispatch(FakeView(GRID4, every - {1}, [j1, j3, j4], now=950.0)).starts
    ] == [4]
    assert [
        s.job.id for s in leak.dispatch(FakeView(GRID4, every - {1, 2}, [j1, j3], now=960.0)).starts
    ] == [3, 1]
    assert [key[2] for key in leak._edf_order] == [
        j3.index,
        j1.index,
    ]  # 2 and 4 left: dropped when met


def test_deadline_aware_leak_in_a_whole_run():
    """The options through the simulator and the validator, 300 very-heavy jobs: the FIFO leak
    starts jobs in submission order and some of them already late at their start; with
    ``order=edf,skip_hopeless=true`` no start is late at the calibrated speed, and jobs start
    out of submission order."""
    from hpcdispatch.sim.options import SimulationOptions
    from hpcdispatch.sim.simulator import Simulator
    from hpcdispatch.validation import validate_result
    from hpcdispatch.workload.loader import load_workload

    wl = load_workload("synthetic:deadline,jobs=300,load=very-heavy,types=uniform,seed=1", HLRN)
    wall = np.array([j.wall_time for j in wl.jobs], dtype=float)
    deadline = np.array([j.deadline for j in wl.jobs], dtype=float)
    for spec, in_order, late_starts in (
        ("leak:admission=queue", True, True),
        ("leak-nc:admission=queue,order=edf,skip_hopeless=true", False, False),
    ):
        result = Simulator(
            HLRN, wl, make_dispatcher(spec), None, SimulationOptions(engine="python")
        ).run()
        assert validate_result(result).ok, spec
        started = np.flatnonzero(~np.isnan(result.start))  # workload order = submission order
        assert len(started) > 10, spec
        assert bool((np.diff(result.start[started]) >= 0).all()) == in_order, spec
        assert (
            bool((result.start[started] + wall[started] > deadline[started]).any()) == late_starts
        ), spec


def test_tags_say_what_the_validator_checks():
    assert make_dispatcher("leak").get_tags().contiguous_grants
    assert not make_dispatcher("leak-nc").get_tags().contiguous_grants
    assert (
        make_dispatcher("leak-nc").get_tags().forks
        and not make_dispatcher("manhattan").get_tags().forks
    )
