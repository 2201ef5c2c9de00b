"""Geometry of a 2-D grid machine: coordinates, distances, neighbours, XY routes, curve orders.

A :class:`Grid` describes ``rows x cols`` nodes, as a mesh (``grid2d``) or a torus
(``torus2d``, wrap-around links). It is the geometry the deadline-oriented allocation of
Linnert, De Rose and Heiss (2024) builds on; the system model's :class:`Topology` hands one
out (``Topology.grid``). Every answer is a numpy array, computed once per shape
(:func:`grid_of` keeps one ``Grid`` per ``(rows, cols, torus)``) and read-only.

Modelling choices: ``docs/DEADLINE.md``, section "Topology".

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def hilbert_xy2d(side: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Hilbert index of cells ``(x, y)`` on the curve through a ``side x side`` square
    (``side`` a power of two), vectorised (the classic ``xy2d``). The curve starts at
    ``(0, 0)`` and ends at ``(side - 1, 0)``; its first step goes along ``y`` when ``log2(side)``
    is odd and along ``x`` when it is even (on 4 x 4 and 16 x 16: to ``(1, 0)``)."""
    if side < 1 or side & (side - 1):
        raise ValueError(f"side must be a power of two, got {side}")
    x, y = (a.astype(np.int64) for a in np.broadcast_arrays(np.asarray(x), np.asarray(y)))  # copies
    d = np.zeros(x.shape, dtype=np.int64)
    s = side // 2
    while s > 0:
        rx = (x & s) > 0
        ry = (y & s) > 0
        d += s * s * ((3 * rx.astype(np.int64)) ^ ry.astype(np.int64))
        x &= s - 1  # the bits still to visit
        y &= s - 1
        flip = ~ry & rx
        x[flip] = s - 1 - x[flip]
        y[flip] = s - 1 - y[flip]
        swap = ~ry
        x[swap], y[swap] = y[swap], x[swap].copy()
        s //= 2
    return d


@dataclass(frozen=True, eq=False)
class Routes:
    """XY routes of several messages, as a CSR: the links of message ``i`` are
    ``link[indptr[i]:indptr[i + 1]]`` in the order crossed; ``forward`` says whether a link is
    crossed in its positive direction (towards the higher column / row, wrap links from the
    last to the first), so ``2 * link + ~forward`` numbers directed channels."""

    indptr: np.ndarray
    link: np.ndarray
    forward: np.ndarray

    def of(self, i: int) -> np.ndarray:
        return self.link[self.indptr[i] : self.indptr[i + 1]]


