"""The availability profile's compiled search and compression take exactly the Python code's
decisions (``hpcdispatch.planning.profile.COMPILED = False`` forces the Python code)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from test_properties import SETTINGS, predictor_for, scenarios

import hpcdispatch.planning.profile as profile_module
from hpcdispatch.allocators import make_allocator
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.planning.profile import AvailabilityProfile
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.validation import validate_result

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

pytest.importorskip("numba")


@pytest.fixture
def python_only(monkeypatch):
    """Call ``python_only(True)`` to force the Python code for what follows."""

    def switch(on: bool) -> None:
        monkeypatch.setattr(profile_module, "COMPILED", not on)

    return switch


def _system(n_nodes: int, cores: int, gpus: int) -> System:
    return System(
        name="p",
        resources=("core", "gpu"),
        node_types=(NodeType("t", n_nodes, {"core": cores, "gpu": gpus}),),
    )


def random_profile(
    rng: np.random.Generator, system: System, node_level: bool
) -> AvailabilityProfile:
    """A profile with random running jobs' releases and a few random reservations on top."""
    cap = system.capacity
    n_nodes = cap.shape[0]
    used = np.minimum(rng.integers(0, cap + 1), cap)
    releases = []
    for node in range(n_nodes):
        if used[node].any():
            releases.append(
                (float(rng.integers(1, 60)), np.array([node]), used[node][None, :].copy())
            )
    prof = AvailabilityProfile(0.0, cap - used, releases, node_level=node_level)
    for _ in range(int(rng.integers(0, 6))):  # reservations where they fit at the moment
        node = int(rng.integers(0, n_nodes))
        start = float(rng.integers(1, 80))
        amounts = np.minimum(rng.integers(0, cap[node] + 1), cap[node])[None, :]
        end = start + float(rng.integers(1, 40))
        # only where it fits throughout (a real plan never over-books)
        times = prof.times
        nexts = np.append(times[1:], math.inf)
        window = prof._free[prof.lo : prof.hi][(times < end) & (nexts > start)]
        room = window.min(axis=0)[node if node_level else 0]
        if (room >= amounts[0]).all():
            prof.reserve(start, end, np.array([node]), amounts)
    return prof


@pytest.mark.parametrize("node_level", [True, False])
@pytest.mark.parametrize("allocator", ["first-fit", "best-fit"])
def test_compiled_earliest_equals_python_on_random_profiles(node_level, allocator, python_only):
    rng = np.random.default_rng(7)
    for case in range(150):
        system = _system(int(rng.integers(1, 7)), int(rng.integers(1, 9)), int(rng.integers(0, 3)))
        alloc = make_allocator(allocator, system)
        seed = int(rng.integers(0, 2**31))
        req = np.array([int(rng.integers(1, 9)), int(rng.integers(0, 2))], dtype=np.int64)
        units, mpn = int(rng.integers(1, 5)), int(rng.choice([0, 0, 1, 2]))
        duration = float(rng.integers(1, 50))
        before = float(rng.choice([math.inf, float(rng.integers(1, 90))]))
        answers = []
        for python in (False, True):
            python_only(python)
            prof = random_profile(np.random.default_rng(seed), system, node_level)
            found = prof.earliest(units, req, duration, alloc, mpn, before=before)
            answers.append(
                None
                if found is None
                else (found[0], None if found[1] is None else found[1].pairs())
            )
        assert answers[0] == answers[1], (case, answers)


@pytest.mark.parametrize("node_level", [True, False])
def test_not_before_finds_the_exact_earliest_start_not_the_next_segment_start(node_level):
    """``earliest(not_before=t0)`` is the first integer time >= t0 at which the job fits for
    its whole duration (brute force over every time, on the same allocator): ``t0`` itself
    counts even inside a segment. It used to skip to the next segment start after ``t0``,
    which let the CP priority rule start a job before an identical one taken earlier."""
    rng = np.random.default_rng(11)
    inside = 0
    for case in range(150):
        system = _system(int(rng.integers(1, 5)), int(rng.integers(1, 6)), 0)
        alloc = make_allocator("best-fit", system)
        prof = random_profile(
            np.random.default_rng(int(rng.integers(0, 2**31))), system, node_level
        )
        req = np.array([int(rng.integers(1, 6)), 0], dtype=np.int64)
        units, duration, t0 = (
            int(rng.integers(1, 4)),
            float(rng.integers(1, 30)),
            float(rng.integers(1, 20)),
        )
        expected = None
        for t in range(int(t0), 200):
            window = np.stack([prof.free_at(float(u)) for u in range(t, t + int(duration))]).min(
                axis=0
            )
            if node_level:
                fits = alloc.allocate(units, req, window, 0) is not None
            else:
                fits = bool((window[0] >= req * units).all())
            if fits:
                expected = float(t)
                break
        boundaries = set(prof.times.tolist())
        found = prof.earliest(units, req, duration, alloc, 0, not_before=t0)
        assert (None if found is None else found[0]) == expected, (case, found, expected)
        inside += found is not None and found[0] not in boundaries
    assert inside > 10  # many answers lay inside a segment (the case that used to fail)


