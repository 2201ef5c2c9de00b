"""ReleaseOrder: the flattened running-job holdings stay equal to a brute-force rebuild
through any sequence of starts, ends and growth, with lazy patching at arbitrary times."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.protocol.release_order import ReleaseOrder

N_NODES, N_RES = 6, 2


def segment(draw):
    nodes = sorted(draw(st.sets(st.integers(0, N_NODES - 1), min_size=1, max_size=3)))
    amounts = np.array(
        [[draw(st.integers(0, 5)) for _ in range(N_RES)] for _ in nodes], dtype=np.int64
    )
    return np.asarray(nodes, dtype=np.int64), amounts


@st.composite
def operations(draw):
    ops = []
    running: dict[int, float] = {}
    next_job = 0
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["start", "end", "grow", "look"]))
        if kind == "start" or not running:
            end = float(draw(st.integers(0, 8)))  # few distinct ends: many ties
            ops.append(("start", next_job, end, [segment(draw)]))
            running[next_job] = end
            next_job += 1
        elif kind == "end":
            job = draw(st.sampled_from(sorted(running)))
            ops.append(("end", job))
            del running[job]
        elif kind == "grow":
            job = draw(st.sampled_from(sorted(running)))
            ops.append(("grow", job, segment(draw)))
        else:
            ops.append(("look",))
    ops.append(("look",))
    return ops


def expected(held: dict[int, tuple[float, list]]):
    """Brute force: per end time, the per-node totals released by the jobs ending then."""
    by_end: dict[float, np.ndarray] = {}
    for end, segments in held.values():
        acc = by_end.setdefault(end, np.zeros((N_NODES, N_RES), dtype=np.int64))
        for nodes, amounts in segments:
            np.add.at(acc, nodes, amounts)
    return by_end


def observed(order: ReleaseOrder):
    ends, lengths, totals, nodes, columns = order.arrays()
    amounts = np.stack(columns, axis=1) if len(nodes) else np.zeros((0, N_RES), dtype=np.int64)
    assert (np.diff(ends) >= 0).all()
    assert lengths.sum() == len(nodes) == len(amounts)
    row_end = np.cumsum(lengths)
    for r in range(N_RES):
        assert np.array_equal(
            totals[r],
            np.add.reduceat(amounts[:, r], row_end - lengths) if len(nodes) else totals[r],
        )
    by_end: dict[float, np.ndarray] = {}
    row_end = np.cumsum(lengths)
    for k, end in enumerate(ends.tolist()):
        acc = by_end.setdefault(end, np.zeros((N_NODES, N_RES), dtype=np.int64))
        rows = slice(row_end[k] - lengths[k], row_end[k])
        np.add.at(acc, nodes[rows], amounts[rows])
    return by_end


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(operations(), st.sampled_from([0, 16]))
def test_release_order_matches_a_rebuild(ops, many):
    from unittest import mock

    from hpcdispatch.protocol import release_order

    with mock.patch.object(release_order, "_MANY", many):  # 0: the mask path, 16: slice by slice
        replay(ops)


def replay(ops):
    order = ReleaseOrder(N_RES)
    held: dict[int, tuple[float, list]] = {}
    for op in ops:
        if op[0] == "start":
            _, job, end, segments = op
            held[job] = (end, list(segments))
            order.add(job, end, held[job][1])
        elif op[0] == "end":
            order.remove(op[1])
            del held[op[1]]
        elif op[0] == "grow":
            end, segments = held[op[1]]
            segments.append(op[2])
            order.remove(op[1])
            order.add(op[1], end, segments)
        else:
            want, got = expected(held), observed(order)
            assert sorted(want) == sorted(got)
            for end in want:
                assert np.array_equal(want[end], got[end]), end
            assert len(order) == len(held)