@dataclass(frozen=True, eq=False)
class Grid:
    """``rows x cols`` nodes numbered row-major; ``torus`` adds wrap-around links (see the
    module docstring for every convention). Build it with :func:`grid_of` (cached)."""

    rows: int
    cols: int
    torus: bool = False

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or isinstance(v, bool) or v < 1:
                raise ValueError(f"grid {name} must be a positive integer, got {v!r}")

    # ---- nodes -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def n_nodes(self) -> int:
        return self.rows * self.cols

    @property
    def kind(self) -> str:
        return "torus2d" if self.torus else "grid2d"

    @cached_property
    def coords(self) -> np.ndarray:
        """``(n, 2)`` int64: (row, column) of every node."""
        idx = np.arange(self.n_nodes, dtype=np.int64)
        return _frozen(np.stack([idx // self.cols, idx % self.cols], axis=1))

    def node(self, row: np.ndarray | int, col: np.ndarray | int) -> np.ndarray:
        """Node ids at ``(row, col)`` (vectorised; no bounds wrapping)."""
        return np.asarray(row, dtype=np.int64) * self.cols + np.asarray(col, dtype=np.int64)

    def _wraps(self, length: int) -> bool:
        return self.torus and length >= 3

    # ---- distances ---------------------------------------------------------------------
    def _axis_distance(self, d: np.ndarray, length: int) -> np.ndarray:
        d = np.abs(d)
        return np.minimum(d, length - d) if self._wraps(length) else d

    def distance(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Manhattan distance (hops) between nodes ``a`` and ``b`` (broadcast); on a torus the
        shorter way round on each axis."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        dr = self._axis_distance(a // self.cols - b // self.cols, self.rows)
        dc = self._axis_distance(a % self.cols - b % self.cols, self.cols)
        return dr + dc

    @cached_property
    def distance_matrix(self) -> np.ndarray:
        """``(n, n)`` int64 of all distances (``8 n^2`` bytes: 8 MB at 1,024 nodes, 134 MB at
        4,096; use :meth:`distance` on large machines)."""
        idx = np.arange(self.n_nodes, dtype=np.int64)
        return _frozen(self.distance(idx[:, None], idx[None, :]))

    def pairwise_sum(self, nodes: np.ndarray | list[int]) -> int:
        """Sum of the distances over all unordered pairs of ``nodes`` (the compactness the
        Manhattan-median strategy minimises)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        return int(self.distance(nodes[:, None], nodes[None, :]).sum() // 2)

    def adjacent(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """True where ``a`` and ``b`` are 4-neighbours (joined by a link)."""
        return self.distance(a, b) == 1

    # ---- neighbours --------------------------------------------------------------------
    @cached_property
    def neighbour_table(self) -> np.ndarray:
        """``(n, 4)`` int64: the 4-neighbours of every node in increasing id order, padded with
        ``-1`` (corners and edges of a mesh have fewer; so does a torus axis shorter than 3)."""
        r, c = self.coords[:, 0], self.coords[:, 1]
        cand = []
        for dr, dc in ((-1, 0), (0, -1), (0, 1), (1, 0)):
            rr, cc = r + dr, c + dc
            length_r, length_c = self.rows, self.cols
            if self._wraps(length_r):
                rr = rr % length_r
            if self._wraps(length_c):
                cc = cc % length_c
            ok = (rr >= 0) & (rr < length_r) & (cc >= 0) & (cc < length_c)
            cand.append(np.where(ok, rr * self.cols + cc, -1))
        table = np.stack(cand, axis=1)
        table = np.where(table < 0, np.iinfo(np.int64).max, table)
        table.sort(axis=1)
        # a 3-long axis wraps, but its two neighbours are distinct; duplicates cannot occur
        return _frozen(np.where(table == np.iinfo(np.int64).max, -1, table))

    @cached_property
    def neighbour_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)``: the neighbours of node ``i`` are
        ``indices[indptr[i]:indptr[i + 1]]``, increasing."""
        t = self.neighbour_table
        counts = (t >= 0).sum(axis=1)
        indptr = np.zeros(self.n_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return _frozen(indptr), _frozen(t[t >= 0].copy())

    def neighbours(self, node: int) -> np.ndarray:
        indptr, indices = self.neighbour_csr
        return indices[indptr[node] : indptr[node + 1]]

    # ---- links and routes --------------------------------------------------------------
    @property
    def _h_per_row(self) -> int:
        return self.cols if self._wraps(self.cols) else self.cols - 1

    @property
    def _v_per_col(self) -> int:
        return self.rows if self._wraps(self.rows) else self.rows - 1

    @property
    def n_links(self) -> int:
        return self.rows * self._h_per_row + self.cols * self._v_per_col

    @cached_property
    def links(self) -> np.ndarray:
        """``(n_links, 2)`` int64: the two ends of every link, the positive direction first
        (``(r, c) -> (r, c + 1)``, ``(r, c) -> (r + 1, c)``, wrap links from the last to the first)."""
        r, c = np.divmod(np.arange(self.rows * self._h_per_row, dtype=np.int64), self._h_per_row)
        horizontal = np.stack([self.node(r, c), self.node(r, (c + 1) % self.cols)], axis=1)
        c, r = np.divmod(np.arange(self.cols * self._v_per_col, dtype=np.int64), self._v_per_col)
        order = np.lexsort((c, r))  # vertical links row pair by row pair, columns within
        vertical = np.stack([self.node(r, c), self.node((r + 1) % self.rows, c)], axis=1)[order]
        return _frozen(np.concatenate([horizontal, vertical]).reshape(-1, 2))

    def _h_link(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Id of the link from ``(r, c)`` to ``(r, c + 1 mod cols)``."""
        return r * self._h_per_row + c

    def _v_link(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Id of the link from ``(r, c)`` to ``(r + 1 mod rows, c)``."""
        return self.rows * self._h_per_row + r * self.cols + c

    def _steps(self, d: np.ndarray, length: int) -> np.ndarray:
        """Signed steps along one axis for a difference ``d = dst - src`` (torus: shorter way
        round, ties positive)."""
        if not self._wraps(length):
            return d
        fwd = d % length
        back = length - fwd
        return np.where(fwd <= back, fwd, -back)

    def routes(self, src: np.ndarray | list[int], dst: np.ndarray | list[int]) -> Routes:
        """XY routes of the messages ``src[i] -> dst[i]`` (vectorised; see :class:`Routes`)."""
        src = np.atleast_1d(np.asarray(src, dtype=np.int64))
        dst = np.atleast_1d(np.asarray(dst, dtype=np.int64))
        if src.shape != dst.shape:
            raise ValueError(f"src and dst differ in shape: {src.shape} vs {dst.shape}")
        ra, ca = src // self.cols, src % self.cols
        rb, cb = dst // self.cols, dst % self.cols
        h = self._steps(cb - ca, self.cols)
        v = self._steps(rb - ra, self.rows)
        nh, nv = np.abs(h), np.abs(v)
        per = nh + nv
        indptr = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(per, out=indptr[1:])
        # horizontal hops: along row ra, from column ca, j = 0 .. nh - 1
        msg = np.repeat(np.arange(len(src)), nh)
        j = np.arange(len(msg)) - np.repeat(np.cumsum(nh) - nh, nh)
        sh = np.sign(h)[msg]
        col_from = ca[msg] + sh * j
        col_low = np.where(sh > 0, col_from, col_from - 1) % self.cols  # the link's left end
        h_links = self._h_link(ra[msg], col_low)
        h_pos = indptr[:-1][msg] + j
        # vertical hops: along column cb, from row ra, j = 0 .. nv - 1
        msg_v = np.repeat(np.arange(len(src)), nv)
        jv = np.arange(len(msg_v)) - np.repeat(np.cumsum(nv) - nv, nv)
        sv = np.sign(v)[msg_v]
        row_from = ra[msg_v] + sv * jv
        row_low = np.where(sv > 0, row_from, row_from - 1) % self.rows
        v_links = self._v_link(row_low, cb[msg_v])
        v_pos = indptr[:-1][msg_v] + nh[msg_v] + jv
        link = np.empty(int(indptr[-1]), dtype=np.int64)
        forward = np.empty(int(indptr[-1]), dtype=bool)
        link[h_pos], forward[h_pos] = h_links, sh > 0
        link[v_pos], forward[v_pos] = v_links, sv > 0
        return Routes(indptr=indptr, link=link, forward=forward)

    def route_links(self, a: int, b: int) -> np.ndarray:
        """Ids of the links a message from ``a`` to ``b`` crosses, in order (XY routing)."""
        return self.routes([a], [b]).link

    def route_nodes(self, a: int, b: int) -> np.ndarray:
        """The nodes a message from ``a`` to ``b`` visits, ``a`` and ``b`` included."""
        r = self.routes([a], [b])
        ends = self.links[r.link]
        return np.concatenate([[a], np.where(r.forward, ends[:, 1], ends[:, 0])]).astype(np.int64)

    # ---- curve orders ------------------------------------------------------------------
    @property
    def hilbert_side(self) -> int:
        """Side of the enclosing power-of-two square the Hilbert curve runs through."""
        return 1 << max(0, (max(self.rows, self.cols) - 1).bit_length())

    @cached_property
    def hilbert_index(self) -> np.ndarray:
        """``(n,)`` int64: every node's index on the Hilbert curve of the enclosing square,
        the coordinate along the shorter side first (Slurm's rank)."""
        r, c = self.coords[:, 0], self.coords[:, 1]
        x, y = (r, c) if self.rows <= self.cols else (c, r)
        return _frozen(hilbert_xy2d(self.hilbert_side, x, y))

    @cached_property
    def hilbert_order(self) -> np.ndarray:
        """``(n,)`` int64: the nodes in Hilbert-curve order (position -> node)."""
        return _frozen(np.argsort(self.hilbert_index, kind="stable"))

    @cached_property
    def hilbert_position(self) -> np.ndarray:
        """``(n,)`` int64: every node's position on the curve (node -> position)."""
        pos = np.empty(self.n_nodes, dtype=np.int64)
        pos[self.hilbert_order] = np.arange(self.n_nodes)
        return _frozen(pos)

    def jump_positions(self, order: np.ndarray) -> np.ndarray:
        """Positions ``i`` where nodes ``order[i]`` and ``order[i + 1]`` are not neighbours."""
        order = np.asarray(order, dtype=np.int64)
        return np.flatnonzero(~self.adjacent(order[:-1], order[1:]))

    @cached_property
    def hilbert_jump_positions(self) -> np.ndarray:
        """Positions ``i`` where Hilbert-curve nodes ``i`` and ``i + 1`` are not neighbours."""
        return _frozen(self.jump_positions(self.hilbert_order))

    @property
    def hilbert_jumps(self) -> int:
        """How many consecutive curve positions are not neighbours (0 on ``2^k x 2^k``)."""
        return len(self.hilbert_jump_positions)

    @cached_property
    def gilbert_order(self) -> np.ndarray:
        """``(n,)`` int64: the nodes along the generalised Hilbert curve of the rectangle itself
        ("gilbert", J. Cervený's algorithm), an alternative to Slurm's curve on non-square grids:
        from ``(0, 0)`` along the longer side, no detour outside the grid. It has one diagonal
        step (a jump, :meth:`jump_positions`) when the longer side is odd and the shorter one
        even and > 2, and none otherwise (checked on every shape up to 24 x 24). Not Slurm's
        order: the deadline strategies may offer it as an option."""
        cells = (
            _gilbert(self.cols, self.rows)
            if self.cols >= self.rows
            else _gilbert_swap(self.cols, self.rows)
        )
        return _frozen(np.array([r * self.cols + c for c, r in cells], dtype=np.int64))

    @cached_property
    def _snakes(self) -> dict[int, np.ndarray]:
        return {}

    def snake_order(self, start: int = 0) -> np.ndarray:
        """The nodes in snake (boustrophedon) order from ``start``: its row left to right from
        ``start``, the next row right to left, ..., wrapping to row 0, and row ``start``'s
        columns left of ``start`` last."""
        start = int(start)
        if not 0 <= start < self.n_nodes:
            raise ValueError(f"start node {start} is not a node of a {self.rows}x{self.cols} grid")
        cached = self._snakes.get(start)
        if cached is not None:
            return cached
        r0, c0 = divmod(start, self.cols)
        k = np.arange(self.rows, dtype=np.int64)
        rows = (r0 + k) % self.rows
        cols = np.arange(self.cols, dtype=np.int64)
        grid_cols = np.where((k % 2 == 0)[:, None], cols[None, :], cols[::-1][None, :])
        walk = (rows[:, None] * self.cols + grid_cols).ravel()
        out = _frozen(np.roll(walk, -c0))
        self._snakes[start] = out
        return out


def _sgn(v: int) -> int:
    return (v > 0) - (v < 0)


def _gilbert_walk(
    x: int, y: int, ax: int, ay: int, bx: int, by: int, out: list[tuple[int, int]]
) -> None:
    """Cervený's generalised Hilbert curve: fill the rectangle spanned from ``(x, y)`` by the
    major axis ``(ax, ay)`` and the minor axis ``(bx, by)``, appending cells to ``out``."""
    w, h = abs(ax + ay), abs(bx + by)
    dax, day, dbx, dby = _sgn(ax), _sgn(ay), _sgn(bx), _sgn(by)
    if h == 1:
        out.extend((x + dax * i, y + day * i) for i in range(w))
        return
    if w == 1:
        out.extend((x + dbx * i, y + dby * i) for i in range(h))
        return
    ax2, ay2, bx2, by2 = ax // 2, ay // 2, bx // 2, by // 2
    w2, h2 = abs(ax2 + ay2), abs(bx2 + by2)
    if 2 * w > 3 * h:
        if w2 % 2 and w > 2:  # prefer even steps
            ax2, ay2 = ax2 + dax, ay2 + day
        _gilbert_walk(x, y, ax2, ay2, bx, by, out)
        _gilbert_walk(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by, out)
    else:
        if h2 % 2 and h > 2:
            bx2, by2 = bx2 + dbx, by2 + dby
        _gilbert_walk(x, y, bx2, by2, ax2, ay2, out)
        _gilbert_walk(x + bx2, y + by2, ax, ay, bx - bx2, by - by2, out)
        _gilbert_walk(
            x + (ax - dax) + (bx2 - dbx),
            y + (ay - day) + (by2 - dby),
            -bx2,
            -by2,
            -(ax - ax2),
            -(ay - ay2),
            out,
        )


def _gilbert(width: int, height: int) -> list[tuple[int, int]]:
    """Cells ``(x, y)`` of a ``width x height`` rectangle (``width >= height``) in gilbert order."""
    out: list[tuple[int, int]] = []
    _gilbert_walk(0, 0, width, 0, 0, height, out)
    return out


def _gilbert_swap(width: int, height: int) -> list[tuple[int, int]]:
    """The same for ``width < height``: along ``y`` first."""
    out: list[tuple[int, int]] = []
    _gilbert_walk(0, 0, 0, height, width, 0, out)
    return out


@lru_cache(maxsize=64)
def grid_of(rows: int, cols: int, torus: bool = False) -> Grid:
    """The :class:`Grid` of that shape (one per shape: its arrays are computed once)."""
    return Grid(int(rows), int(cols), bool(torus))