@pytest.mark.parametrize("node_level", [True, False])
def test_min_free_is_the_least_free_capacity_over_the_interval(node_level):
    """``min_free(a, b)`` equals the element-wise minimum of ``free_at(t)`` over every integer
    ``t`` in ``[a, b)`` (the random profiles change only at integer times), with ``a`` and
    ``b`` on and between segment boundaries."""
    rng = np.random.default_rng(5)
    for case in range(200):
        system = _system(int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(0, 3)))
        prof = random_profile(
            np.random.default_rng(int(rng.integers(0, 2**31))), system, node_level
        )
        a = int(rng.integers(0, 100))
        b = a + int(rng.integers(1, 60))
        expected = np.stack([prof.free_at(float(t)) for t in range(a, b)]).min(axis=0)
        assert (prof.min_free(float(a), float(b)) == expected).all(), (case, a, b)


def _run(system, workload, allocator, predictor, kill, profile):
    dispatcher = make_dispatcher(f"conservative:profile={profile}", allocator=allocator)
    sim = Simulator(
        system,
        workload,
        dispatcher,
        predictor=predictor_for(predictor),
        options=SimulationOptions(walltime_kill=kill, engine="python"),
    )
    result = sim.run()
    return result, dispatcher


def _compiled_and_python(system, workload, allocator, predictor, kill, profile):
    """``((result, dispatcher) compiled, (result, dispatcher) Python)`` of the same run."""
    runs = []
    for python in (False, True):
        profile_module.COMPILED = not python
        try:
            runs.append(_run(system, workload, allocator, predictor, kill, profile))
        finally:
            profile_module.COMPILED = True
    return runs


@SETTINGS
@given(
    scenarios(max_jobs=30),
    hst.sampled_from(["first-fit", "best-fit"]),
    hst.sampled_from(["walltime", "oracle", "scaled:0.3", "scaled:1.7"]),
    hst.sampled_from(["auto", "node"]),
)
def test_compiled_compression_takes_the_python_decisions(scenario, allocator, predictor, profile):
    system, workload, kill = scenario
    (a, da), (b, db) = _compiled_and_python(system, workload, allocator, predictor, kill, profile)
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.end, b.end)
    ra, rb = a.allocation_rows(), b.allocation_rows()
    for field in ("job", "segment", "node", "units", "t_from", "t_to"):
        np.testing.assert_array_equal(getattr(ra, field), getattr(rb, field), err_msg=field)
    assert list(a.decisions["info"]) == list(b.decisions["info"])
    assert da.reservations() == db.reservations()
    assert validate_result(a).ok


