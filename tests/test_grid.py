"""2-D grid geometry (system/grid.py): hand-computed values from the deadline design note
(U1 Hilbert orders, U5 snake order) and properties of distances, neighbours and XY routes."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcdispatch.errors import ConfigError
from hpcdispatch.system import NodeType, System, Topology, load_system
from hpcdispatch.system.grid import Grid, grid_of, hilbert_xy2d

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
shapes = st.tuples(st.integers(1, 12), st.integers(1, 12))


# ---- U1: Hilbert orders (node ids row-major) ---------------------------------------------


def test_hilbert_4x4_order_by_hand():
    # the classic curve: down the first column pair, across, and back up the last one
    assert grid_of(4, 4).hilbert_order.tolist() == [
        0,
        4,
        5,
        1,
        2,
        3,
        7,
        6,
        10,
        11,
        15,
        14,
        13,
        9,
        8,
        12,
    ]
    assert grid_of(4, 4).hilbert_position[[0, 4, 12]].tolist() == [0, 1, 15]


def test_hilbert_8x8_and_the_hlrn2_grid():
    g = grid_of(8, 8)
    o = g.hilbert_order
    assert sorted(o.tolist()) == list(range(64)) and o[0] == 0 and o[-1] == 56
    assert g.distance(o[:-1], o[1:]).tolist() == [1] * 63
    g = grid_of(8, 16)  # hlrn2-grid: the curve of the 16 x 16 square, rows on its first axis
    assert g.hilbert_side == 16
    assert g.hilbert_order[:8].tolist() == [0, 16, 17, 1, 2, 3, 19, 18]
    assert g.hilbert_order[-1] == 120 and g.hilbert_jumps == 0
    g = grid_of(16, 8)  # the shorter side (now the columns) goes first: no jump either
    assert g.hilbert_order[-1] == 71 and g.hilbert_jumps == 0


def test_hilbert_jumps_on_a_non_square_embedding():
    g = grid_of(12, 10)  # in a 16 x 16 square: the curve leaves the grid and comes back
    assert g.hilbert_jumps == 3
    o, jumps = g.hilbert_order, g.hilbert_jump_positions
    assert (g.distance(o[jumps], o[jumps + 1]) > 1).all()
    assert (np.delete(g.distance(o[:-1], o[1:]), jumps) == 1).all()


def skilling_rank(x0: int, x1: int, bits: int) -> int:
    """Slurm's hilbert_slurm.c way, written independently for two axes: Skilling's
    AxestoTranspose, then the bits interleaved (axis 0 first) into one rank."""
    x = [x0, x1]
    q = 1 << (bits - 1)
    while q > 1:
        p = q - 1
        for i in range(2):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    x[1] ^= x[0]
    t, q = 0, 1 << (bits - 1)
    while q > 1:
        if x[1] & q:
            t ^= q - 1
        q >>= 1
    x = [v ^ t for v in x]
    rank = 0
    for b in range(bits - 1, -1, -1):
        rank = (rank << 2) | ((x[0] >> b & 1) << 1) | (x[1] >> b & 1)
    return rank


@PROPS
@given(shapes)
def test_hilbert_order_is_slurms_skilling_rank_in_the_enclosing_square(shape):
    rows, cols = shape
    g = grid_of(rows, cols)
    bits = max(1, (g.hilbert_side - 1).bit_length())
    ranks = []
    for node in range(g.n_nodes):
        r, c = divmod(node, cols)
        short, long_ = (r, c) if rows <= cols else (c, r)
        ranks.append(skilling_rank(short, long_, bits))
    assert np.argsort(ranks, kind="stable").tolist() == g.hilbert_order.tolist()


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (8, 8), (8, 16), (16, 8), (12, 10)])
def test_slurms_32_wide_cube_swaps_the_axes_when_5_minus_k_is_odd(shape):
    rows, cols = shape
    g = grid_of(rows, cols)
    k = (g.hilbert_side - 1).bit_length()
    coords = [divmod(node, cols) for node in range(g.n_nodes)]
    short_long = [(r, c) if rows <= cols else (c, r) for r, c in coords]
    slurm = np.argsort([skilling_rank(x, y, 5) for x, y in short_long], kind="stable")
    x, y = np.array(short_long).T
    swapped = np.argsort(hilbert_xy2d(g.hilbert_side, y, x), kind="stable")
    assert slurm.tolist() == (swapped if (5 - k) % 2 else g.hilbert_order).tolist()
    if shape == (8, 16):
        assert len(g.jump_positions(slurm)) == 1  # why we take the grid's own enclosing square


@PROPS
@given(shapes, st.booleans())
def test_hilbert_order_is_a_permutation(shape, torus):
    g = grid_of(*shape, torus)
    assert sorted(g.hilbert_order.tolist()) == list(range(g.n_nodes))
    assert (g.hilbert_position[g.hilbert_order] == np.arange(g.n_nodes)).all()
    assert g.hilbert_order[0] == 0  # the curve starts in the corner (0, 0)


@PROPS
@given(st.integers(0, 5), st.booleans())
def test_hilbert_on_a_power_of_two_square_never_jumps(k, torus):
    g = grid_of(2**k, 2**k, torus)
    o = g.hilbert_order
    assert g.hilbert_jumps == 0
    assert (g.distance(o[:-1], o[1:]) == 1).all()


def test_gilbert_curve_by_hand():
    g = grid_of(12, 10)  # Slurm's curve jumps 3 times here, the generalised one never
    assert len(g.jump_positions(g.gilbert_order)) == 0
    # 3 x 4 (traced by hand through the recursion): a U over rows 0-1 of columns 0-1, row 2
    # left to right, a U back up over columns 3-2 to (0, 3); consecutive cells always neighbours
    assert grid_of(3, 4).gilbert_order.tolist() == [0, 1, 5, 4, 8, 9, 10, 11, 7, 6, 2, 3]
    g = grid_of(4, 5)  # longer side odd, shorter even: one diagonal step
    o, jumps = g.gilbert_order, g.jump_positions(g.gilbert_order)
    assert len(jumps) == 1
    assert np.abs(g.coords[o[jumps[0]]] - g.coords[o[jumps[0] + 1]]).tolist() == [1, 1]


@PROPS
@given(shapes)
def test_gilbert_is_a_permutation_with_at_most_one_diagonal_step(shape):
    rows, cols = shape
    g = grid_of(rows, cols)
    o = g.gilbert_order
    assert sorted(o.tolist()) == list(range(g.n_nodes)) and o[0] == 0
    jumps = g.jump_positions(o)
    long_, short = max(shape), min(shape)
    assert len(jumps) == (1 if long_ % 2 == 1 and short % 2 == 0 and short > 2 else 0)
    assert all(np.abs(g.coords[o[p]] - g.coords[o[p + 1]]).tolist() == [1, 1] for p in jumps)


def test_hilbert_xy2d_needs_a_power_of_two():
    # a 2 x 2 square: (0,0) -> (0,1) -> (1,1) -> (1,0); the orientation alternates with the level
    assert hilbert_xy2d(2, np.array([0, 1, 1, 0]), np.array([0, 0, 1, 1])).tolist() == [0, 3, 2, 1]
    assert hilbert_xy2d(4, np.array([0, 1, 3]), np.array([0, 0, 0])).tolist() == [0, 1, 15]
    with pytest.raises(ValueError, match="power of two"):
        hilbert_xy2d(6, np.array([0]), np.array([0]))


# ---- U5: the snake ----------------------------------------------------------------------


def test_snake_from_node_0_on_8x16():
    s = grid_of(8, 16).snake_order(0)
    assert s[:32].tolist() == list(range(16)) + list(range(31, 15, -1))
    assert s[32:34].tolist() == [32, 33] and s[-1] == 112  # the last row runs right to left
    assert sorted(s.tolist()) == list(range(128))


def test_snake_from_other_start_nodes():
    g = grid_of(8, 16)
    s = g.snake_order(32)  # row 2, as the leak's second start node: row 2 left to right, row 3 back
    assert s[:18].tolist() == list(range(32, 48)) + [63, 62]
    assert s[96:98].tolist() == [0, 1] and s[-1] == 16  # wraps to row 0 after row 7
    s = grid_of(3, 4).snake_order(
        6
    )  # mid-row: (1, 2) -> (1, 3), row 2 back, row 0, then (1, 0), (1, 1)
    assert s.tolist() == [6, 7, 11, 10, 9, 8, 0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="not a node"):
        g.snake_order(128)


def test_figure_11_first_node_comes_from_the_snake():
    # 4 x 4: row 0 busy, (1,3), (1,1), (2,3) busy; (1,2), (2,2), (2,1), (3,2) free, the rest busy
    free = np.zeros(16, dtype=bool)
    free[[6, 10, 9, 14]] = True
    s = grid_of(4, 4).snake_order(0)
    assert s[:8].tolist() == [0, 1, 2, 3, 7, 6, 5, 4]
    assert int(s[free[s]][0]) == 6  # row 1 scanned right to left: (1,3) busy, (1,2) free


# ---- distances, neighbours, links, routes -------------------------------------------------


def test_distances_by_hand():
    mesh, torus = grid_of(8, 16), grid_of(8, 16, torus=True)
    assert mesh.distance(0, 127) == 7 + 15 and torus.distance(0, 127) == 1 + 1
    assert torus.distance(0, 8) == 8 and torus.distance(0, 9) == 7  # half-way round; then back
    assert mesh.pairwise_sum([0, 1, 16, 17]) == 8
    assert mesh.distance_matrix[3, 35] == 2 and mesh.distance_matrix.shape == (128, 128)


def test_neighbours_by_hand():
    g = grid_of(3, 4)
    assert g.neighbours(0).tolist() == [1, 4] and g.neighbours(5).tolist() == [1, 4, 6, 9]
    assert g.neighbour_table[11].tolist() == [7, 10, -1, -1]
    t = grid_of(3, 4, torus=True)
    assert t.neighbours(0).tolist() == [1, 3, 4, 8]
    assert grid_of(2, 4, torus=True).neighbours(0).tolist() == [1, 3, 4]  # no wrap on a 2-long axis
    assert grid_of(1, 1).neighbours(0).tolist() == []


def test_links_and_xy_routes_by_hand():
    g = grid_of(8, 16)
    assert g.n_links == 8 * 15 + 16 * 7 == len(g.links)
    # 0 -> 35 = (2, 3): along row 0 to column 3 (links 0, 1, 2), then down column 3:
    # vertical links are numbered after the 120 horizontal ones, row by row: 120 + r * 16 + c
    assert g.route_links(0, 35).tolist() == [0, 1, 2, 120 + 3, 120 + 16 + 3]
    assert g.route_nodes(0, 35).tolist() == [0, 1, 2, 3, 19, 35]
    assert g.route_nodes(35, 0).tolist() == [35, 34, 33, 32, 16, 0]  # X first on the way back too
    assert g.route_links(5, 5).tolist() == []
    t = grid_of(4, 4, torus=True)  # 4 horizontal links per row, then 4 vertical per row pair
    assert (
        t.n_links == 32 and t.links[3].tolist() == [3, 0] and t.links[16 + 12].tolist() == [12, 0]
    )
    assert t.route_nodes(0, 3).tolist() == [0, 3] and t.route_links(0, 3).tolist() == [3]
    r = t.routes([0], [3])
    assert r.forward.tolist() == [False]  # the wrap link 3 -> 0 crossed backwards
    assert t.route_nodes(0, 2).tolist() == [0, 1, 2]  # a tie (2 either way): the positive way
    assert t.route_nodes(0, 10).tolist() == [0, 1, 2, 6, 10]
    assert t.route_nodes(0, 12).tolist() == [0, 12]  # 1 hop up through the wrap link


@PROPS
@given(shapes, st.booleans(), st.data())
def test_distance_is_a_metric(shape, torus, data):
    g = grid_of(*shape, torus)
    node = st.integers(0, g.n_nodes - 1)
    a, b, c = data.draw(node), data.draw(node), data.draw(node)
    assert g.distance(a, b) == g.distance(b, a)
    assert (g.distance(a, b) == 0) == (a == b)
    assert g.distance(a, c) <= g.distance(a, b) + g.distance(b, c)
    assert g.distance(a, b) <= grid_of(*shape).distance(a, b)  # wrap links only shorten
    d = g.distance_matrix
    assert (d == d.T).all() and (np.diag(d) == 0).all()


def bfs_distances(g: Grid, start: int) -> list[int]:
    """Hop counts over the neighbour lists, written without the distance formula."""
    dist = [-1] * g.n_nodes
    dist[start] = 0
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v in g.neighbours(u).tolist():
            if dist[v] < 0:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


@PROPS
@given(shapes, st.booleans(), st.data())
def test_neighbours_links_and_distances_agree(shape, torus, data):
    g = grid_of(*shape, torus)
    start = data.draw(st.integers(0, g.n_nodes - 1))
    assert bfs_distances(g, start) == g.distance(start, np.arange(g.n_nodes)).tolist()
    indptr, indices = g.neighbour_csr
    pairs = {(u, int(v)) for u in range(g.n_nodes) for v in indices[indptr[u] : indptr[u + 1]]}
    assert all((v, u) in pairs for u, v in pairs)  # symmetric
    ends = {tuple(sorted(e)) for e in g.links.tolist()}
    assert len(ends) == g.n_links  # no link twice
    assert ends == {tuple(sorted(p)) for p in pairs}  # a link between every pair of neighbours
    rows, cols = shape
    wraps = (cols if torus and rows >= 3 else 0) + (
        rows if torus and cols >= 3 else 0
    )  # one per line round
    assert g.n_links == rows * (cols - 1) + cols * (rows - 1) + wraps


@PROPS
@given(
    shapes,
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 143), st.integers(0, 143)), min_size=1, max_size=8),
)
def test_xy_routes(shape, torus, pairs):
    g = grid_of(*shape, torus)
    src = np.array([a % g.n_nodes for a, _ in pairs])
    dst = np.array([b % g.n_nodes for _, b in pairs])
    routes = g.routes(src, dst)
    assert (np.diff(routes.indptr) == g.distance(src, dst)).all()  # route length == distance
    for i, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
        links = routes.of(i)
        assert links.tolist() == g.route_links(a, b).tolist()  # vectorised == one by one
        path = g.route_nodes(a, b)
        assert path[0] == a and path[-1] == b and len(path) == len(links) + 1
        assert (g.distance(path[:-1], path[1:]) == 1).all()
        ends = g.links[links]
        assert all(
            set(e) == {u, v}
            for e, u, v in zip(ends.tolist(), path[:-1].tolist(), path[1:].tolist())
        )
        r, c = path // g.cols, path % g.cols
        moves_row = r[1:] != r[:-1]
        # X first: once the route moves along a column (row changes), the column never changes
        if moves_row.any():
            first = int(np.argmax(moves_row))
            assert (c[first:] == b % g.cols).all() and (r[: first + 1] == a // g.cols).all()


def test_grids_are_cached_and_read_only():
    assert grid_of(8, 16) is grid_of(8, 16) and grid_of(8, 16) is not grid_of(8, 16, True)
    with pytest.raises(ValueError):
        grid_of(8, 16).coords[0, 0] = 5
    with pytest.raises(ValueError, match="rows must be a positive integer"):
        Grid(0, 3)


# ---- the topology in the system model and TOML ---------------------------------------------


def test_topology_hands_out_its_grid():
    s = System(
        "t", ("core",), (NodeType("n", 12, {"core": 1}),), topology=Topology("torus2d", (3, 4))
    )
    assert s.topology.grid is grid_of(3, 4, True) and s.topology.grid.kind == "torus2d"
    assert s.topology.coordinates(12)[7].tolist() == [1, 3]
    with pytest.raises(ConfigError, match="not a 2-D grid"):
        _ = Topology().grid
    with pytest.raises(ConfigError, match="torus2d 3x5 does not hold 12 nodes"):
        System(
            "t", ("core",), (NodeType("n", 12, {"core": 1}),), topology=Topology("torus2d", (3, 5))
        )
    with pytest.raises(ConfigError, match="torus2d needs shape"):
        Topology("torus2d", (3,))
    with pytest.raises(ConfigError, match="unknown topology kind 'ring'"):
        Topology("ring", (3,))


def test_torus_in_a_system_file(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(
        'name = "t"\nresources = ["core"]\n\n[topology]\nkind = "torus2d"\nshape = [2, 3]\n\n'
        '[[node_types]]\nname = "n"\ncount = 6\ncapacity = { core = 2 }\n'
    )
    s = load_system(path)
    assert s.topology == Topology("torus2d", (2, 3)) and s.topology.grid.torus
    path.write_text(path.read_text().replace("shape = [2, 3]", "shape = [4, 3]"))
    with pytest.raises(
        ConfigError, match=r"line 6, topology.shape: topology torus2d 4x3 does not hold 6 nodes"
    ):
        load_system(path)


def test_hlrn2_grid_preset():
    s = load_system("hlrn2-grid")
    assert s.n_nodes == 128 and s.resources == ("core",) and s.capacity[:, 0].tolist() == [4] * 128
    assert s.topology == Topology("grid2d", (8, 16)) and s.topology.grid.hilbert_jumps == 0
