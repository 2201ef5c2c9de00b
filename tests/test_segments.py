"""The compact segment log gives back exactly the segments the simulator recorded."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.sim.segments import SegmentLog
from hpcdispatch.system.allocation import Allocation


@st.composite
def recordings(draw):
    """Jobs started in some order, some of them granted more nodes later (in event order)."""
    n_jobs = draw(st.integers(1, 12))
    events = []  # (job, t, nodes, units)
    for job in draw(st.permutations(range(n_jobs))):
        nodes = sorted(draw(st.sets(st.integers(0, 30), min_size=1, max_size=4)))
        events.append(
            (job, float(draw(st.integers(0, 100))), nodes, [draw(st.integers(1, 3)) for _ in nodes])
        )
    for _ in range(draw(st.integers(0, 6))):  # growth grants, after every start
        job = draw(st.integers(0, n_jobs - 1))
        nodes = sorted(draw(st.sets(st.integers(31, 40), min_size=1, max_size=2)))
        events.append((job, 200.0 + len(events), nodes, [1] * len(nodes)))
    return n_jobs, events


@settings(deadline=None)
@given(recordings(), st.sampled_from([1, 2, 4096]))
def test_segment_log_round_trip(recording, batch):
    n_jobs, events = recording
    log = SegmentLog(batch=batch)  # flush after every segment, every other one, or only when read
    expected: dict[int, list[tuple[float, list[tuple[int, int]]]]] = {}
    for job, t, nodes, units in events:
        if job in expected:
            log.grow(job, t, Allocation(nodes, units))
        else:
            log.start(job, t, Allocation(nodes, units))
        expected.setdefault(job, []).append((t, list(zip(nodes, units))))
    assert len(log) == len(events)
    got = {job: [(t, a.pairs()) for t, a in segs] for job, segs in log.by_job().items()}
    assert got == expected and list(got) == list(expected)  # jobs in start order too
    end = np.arange(n_jobs, dtype=np.float64) + 1000.0
    rows = log.rows(end)
    flat = [
        (job, k, n, u, t)
        for job, segs in expected.items()
        for k, (t, pairs) in enumerate(segs)
        for n, u in pairs
    ]
    assert (
        list(
            zip(
                rows.job.tolist(),
                rows.segment.tolist(),
                rows.node.tolist(),
                rows.units.tolist(),
                rows.t_from.tolist(),
            )
        )
        == flat
    )
    assert rows.t_to.tolist() == [end[job] for job, *_ in flat]
