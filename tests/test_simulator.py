"""Simulator mechanics: event order, invalid decisions, dispatch-time charging, interval
invocation, wake-ups, admission, resize requests, stall detection."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers import cores_system, job, placement, simulate, starts, system_of, workload

from hpcdispatch.dispatchers import Dispatcher, Scratch, Tags
from hpcdispatch.errors import InvalidDecisionError, SimulationStalledError
from hpcdispatch.metrics import summarize
from hpcdispatch.protocol.decision import Admission, Decision, Start
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.system.allocation import Allocation
from hpcdispatch.workload.job import GrowthRequest


class Scripted(Dispatcher):
    """Returns whatever ``policy(view)`` returns (a test double)."""

    name = "scripted"

    def __init__(self, policy=None, allocator: str = "first-fit"):
        self.policy = policy
        self.allocator = allocator

    def _dispatch(self, view):
        return self.policy(view, self)


def greedy(view, disp):
    scratch = Scratch(view, disp._allocator)
    for j in view.queue:
        scratch.try_start(j)
    return scratch.starts


def run_raw(system, jobs, dispatcher, **opts):
    return Simulator(
        system, workload(jobs, system.resources), dispatcher, options=SimulationOptions(**opts)
    ).run()


# ---- invalid decisions -------------------------------------------------------------------


def test_over_allocation_is_refused_naming_dispatcher_and_job():
    def bad(view, disp):
        return [Start(j, Allocation([0], [1])) for j in view.queue]  # both on node 0 (1 core)

    with pytest.raises(InvalidDecisionError) as exc:
        run_raw(cores_system(2, 1), [job(1, 0, 5), job(2, 0, 5)], Scripted(bad))
    msg = str(exc.value)
    assert "scripted" in msg and "job 2" in msg and "node 0 has 0 core free" in msg


def test_wrong_unit_count_is_refused():
    def bad(view, disp):
        return [Start(j, Allocation([0], [1])) for j in view.queue]

    with pytest.raises(InvalidDecisionError, match="holds 1 units, the job requests 2"):
        run_raw(cores_system(2, 1), [job(7, 0, 5, units=2)], Scripted(bad))


def test_starting_a_job_twice_is_refused():
    def twice(view, disp):
        j = view.queue.head()
        return [Start(j, Allocation([0], [1])), Start(j, Allocation([1], [1]))]

    with pytest.raises(InvalidDecisionError, match="job 3.*already running"):
        run_raw(cores_system(2, 1), [job(3, 0, 5)], Scripted(twice))


def test_unsorted_or_duplicate_nodes_are_caught():
    with pytest.raises(ValueError, match="twice"):
        Allocation([1, 1], [1, 1])
    bad = Allocation.trusted(np.array([1, 0]), np.array([1, 1]))  # bypasses the checks

    def policy(view, disp):
        return [Start(view.queue.head(), bad)]

    with pytest.raises(InvalidDecisionError, match="unique and ascending"):
        run_raw(cores_system(2, 1), [job(1, 0, 5, units=2)], Scripted(policy))


def test_max_units_per_node_is_enforced():
    def policy(view, disp):
        return [Start(view.queue.head(), Allocation([0], [2]))]

    with pytest.raises(InvalidDecisionError, match="more than 1 unit"):
        run_raw(cores_system(2, 4), [job(1, 0, 5, units=2, max_units_per_node=1)], Scripted(policy))


@pytest.mark.parametrize(
    "alloc, units, maxpn, why",
    [
        (Allocation.trusted(np.array([5]), np.array([1])), 1, 0, "out of range"),
        (Allocation.trusted(np.array([-1]), np.array([1])), 1, 0, "out of range"),
        (Allocation.trusted(np.array([0]), np.array([0])), 0, 0, "non-positive"),
        (Allocation.trusted(np.array([0, 1]), np.array([0, 1])), 1, 0, "non-positive"),
        (Allocation([1], [3]), 2, 0, "holds 3 units, the job requests 2"),
        (Allocation([0, 1], [1, 1]), 3, 0, "holds 2 units, the job requests 3"),
        (Allocation([1], [2]), 2, 1, "more than 1 unit"),
        (Allocation([0, 1], [1, 2]), 3, 1, "more than 1 unit"),
        (Allocation([1], [3]), 3, 0, "node 1 has 2 core free, the allocation needs 3"),
        (Allocation([0, 1], [1, 3]), 4, 0, "node 1 has 2 core free, the allocation needs 3"),
    ],
)
def test_refused_allocations_name_the_problem_and_change_nothing(alloc, units, maxpn, why):
    # the single-node path (Python scalars) and the several-node path (numpy) say the same
    from hpcdispatch.sim.cluster import ClusterState

    state = ClusterState(cores_system(2, 2))
    before, total = state.free.copy(), list(state.free_total)
    out = state.take_checked(alloc, np.array([1]), units, maxpn)
    assert isinstance(out, str) and why in out
    assert (state.free == before).all() and state.free_total == total


def test_taken_amounts_are_returned_and_given_back():
    from hpcdispatch.sim.cluster import ClusterState

    state = ClusterState(system_of([(3, {"core": 4, "gpu": 2})], ("core", "gpu")))
    one = state.take_checked(Allocation([2], [2]), np.array([1, 1]), 2, 0)
    two = state.take_checked(Allocation([0, 1], [1, 2]), np.array([2, 0]), 3, 0)
    assert one.tolist() == [[2, 2]] and two.tolist() == [[2, 0], [4, 0]]
    assert state.free.tolist() == [[2, 2], [0, 2], [2, 0]] and state.free_total == [4, 4]
    state.give(np.array([2]), one)
    state.give(np.array([0, 1]), two)
    assert state.free.tolist() == [[4, 2]] * 3 and state.free_total == [12, 6]


def test_a_dispatcher_that_never_starts_anything_is_detected():
    with pytest.raises(SimulationStalledError, match="left 1 job"):
        run_raw(cores_system(1, 1), [job(1, 0, 5)], Scripted(lambda view, disp: []))


# ---- timing options ----------------------------------------------------------------------


def test_charge_dispatch_time_delays_starts_by_the_decision_time():
    def slow(view, disp):
        time.sleep(0.02)
        return greedy(view, disp)

    r = simulate(
        cores_system(2, 1),
        [job(1, 0, 10), job(2, 5, 10)],
        Scripted(slow),
        charge_dispatch_time=True,
    )
    elapsed = r.decisions["elapsed"]
    assert (elapsed >= 0.02).all()
    assert r.start[0] == pytest.approx(0 + elapsed[0])
    assert r.start[1] == pytest.approx(5 + elapsed[1])
    assert r.end[0] == pytest.approx(r.start[0] + 10)


def test_without_charging_starts_are_at_the_decision_time():
    def slow(view, disp):
        time.sleep(0.01)
        return greedy(view, disp)

    r = simulate(cores_system(2, 1), [job(1, 0, 10), job(2, 5, 10)], Scripted(slow))
    assert starts(r) == {1: 0, 2: 5}


def test_interval_only_dispatching():
    # called only every 10 s: a job submitted at 3 starts at 10, one submitted at 12 at 20.
    r = simulate(
        cores_system(2, 1),
        [job(1, 3, 4), job(2, 12, 4)],
        Scripted(greedy),
        dispatch_interval=10.0,
        dispatch_on_events=False,
    )
    assert starts(r) == {1: 10, 2: 20}


def test_wakeup_is_honoured():
    # a policy that starts a job only 5 s after its submission and asks to be woken then
    def delayed(view, disp):
        due = [j for j in view.queue if view.now >= j.submit + 5]
        scratch = Scratch(view, disp._allocator)
        for j in due:
            scratch.try_start(j)
        pending = [j.submit + 5 for j in view.queue if view.now < j.submit + 5]
        return Decision(scratch.starts, wakeup=min(pending) if pending else None)

    r = simulate(cores_system(2, 1), [job(1, 0, 3), job(2, 1, 3)], Scripted(delayed))
    assert starts(r) == {1: 5, 2: 6}


# ---- admission and resize ----------------------------------------------------------------


class RejectWide(Dispatcher):
    name = "reject-wide"
    tags = Tags(rejects=True)

    def _dispatch(self, view):
        return greedy(view, self)

    def admit(self, job, view):
        return Admission(False, "too wide") if job.units > 1 else Admission(True)


def test_admission_rejections_are_recorded():
    r = simulate(cores_system(2, 1), [job(1, 0, 5, units=2), job(2, 0, 5)], RejectWide())
    assert np.isnan(r.start[0]) and r.start[1] == 0
    assert r.reject_reason[0] == "too wide"
    assert summarize(r)["rejected"] == 1
    assert r.jobs_frame()["status"].tolist() == ["rejected", "completed"]
    assert r.jobs_frame()["reject_reason"].tolist() == ["too wide", ""]
    assert r.tags["rejects"] is True


def test_a_dispatcher_that_says_it_never_rejects_cannot_reject():
    class Silent(RejectWide):
        tags = Tags()

    with pytest.raises(
        InvalidDecisionError,
        match="job 1: rejected at submission, but its tags say it never rejects",
    ):
        simulate(cores_system(2, 1), [job(1, 0, 5, units=2), job(2, 0, 5)], Silent())

    class Mute(RejectWide):
        def admit(self, job, view):
            return Admission(False, "")

    with pytest.raises(InvalidDecisionError, match="job 1: rejected without a reason"):
        simulate(cores_system(2, 1), [job(1, 0, 5, units=2), job(2, 0, 5)], Mute())


class GrowFirstFit(Dispatcher):
    name = "grow"

    def __init__(self, grant: bool = True, allocator: str = "first-fit"):
        self.grant = grant
        self.allocator = allocator

    def _dispatch(self, view):
        return greedy(view, self)

    def on_resize(self, running, request, view):
        if not self.grant:
            return None
        return self.place(running.job._replace(units=request.units), view.free, view)


def test_granted_growth_holds_more_nodes_until_the_end():
    # 2 nodes x 1 core. J1 starts on node 0 and asks for 1 more unit at +5 (node 1).
    # J2 (submitted at 6) needs one node: both are busy until J1 ends at 20.
    j1 = job(1, 0, 20, growth=(GrowthRequest(after=5, units=1),))
    r = simulate(cores_system(2, 1), [j1, job(2, 6, 5)], GrowFirstFit())
    assert starts(r) == {1: 0, 2: 20}
    frame = r.allocations_frame()
    assert frame[frame.job_id == 1][["segment", "node", "from", "to"]].values.tolist() == [
        [0, 0, 0, 20],
        [1, 1, 5, 20],
    ]
    assert r.resize_log == [(5, 1, 1, True)]


def test_refused_growth_changes_nothing():
    j1 = job(1, 0, 20, growth=(GrowthRequest(after=5, units=1),))
    r = simulate(cores_system(2, 1), [j1, job(2, 6, 5)], GrowFirstFit(grant=False))
    assert starts(r) == {1: 0, 2: 6}
    assert r.resize_log == [(5, 1, 1, False)]


# ---- order and bookkeeping -------------------------------------------------------------------


def test_same_time_order_is_ends_then_submits_then_dispatch():
    seen = []

    def spy(view, disp):
        seen.append(
            (
                view.now,
                [j.id for j in view.ended_jobs],
                [j.id for j in view.new_jobs],
                dict(zip(view.system.resources, view.free_total)),
            )
        )
        return greedy(view, disp)

    simulate(cores_system(1, 1), [job(1, 0, 10), job(2, 10, 5)], Scripted(spy))
    # at t=10 job 1 has ended (the core is free) when the dispatcher sees job 2
    assert seen == [(0, [], [1], {"core": 1}), (10, [1], [2], {"core": 1})]


def test_dispatcher_is_called_only_when_something_happened_and_jobs_wait():
    r = simulate(cores_system(4, 1), [job(1, 0, 10), job(2, 3, 10)], "fifo")
    assert r.decisions["time"].tolist() == [0, 3]


def test_decision_log_and_summary():
    r = simulate(cores_system(1, 1), [job(1, 0, 10), job(2, 0, 10)], "fifo")
    s = summarize(r)
    assert s["jobs"] == 2 and s["started"] == 2 and s["makespan"] == 20
    assert s["wait_mean"] == 5 and s["utilization_core"] == 1.0
    assert placement(r) == {1: [(0, 1)], 2: [(0, 1)]}


def test_tables_and_metrics_of_a_grown_job_by_hand():
    # 4 nodes x 1 core. At 0 J1 takes node 0 and J2 (2 units) nodes 1, 2 (until 10); at 5 J1
    # grows by one unit onto node 3, the only free node, and holds both until 20.
    j1 = job(1, 0, 20, growth=(GrowthRequest(after=5, units=1),))
    r = simulate(cores_system(4, 1), [j1, job(2, 0, 10, units=2)], GrowFirstFit())
    frame = r.jobs_frame()
    assert frame["allocation"].tolist() == ["0:1 | 3:1", "1:1 2:1"]
    assert "allocation" not in r.jobs_frame(allocation_text=False).columns
    s = summarize(r)
    # J1: nodes {0, 3} -> 2 blocks, spread (3 - 0 + 1) / 2 = 2; J2: nodes {1, 2} -> 1 block, spread 1
    assert s["fragmentation_mean"] == pytest.approx(1.5) and s["spread_mean"] == pytest.approx(1.5)
    # core-seconds: J1 20 + 15, J2 2 x 10 = 55 over 4 cores x 20 s
    assert s["utilization_core"] == pytest.approx(55 / 80)
    assert s["theoretical_runtime_s"] == pytest.approx(55 / 4)