@pytest.mark.parametrize("compiled", [True, False])
def test_hand_computed_compressions_on_one_core(compiled, monkeypatch):
    # 1 core, kills off, predictions = 1.7 x wall-time. J3 (t=3, runs 8, planned 13.6) starts
    # at 3; J4 (t=3, runs 5, planned 8.5) is reserved at 16.6; J1 (t=5, runs 3, planned 10.2)
    # at 25.1; J2 (t=7, runs 1, planned 1.7) at 35.3. J3 ends at 11: compression moves J4 to
    # 11, J1 to 19.5, J2 to 29.7; J4 ends at 16: J1 to 16, J2 to 26.2; J1 ends at 19: J2 to 19.
    # (A compiled split that did not copy the split segment's capacity left J2 at 25.1.)
    from hpcdispatch.workload.job import Job, Workload

    monkeypatch.setattr(profile_module, "COMPILED", compiled)
    system = System(name="one", resources=("core",), node_types=(NodeType("t", 1, {"core": 1}),))
    jobs = [
        Job(id=i, submit=s, run_time=r, wall_time=w, units=1, unit_request=(1,))
        for i, s, r, w in [(1, 5, 3, 6), (2, 7, 1, 1), (3, 3, 8, 8), (4, 3, 5, 5)]
    ]
    workload = Workload(jobs, system.resources)
    result, _ = _run(system, workload, "first-fit", "scaled:1.7", False, "auto")
    starts = {job.id: float(result.start[job.index]) for job in workload.jobs}
    assert starts == {3: 3.0, 4: 11.0, 1: 16.0, 2: 19.0}
    assert validate_result(result).ok


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_compiled_compression_on_long_pooled_queues(seed):
    # Long queues of pooled reservations (one core per unit), wall-times far above run times:
    # every end is early and compresses hundreds of reservations, most of which cannot move,
    # so the compiled pass skips starts that a smaller, shorter request already failed on
    # (kernels._known_failing_until). Its moves must be the Python loop's, one by one.
    from hpcdispatch.workload.job import Job, Workload

    rng = np.random.default_rng(seed)
    system = System(name="pool", resources=("core",), node_types=(NodeType("t", 4, {"core": 8}),))
    jobs = []
    t = 0.0
    for i in range(260):
        t += float(rng.integers(0, 40))
        run = float(rng.integers(1, 400))
        wall = run * float(rng.choice([1.0, 2.0, 5.0, 20.0]))
        jobs.append(
            Job(
                id=i + 1,
                submit=t,
                run_time=run,
                wall_time=wall,
                units=int(rng.choice([1, 1, 2, 4, 8, 16, 32])),
                unit_request=(1,),
            )
        )
    workload = Workload(jobs, system.resources)
    (a, da), (b, db) = _compiled_and_python(system, workload, "first-fit", "walltime", True, "auto")
    assert da.compressions > 100
    assert da._profile._log_base > 0  # the log of given-back intervals was trimmed on the way
    np.testing.assert_array_equal(a.start, b.start)
    assert da.reservations() == db.reservations()
    assert validate_result(a).ok


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seed", "load", "allocator"),
    [(1, 0.9, "first-fit"), (2, 0.9, "best-fit"), (3, 0.7, "first-fit")],
)
def test_compiled_compression_on_the_default_machine(seed, load, allocator):
    # The README default's shape: Lublin jobs on machine-s (128 nodes x 8 cores + 2 GPUs),
    # node-level planning, hundreds of compressions over long queues. The window minima run
    # over each segment's 128 x 2 values as one flat row; the schedule, allocation rows and
    # final reservations must be the Python loop's.
    from hpcdispatch.system.io import load_system
    from hpcdispatch.workload.loader import load_workload

    system = load_system("machine-s")
    workload = load_workload(f"synthetic:lublin,jobs=400,seed={seed},load={load}", system)
    (a, da), (b, db) = _compiled_and_python(system, workload, allocator, "walltime", True, "auto")
    assert da._profile.node_level
    assert da.compressions > 100
    np.testing.assert_array_equal(a.start, b.start)
    ra, rb = a.allocation_rows(), b.allocation_rows()
    for field in ("job", "segment", "node", "units", "t_from", "t_to"):
        np.testing.assert_array_equal(getattr(ra, field), getattr(rb, field), err_msg=field)
    assert da.reservations() == db.reservations()
    assert validate_result(a).ok


def test_the_search_passes_the_request_as_the_compression_does(monkeypatch):
    # AvailabilityProfile.earliest and the compression kernel both call
    # kernels.profile_earliest; with the same argument types a first run (cold numba cache)
    # compiles it once. A read-only request row (a view of the simulator's read-only
    # requests) made a second specialisation, about 2 s more on the first run after an
    # install. The kernel passes ``q_req[q]``: a writable C-contiguous int64 row.
    import numba

    kernels = profile_module._kernels()
    seen = []

    class Recorder:
        def __getattr__(self, name):
            return getattr(kernels, name)

        def profile_earliest(self, *args):
            seen.append(numba.typeof(args[5]))
            return kernels.profile_earliest(*args)

    monkeypatch.setattr(profile_module, "_KERNELS", Recorder())
    system = _system(3, 4, 1)
    requests = np.array([[2, 1], [1, 0]], dtype=np.int64)
    requests.flags.writeable = False  # as the simulator hands them over
    prof = AvailabilityProfile(0.0, system.capacity, [])
    found = prof.earliest(2, requests[0], 10.0, make_allocator("first-fit", system))
    assert found is not None and found[0] == 0.0
    kernel_row = numba.typeof(np.zeros((2, 2), dtype=np.int64)[0])
    assert seen == [kernel_row]
