"""The run's vocabulary (``hpcdispatch.vocabulary``) and the places that must agree with it:
the compiled kernels' own integer constants, the Python simulator's heap priorities, the job
table's status texts and the cancel reasons a run records."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import Scaled, cores_system, job, simulate

from hpcdispatch.compiled import kernels
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.sim import simulator as simulator_module
from hpcdispatch.sim.result import STATUS_NAMES
from hpcdispatch.system.io import load_system
from hpcdispatch.vocabulary import CancelReason, EventKind, JobStatus
from hpcdispatch.workload.deadline import deadline_job
from hpcdispatch.workload.job import AppSpec, GrowthRequest, Workload


def test_job_status_codes_are_the_documented_ones():
    assert [(s.name, int(s)) for s in JobStatus] == [
        ("PENDING", 0),
        ("QUEUED", 1),
        ("RUNNING", 2),
        ("COMPLETED", 3),
        ("REJECTED", 4),
        ("CANCELLED", 5),
    ]


@pytest.mark.parametrize("name", ["PENDING", "QUEUED", "RUNNING", "COMPLETED"])
def test_kernel_status_constants_equal_the_enum(name):
    assert getattr(kernels, name) == JobStatus[name]


def test_kernels_spell_no_status_or_event_name_with_another_meaning():
    """A module-level constant of the kernels named like a status is that status; none is
    named like an event kind (the job columns are ``JF_SUBMIT``, ``JF_END``, ...) or ``DONE``."""
    constants = {k: v for k, v in vars(kernels).items() if k.isupper() and isinstance(v, int)}
    for name in set(constants) & set(JobStatus.__members__):
        assert constants[name] == JobStatus[name], name
    assert not set(constants) & set(EventKind.__members__)
    assert "DONE" not in constants
    assert (kernels.JF_SUBMIT, kernels.JF_END, kernels.NDONE) == (0, 6, 10)


def test_heap_priorities_order_an_instant():
    """Ends before submissions before resizes before wake-ups; an expired prediction, a
    deadline and a phase boundary run with the resizes, an interval tick with the wake-ups."""
    assert {k.name: k.heap_priority for k in EventKind} == {
        "END": 0,
        "SUBMIT": 1,
        "RESIZE": 2,
        "WAKEUP": 3,
        "REVISE": 2,
        "CANCEL": 2,
        "PHASE": 2,
        "TICK": 3,
    }


def _pushed(monkeypatch, run) -> list[tuple]:
    """Every entry the Python simulator pushes on its event heap while ``run()`` runs."""
    pushed: list[tuple] = []
    push = simulator_module._heappush

    def recording(heap, entry):
        pushed.append(entry)
        push(heap, entry)

    monkeypatch.setattr(simulator_module, "_heappush", recording)
    run()
    return pushed


def test_the_simulators_heap_entries_carry_their_kinds_priority(monkeypatch):
    grid = load_system("hlrn2-grid")

    def djob(i, submit, run, procs, deadline):
        return deadline_job(grid, i, submit, run, None, deadline, AppSpec(0, "async", procs))

    def deadline_run():  # ends, phases, deadlines (one waiting, one running) and ticks
        jobs = [
            djob(1, 0, 1000, 512, 5000),
            djob(2, 5, 100, 4, 500),
            djob(3, 0, 100, 4, 5000)._replace(run_time=900, wall_time=900, deadline=1600.0),
        ]
        Simulator(
            grid,
            Workload(jobs, grid.resources),
            make_dispatcher("fifo"),
            options=SimulationOptions(dispatch_interval=60.0),
        ).run()

    def booking_run():  # wake-ups (a booked start after the submission)
        jobs = [deadline_job(grid, 1, 0, 100, 200, 1000, AppSpec(0, "async", 4))]
        Simulator(grid, Workload(jobs, grid.resources), make_dispatcher("count-only")).run()

    def growth_run():  # resizes and expired predictions
        jobs = [
            job(1, 0, 100, growth=(GrowthRequest(after=10.0, units=1),)),
            job(2, 0, 50),
        ]
        simulate(
            cores_system(4, 1),
            jobs,
            "easy",
            Scaled(0.5),
            prediction_correction="ladder",
        )

    pushed = [
        e for run in (deadline_run, booking_run, growth_run) for e in _pushed(monkeypatch, run)
    ]
    kinds = {EventKind(kind) for _t, _prio, _seq, kind, _payload in pushed}
    for _t, prio, _seq, kind, _payload in pushed:
        assert prio == EventKind(kind).heap_priority, EventKind(kind)
    assert kinds == set(EventKind) - {EventKind.SUBMIT}  # (submissions come from the workload)


def test_status_texts_are_the_enum_names():
    assert STATUS_NAMES == {int(s): s.name.lower() for s in JobStatus}
    r = simulate(cores_system(1, 1), [job(1, 0, 10), job(2, 0, 5, wall=3)], "fifo")
    assert r.status.tolist() == [JobStatus.COMPLETED, JobStatus.COMPLETED]
    assert r.jobs_frame().status.tolist() == ["completed", "killed"]


def test_cancel_reasons_a_run_records_are_the_enums():
    grid = load_system("hlrn2-grid")
    jobs = [
        deadline_job(grid, 1, 0, 1000, None, 5000, AppSpec(0, "async", 512)),
        deadline_job(grid, 2, 5, 100, None, 500, AppSpec(0, "async", 4)),
    ]
    r = Simulator(grid, Workload(jobs, grid.resources), make_dispatcher("fifo")).run()
    assert r.status.tolist() == [JobStatus.COMPLETED, JobStatus.CANCELLED]
    assert r.cancel_reason == {1: CancelReason.DEADLINE_WAITING}
    assert np.isnan(r.start[1]) and r.end[1] == 500.0
