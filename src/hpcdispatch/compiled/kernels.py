"""The compiled engine's code, in one module: the state layout, a clock, the allocators,
the policies (FIFO, EASY backfilling) and the event loop, compiled with numba.

Why one module: the functions an entry point calls and the constants it reads are frozen
into its compiled code. Only the entry points (``ON_DISK``) are cached on disk, by
:class:`~hpcdispatch.compiled.disk_cache.EngineCache`, stamped with this file's text and the
state layout's (``layout.py``): any change to either recompiles all. The functions they call
keep no cache of their own (numba's would notice changes to this file only).

Sections: **state** (the rows and registers of :class:`EngineState`), **clock**,
**allocators** (first fit, best fit), **policies** (``policy(<arrays>, now)`` writes its decision
into the state; :func:`call_policy` maps a policy number to its function: a new compiled
policy adds a function, a branch there and its name in ``POLICIES``, and its dispatcher
returns a :class:`~hpcdispatch.protocol.dispatcher.KernelSpec` naming it) and the **event
loop** (:func:`run_steps`: the simulator's semantics without admission control, resizing,
wake-ups, intervals or charged dispatch time; it verifies every start).

Design notes, decisions and measurements: docs/PERFORMANCE.md,
"From the module docstrings".
"""

from __future__ import annotations

import math
import time

import numpy as np
from llvmlite import ir
from numba import njit, typeof
from numba.core import cgutils, types
from numba.extending import intrinsic

from hpcdispatch.compiled.disk_cache import keep_on_disk
from hpcdispatch.compiled.layout import (  # the state layout (a change recompiles: see its docstring)
    ALLOC_LEN,
    ALLOC_OFF,
    ALLOCATOR,
    BAD_NODES,
    BAD_UNITS,
    D_ELAPSED,
    D_INFO,
    D_QUEUE,
    D_RUNNING,
    D_STARTED,
    D_TIME,
    DEC_JOB,
    DEC_LEN,
    DEC_OFF,
    EASY,
    ENDED,
    ERROR,
    ERROR_JOB,
    ERROR_NODE,
    F_POL,
    FINISHED,
    FIRST_FIT,
    FREE,
    HEAP_JOB,
    HEAP_SEQ,
    HSIZE,
    JF_DURATION,
    JF_END,
    JF_HEAP_T,
    JF_PLANNED,
    JF_PLANNED_END,
    JF_REL_END,
    JF_START,
    JF_SUBMIT,
    MEMO_STAMP,
    MEMO_UNITS,
    MPN,
    NCALL,
    NDEC,
    NDONE,
    NEWFIRST,
    NODE,
    NOT_QUEUED,
    NROWS,
    NRUN,
    NSTARTED,
    OVER_CAPACITY,
    PARAMS,
    PAUSED,
    POL,
    POLICY,
    QHEAD,
    QLEN,
    QNEXT,
    QPREV,
    QTAIL,
    REFUSED,
    REL_JOB,
    ROW_UNITS,
    RUN_LIST,
    RUN_POS,
    SCRATCH,
    SEQ,
    SHADOW,
    SHAPE,
    STALLED,
    START_ORDER,
    STATUS,
    SUBMITTED,
    UNITS,
    USED,
    example_state,
)

# ======================================================================================
# 1. State
# ======================================================================================

# ======================================================================================
# 2. Clock
# ======================================================================================

_CLOCK_ID = time.CLOCK_MONOTONIC


@intrinsic
def monotonic_ns(typingctx):
    """Nanoseconds of ``CLOCK_MONOTONIC`` (the clock behind ``time.perf_counter`` on Linux)."""
    sig = types.int64()

    def codegen(context, builder, signature, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])
        fnty = ir.FunctionType(i32, [i32, timespec.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        ts = cgutils.alloca_once(builder, timespec)
        builder.call(fn, [ir.Constant(i32, _CLOCK_ID), ts])
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

    return sig, codegen


# ======================================================================================
# 3. Allocators
# ======================================================================================

#: the fit of a unit that requests nothing (``units_fit_per_node``'s unbounded value)
UNBOUNDED = np.iinfo(np.int64).max // 4


@njit
def node_fit(free, n, req, mpn):
    """How many units of ``req`` fit on node ``n`` of ``free``."""
    k = UNBOUNDED
    for r in range(free.shape[1]):
        a = req[r]
        if a > 0:
            have = free[n, r]
            if have < a:  # a full node: no division (most nodes of a busy machine)
                return 0
            f = have // a
            if f < k:
                k = f
    if mpn > 0 and k > mpn:
        k = mpn
    return k


@njit
def fit_count(free, req, mpn, cap):
    """Units of ``req`` that fit on ``free`` in all, each node's count capped at ``cap``
    (so the sum cannot overflow; ``fit_count(...) >= cap`` is the exact fit test)."""
    total = 0
    for n in range(free.shape[0]):
        f = node_fit(free, n, req, mpn)
        total += f if f < cap else cap
    return total


@njit
def stable_argsort(values, n):
    """Indices that sort ``values[:n]`` ascending, equal values in index order: what
    ``np.argsort(values[:n], kind="mergesort")`` returns for values without NaN. A bottom-up
    merge sort of plain loops: numba compiles it in a fraction of the time its own mergesort
    takes (about 2.7 s of a first run's compilation on the README's default workload)."""
    order = np.arange(n)
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = lo + width if lo + width < n else n
            hi = lo + 2 * width if lo + 2 * width < n else n
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if values[order[j]] < values[order[i]]:  # ties: the left run first (stable)
                    tmp[k] = order[j]
                    j += 1
                else:
                    tmp[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = order[j]
                j += 1
                k += 1
        order, tmp = tmp, order
        width *= 2
    return order


@njit
def allocate(kind, free, req, mpn, units, weights, rows, offset):
    """First fit (``kind`` FIRST_FIT): nodes in index order, each taking as many units as fit.
    Best fit: nodes in ascending order of ``sum_r free[n, r] * weights[r]`` (ties: node
    index), each taking as many units as fit (:class:`hpcdispatch.allocators.base.BestFit`)."""
    n_nodes = free.shape[0]
    if kind == FIRST_FIT:
        need = units
        k = 0
        for n in range(n_nodes):
            f = node_fit(free, n, req, mpn)
            if f > 0:
                take = f if f < need else need
                rows[0, offset + k] = n
                rows[1, offset + k] = take
                k += 1
                need -= take
                if need == 0:
                    return k
        return -1
    cand = np.empty(n_nodes, dtype=np.int64)
    room = np.empty(n_nodes, dtype=np.int64)
    c = 0
    total = 0
    for n in range(n_nodes):
        f = node_fit(free, n, req, mpn)
        if f > 0:
            cand[c] = n
            room[c] = f
            c += 1
            if total < units:
                total += f
    if total < units:
        return -1
    score = np.empty(c, dtype=np.float64)
    for i in range(c):
        s = 0.0
        for r in range(free.shape[1]):
            s += free[cand[i], r] * weights[r]
        score[i] = s
    order = stable_argsort(score, score.shape[0])  # not c: its first type is the literal 0
    need = units
    k = 0
    for i in order:
        take = room[i] if room[i] < need else need
        rows[0, offset + k] = cand[i]
        rows[1, offset + k] = take
        k += 1
        need -= take
        if need == 0:
            break
    # nodes ascending (insertion sort: a handful of rows)
    for a in range(offset + 1, offset + k):
        nd, un = rows[0, a], rows[1, a]
        b = a - 1
        while b >= offset and rows[0, b] > nd:
            rows[0, b + 1] = rows[0, b]
            rows[1, b + 1] = rows[1, b]
            b -= 1
        rows[0, b + 1] = nd
        rows[1, b + 1] = un
    return k


# ======================================================================================
# 4. Policies
# ======================================================================================


# ---- helpers shared by the policies ---------------------------------------------------
# The kernels take the state's arrays themselves, unpacked from ``st`` once per chunk by
# :func:`run_steps`: every ``st.<array>`` read is a new reference that numba counts (an atomic
# increment and decrement) and cannot prune where the code branches -- 36 % of FIFO's loop
# and 27 % of EASY's on HPC2N when the helpers read them through the tuple (issue 54).
# Helpers are plain calls (LLVM inlines them), never ``inline="always"``: numba's own
# inlining copies array arguments into new counted variables.
#
# ``mat[SCRATCH]`` and ``tot[SCRATCH]`` (the policy's working copy) equal ``FREE`` whenever a
# call begins: ends free both, a call takes its starts from the scratch and :func:`_apply`
# then takes the same rows from ``FREE`` (a refused decision copies ``FREE`` back). No copy
# per call (19 % of FIFO's loop before).
@njit
def pooled_ok(ji, req, tot, j):
    u = ji[UNITS, j]
    for r in range(req.shape[1]):
        a = req[j, r]
        if a > 0 and tot[SCRATCH, r] < a * u:
            return False
    return True


@njit
def nothing_free(tot):
    for r in range(tot.shape[1]):
        if tot[SCRATCH, r] != 0:
            return False
    return True


@njit
def _scratch_fit(mat, req, j, n, mpn):
    """:func:`node_fit` of job ``j`` on node ``n`` of ``mat[SCRATCH]``, read in place."""
    k = UNBOUNDED
    for r in range(req.shape[1]):
        a = req[j, r]
        if a > 0:
            have = mat[SCRATCH, n, r]
            if have < a:
                return 0
            f = have // a
            if f < k:
                k = f
    if mpn > 0 and k > mpn:
        k = mpn
    return k


@njit
def _first_fit_scratch(ji, req, mat, rows, offset, j):
    """:func:`allocate`'s first fit on ``mat[SCRATCH]`` without making views of ``mat`` and
    ``req`` (each view is a counted reference: two atomic operations per call)."""
    need = ji[UNITS, j]
    mpn = ji[MPN, j]
    k = 0
    for n in range(mat.shape[1]):
        f = _scratch_fit(mat, req, j, n, mpn)
        if f > 0:
            take = f if f < need else need
            rows[NODE, offset + k] = n
            rows[ROW_UNITS, offset + k] = take
            k += 1
            need -= take
            if need == 0:
                return k
    return -1


@njit
def place(ji, req, mat, weights, rows, regs, j):
    """Allocate job ``j`` on the scratch (rows after the decision's rows); rows or -1."""
    if regs[ALLOCATOR] == FIRST_FIT:
        return _first_fit_scratch(ji, req, mat, rows, regs[NROWS] + regs[USED], j)
    return allocate(
        regs[ALLOCATOR],
        mat[SCRATCH],
        req[j],
        ji[MPN, j],
        ji[UNITS, j],
        weights,
        rows,
        regs[NROWS] + regs[USED],
    )


@njit
def take(ji, req, mat, tot, rows, regs, j, k):
    """Start job ``j`` on the ``k`` rows :func:`place` just wrote."""
    off = regs[NROWS] + regs[USED]
    R = req.shape[1]
    for i in range(off, off + k):
        n = rows[NODE, i]
        x = rows[ROW_UNITS, i]
        for r in range(R):
            mat[SCRATCH, n, r] -= x * req[j, r]
    for r in range(R):
        tot[SCRATCH, r] -= ji[UNITS, j] * req[j, r]
    d = regs[NDEC]
    ji[DEC_JOB, d] = j
    ji[DEC_OFF, d] = off
    ji[DEC_LEN, d] = k
    regs[NDEC] = d + 1
    regs[USED] += k


@njit
def place_and_take(ji, req, mat, tot, weights, rows, regs, j):
    """Start job ``j`` if it fits the scratch (callers test :func:`pooled_ok` first)."""
    k = place(ji, req, mat, weights, rows, regs, j)
    if k < 0:
        return False
    take(ji, req, mat, tot, rows, regs, j, k)
    return True


# ---- FIFO -----------------------------------------------------------------------------
# registers: POL = the head blocked at the last call (1/0), POL + 1 = that head
@njit
def fifo(ji, req, mat, tot, weights, rows, regs, fregs, now):
    blocking = fregs[PARAMS] != 0.0
    if blocking and regs[POL] == 1 and regs[ENDED] == 0 and regs[POL + 1] == regs[QHEAD]:
        return  # nothing ended since the head failed to fit: it fails again
    regs[POL] = 0
    j = regs[QHEAD]
    while j != -1:
        if not (
            pooled_ok(ji, req, tot, j) and place_and_take(ji, req, mat, tot, weights, rows, regs, j)
        ):
            if blocking:
                regs[POL] = 1
                regs[POL + 1] = j
                return
            if nothing_free(tot):
                return
        j = ji[QNEXT, j]


# ---- EASY -----------------------------------------------------------------------------
# integer registers (from POL): the last call started nothing (its pass is kept), its head,
# the pass has a reservation, jobs backfilled, the head's units that fit at the shadow time
E_IDLE, E_HEAD, E_HAS_RES, E_BACKFILLED, E_HFIT = POL, POL + 1, POL + 2, POL + 3, POL + 4
E_STAMP = POL + 5  # each memo table's current stamp (two registers)
# memo tables: shapes that did not fit now (the whole call: capacity only shrinks), and long
# shapes refused for the head's sake (until the next start)
NO_FIT, HURTS = 0, 1
# float registers: the shadow time, then the spare capacity per resource at the shadow time
F_SHADOW, F_SPARE = F_POL, F_POL + 8
TOOK, REFUSED_HERE = 0, 1


@njit
def _memo_known(ji, memo, regs, table, j):
    """Whether job ``j``'s shape is in ``table`` with at most its unit count (both allocators
    fill nodes in an order that does not depend on the unit count, so more units fail too)."""
    s = ji[SHAPE, j]
    return (
        memo[table, MEMO_STAMP, s] == regs[E_STAMP + table]
        and ji[UNITS, j] >= memo[table, MEMO_UNITS, s]
    )


@njit
def _memo_add(ji, memo, regs, table, j):
    stamp = regs[E_STAMP + table]
    s = ji[SHAPE, j]
    u = ji[UNITS, j]
    if memo[table, MEMO_STAMP, s] != stamp:
        memo[table, MEMO_STAMP, s] = stamp
        memo[table, MEMO_UNITS, s] = u
    elif u < memo[table, MEMO_UNITS, s]:
        memo[table, MEMO_UNITS, s] = u


@njit
def _memo_clear(regs, table):
    regs[E_STAMP + table] += 1


@njit
def _shift_held(ji, req, mat, rows, j, off, k, sign, head):
    """Add (``sign`` 1: released by then) or take (-1: backfilled past the shadow time) job
    ``j``'s rows ``off : off + k`` to or from ``mat[SHADOW]``; returns the change in the head's
    fit count there (each node's count capped at the head's units, as ``fit_count``)."""
    shadow = mat[SHADOW]
    R = req.shape[1]
    hreq = req[head]
    hmpn = ji[MPN, head]
    cap = ji[UNITS, head]
    change = 0
    for i in range(off, off + k):
        n = rows[NODE, i]
        x = sign * rows[ROW_UNITS, i]
        before = node_fit(shadow, n, hreq, hmpn)
        for r in range(R):
            shadow[n, r] += x * req[j, r]
        after = node_fit(shadow, n, hreq, hmpn)
        change += (after if after < cap else cap) - (before if before < cap else cap)
    return change


@njit
def _rel_end(jf, j, floor):
    e = jf[JF_PLANNED_END, j]
    return e if e > floor else floor


@njit
def _reserve(ji, jf, req, mat, rows, regs, fregs, head, now):
    """The head's shadow time (the first expected end after which it fits, node by node) and
    the free capacity then (``mat[SHADOW]``), from running jobs (expected end
    ``max(planned end, now + 1)``) and the jobs this call started (``now + planned``). The
    running jobs are kept in planned-end order (:func:`_run_insert`), this call's few starts
    are sorted here, and the two are merged; equal ends are released together."""
    R = req.shape[1]
    nrun, ndec = regs[NRUN], regs[NDEC]
    floor = now + 1.0
    # this call's starts by expected end: (JF_REL_END, REL_JOB = decision index) at 0 : ndec
    for d in range(ndec):
        e = now + jf[JF_PLANNED, ji[DEC_JOB, d]]
        b = d - 1
        while b >= 0 and jf[JF_REL_END, b] > e:
            jf[JF_REL_END, b + 1] = jf[JF_REL_END, b]
            ji[REL_JOB, b + 1] = ji[REL_JOB, b]
            b -= 1
        jf[JF_REL_END, b + 1] = e
        ji[REL_JOB, b + 1] = d
    mat[SHADOW, :, :] = mat[SCRATCH]
    need = np.empty(R, dtype=np.int64)
    for r in range(R):
        need[r] = ji[UNITS, head] * req[head, r]
    hunits = ji[UNITS, head]
    hfit = fit_count(mat[SHADOW], req[head], ji[MPN, head], hunits)
    shadow = math.inf
    a = 0
    b = 0
    while a < nrun or b < ndec:
        e = _rel_end(jf, ji[RUN_LIST, a], floor) if a < nrun else math.inf
        if b < ndec and jf[JF_REL_END, b] < e:
            e = jf[JF_REL_END, b]
        while a < nrun and _rel_end(jf, ji[RUN_LIST, a], floor) == e:
            j = ji[RUN_LIST, a]
            hfit += _shift_held(ji, req, mat, rows, j, ji[ALLOC_OFF, j], ji[ALLOC_LEN, j], 1, head)
            a += 1
        while b < ndec and jf[JF_REL_END, b] == e:
            d = ji[REL_JOB, b]
            hfit += _shift_held(
                ji, req, mat, rows, ji[DEC_JOB, d], ji[DEC_OFF, d], ji[DEC_LEN, d], 1, head
            )
            b += 1
        if hfit >= hunits:
            shadow = e
            break
    fregs[F_SHADOW] = shadow
    for r in range(R):
        total = 0
        for n in range(mat.shape[1]):
            total += mat[SHADOW, n, r]
        fregs[F_SPARE + r] = total - need[r]
    regs[E_HFIT] = hfit
    regs[E_HAS_RES] = 1


@njit
def _is_short(jf, fregs, j, now):
    return now + jf[JF_PLANNED, j] <= fregs[F_SHADOW]


@njit
def _long_blocked(ji, req, fregs, j):
    for r in range(req.shape[1]):
        a = req[j, r]
        if a > 0 and fregs[F_SPARE + r] < a * ji[UNITS, j]:
            return True
    return False


@njit
def _evaluate(ji, jf, req, mat, tot, weights, rows, regs, fregs, memo, j, head, now):
    """One backfill candidate that the scan's cheap checks let through: TOOK if it starts."""
    k = place(ji, req, mat, weights, rows, regs, j)
    if k < 0:
        _memo_add(ji, memo, regs, NO_FIT, j)
        return REFUSED_HERE
    if regs[E_HAS_RES] == 0:
        _reserve(ji, jf, req, mat, rows, regs, fregs, head, now)
        if not _is_short(jf, fregs, j, now) and _long_blocked(ji, req, fregs, j):
            return REFUSED_HERE
    if not _is_short(jf, fregs, j, now):
        # long: it may only take what the head does not need at the shadow time
        off = regs[NROWS] + regs[USED]
        lost = -_shift_held(ji, req, mat, rows, j, off, k, -1, head)
        if regs[E_HFIT] - lost < ji[UNITS, head]:
            _shift_held(ji, req, mat, rows, j, off, k, 1, head)  # give it back
            _memo_add(ji, memo, regs, HURTS, j)
            return REFUSED_HERE
        for r in range(req.shape[1]):
            fregs[F_SPARE + r] -= ji[UNITS, j] * req[j, r]
        regs[E_HFIT] -= lost
    take(ji, req, mat, tot, rows, regs, j, k)
    regs[E_BACKFILLED] += 1
    _memo_clear(regs, HURTS)
    return TOOK


@njit
def _easy_info(dl, regs, fregs, head, backfilled):
    """Info of a call that has a reservation: shadow time, head (job index), backfilled."""
    c = regs[NCALL]
    if dl.shape[0] >= D_INFO + 3:
        dl[D_INFO, c] = fregs[F_SHADOW]
        dl[D_INFO + 1, c] = head
        dl[D_INFO + 2, c] = backfilled


@njit
def _overdue(ji, jf, regs, now):
    """A running job expected to end by ``now + 1`` (the first in planned-end order)."""
    return regs[NRUN] > 0 and jf[JF_PLANNED_END, ji[RUN_LIST, 0]] <= now + 1.0


@njit
def _scan(ji, jf, req, mat, tot, weights, rows, regs, fregs, memo, j, head, now):
    """Backfill candidates from job ``j`` to the end of the queue, in queue order, until
    nothing is free. Most fail a cheap check made here: pooled totals short, a shape known
    not to fit now, or a long job the head's reservation cannot spare."""
    while j != -1:
        if (
            pooled_ok(ji, req, tot, j)
            and not _memo_known(ji, memo, regs, NO_FIT, j)
            and (
                regs[E_HAS_RES] == 0
                or _is_short(jf, fregs, j, now)
                or not (_long_blocked(ji, req, fregs, j) or _memo_known(ji, memo, regs, HURTS, j))
            )
        ):
            took = _evaluate(ji, jf, req, mat, tot, weights, rows, regs, fregs, memo, j, head, now)
            if took == TOOK and nothing_free(tot):
                return
        j = ji[QNEXT, j]


@njit
def easy(ji, jf, req, mat, tot, weights, rows, dl, regs, fregs, memo, now):
    idle = regs[E_IDLE]
    regs[E_IDLE] = 0
    if (
        idle == 1
        and regs[ENDED] == 0
        and regs[E_HEAD] == regs[QHEAD]
        and not _overdue(ji, jf, regs, now)
    ):
        # the state of the last call, which started nothing: only the new jobs can go
        head = regs[E_HEAD]
        _scan(ji, jf, req, mat, tot, weights, rows, regs, fregs, memo, regs[NEWFIRST], head, now)
        if regs[NDEC] == 0:
            regs[E_IDLE] = 1
        if regs[E_HAS_RES] == 1:
            _easy_info(dl, regs, fregs, head, regs[NDEC])
        return
    regs[E_HAS_RES] = 0
    regs[E_BACKFILLED] = 0
    _memo_clear(regs, NO_FIT)
    _memo_clear(regs, HURTS)
    head = -1
    j = regs[QHEAD]
    while j != -1:
        if not (
            pooled_ok(ji, req, tot, j) and place_and_take(ji, req, mat, tot, weights, rows, regs, j)
        ):
            head = j
            break
        j = ji[QNEXT, j]
    if head == -1:
        return
    if not nothing_free(tot):
        _scan(ji, jf, req, mat, tot, weights, rows, regs, fregs, memo, ji[QNEXT, head], head, now)
        if regs[E_HAS_RES] == 1:
            _easy_info(dl, regs, fregs, head, regs[E_BACKFILLED])
    if regs[NDEC] == 0:
        regs[E_IDLE] = 1
        regs[E_HEAD] = head


@njit
def call_policy(ji, jf, req, mat, tot, weights, rows, dl, regs, fregs, memo, now):
    if regs[POLICY] == EASY:
        easy(ji, jf, req, mat, tot, weights, rows, dl, regs, fregs, memo, now)
    else:
        fifo(ji, req, mat, tot, weights, rows, regs, fregs, now)


# ======================================================================================
# 5. Event loop
# ======================================================================================

# job status codes: hpcdispatch.vocabulary.JobStatus's values (this file keeps its own constants:
# numba's disk cache is stamped by it alone; tests/test_vocabulary.py pins them to the enum)
PENDING, QUEUED, RUNNING, COMPLETED = 0, 1, 2, 3


@njit
def _heap_set(ji, jf, i, t, seq, j):
    jf[JF_HEAP_T, i] = t
    ji[HEAP_SEQ, i] = seq
    ji[HEAP_JOB, i] = j


@njit
def _heap_push(ji, jf, regs, t, j):
    i = regs[HSIZE]
    seq = regs[SEQ]
    regs[HSIZE] = i + 1
    regs[SEQ] = seq + 1
    while i > 0:
        p = (i - 1) >> 1
        tp = jf[JF_HEAP_T, p]
        if tp < t or (tp == t and ji[HEAP_SEQ, p] < seq):
            break
        _heap_set(ji, jf, i, tp, ji[HEAP_SEQ, p], ji[HEAP_JOB, p])
        i = p
    _heap_set(ji, jf, i, t, seq, j)


@njit
def _heap_pop(ji, jf, regs):
    top = ji[HEAP_JOB, 0]
    size = regs[HSIZE] - 1
    regs[HSIZE] = size
    if size == 0:
        return top
    t, s, j = jf[JF_HEAP_T, size], ji[HEAP_SEQ, size], ji[HEAP_JOB, size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and (
            jf[JF_HEAP_T, c + 1] < jf[JF_HEAP_T, c]
            or (jf[JF_HEAP_T, c + 1] == jf[JF_HEAP_T, c] and ji[HEAP_SEQ, c + 1] < ji[HEAP_SEQ, c])
        ):
            c += 1
        if t < jf[JF_HEAP_T, c] or (t == jf[JF_HEAP_T, c] and s < ji[HEAP_SEQ, c]):
            break
        _heap_set(ji, jf, i, jf[JF_HEAP_T, c], ji[HEAP_SEQ, c], ji[HEAP_JOB, c])
        i = c
    _heap_set(ji, jf, i, t, s, j)
    return top


@njit
def _run_insert(ji, jf, regs, j, ordered):
    """Add job ``j`` to the running jobs: at the end, or (``ordered``: EASY, whose reservation
    reads them by expected end) after those planned to end no later than it."""
    n = regs[NRUN]
    pos = n
    if ordered:
        e = jf[JF_PLANNED_END, j]
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if jf[JF_PLANNED_END, ji[RUN_LIST, mid]] <= e:
                lo = mid + 1
            else:
                hi = mid
        pos = lo
        for i in range(n, pos, -1):
            moved = ji[RUN_LIST, i - 1]
            ji[RUN_LIST, i] = moved
            ji[RUN_POS, moved] = i
    ji[RUN_LIST, pos] = j
    ji[RUN_POS, j] = pos
    regs[NRUN] = n + 1


@njit
def _run_remove(ji, regs, j, ordered):
    n = regs[NRUN] - 1
    pos = ji[RUN_POS, j]
    if ordered:
        for i in range(pos, n):
            moved = ji[RUN_LIST, i + 1]
            ji[RUN_LIST, i] = moved
            ji[RUN_POS, moved] = i
    else:
        last = ji[RUN_LIST, n]
        ji[RUN_LIST, pos] = last
        ji[RUN_POS, last] = pos
    regs[NRUN] = n


@njit
def _refuse(regs, code, j, node):
    regs[ERROR] = code
    regs[ERROR_JOB] = j
    regs[ERROR_NODE] = node
    return REFUSED


@njit
def _hold(ji, req, mat, tot, rows, j, off, k, sign, layer):
    """Add (``sign`` -1: take) job ``j``'s rows to ``mat[layer]`` and ``tot[layer]``."""
    R = req.shape[1]
    for i in range(off, off + k):
        n = rows[NODE, i]
        x = rows[ROW_UNITS, i]
        for r in range(R):
            mat[layer, n, r] += sign * x * req[j, r]
    for r in range(R):
        tot[layer, r] += sign * ji[UNITS, j] * req[j, r]


@njit
def _check(ji, req, mat, rows, regs, j, off, k):
    """Why job ``j`` cannot start on rows ``off : off + k`` now (an error code), or 0. The
    decision's earlier starts are already taken from the free capacity."""
    if j < 0 or j >= ji.shape[1] or ji[STATUS, j] != QUEUED:
        return _refuse(regs, NOT_QUEUED, j, -1)
    n_nodes = mat.shape[1]
    total = 0
    last = -1
    for i in range(off, off + k):
        n = rows[NODE, i]
        x = rows[ROW_UNITS, i]
        if n <= last or n >= n_nodes:
            return _refuse(regs, BAD_NODES, j, n)
        if x <= 0 or (ji[MPN, j] > 0 and x > ji[MPN, j]):
            return _refuse(regs, BAD_UNITS, j, n)
        last = n
        total += x
    if total != ji[UNITS, j]:
        return _refuse(regs, BAD_UNITS, j, -1)
    for i in range(off, off + k):
        n = rows[NODE, i]
        for r in range(req.shape[1]):
            if mat[FREE, n, r] < rows[ROW_UNITS, i] * req[j, r]:
                return _refuse(regs, OVER_CAPACITY, j, n)
    return 0


@njit
def _apply(ji, jf, req, mat, tot, rows, regs, t):
    """Verify and apply the decision; REFUSED (the reason in the error registers) at the
    first invalid start, with the free capacity as it was before the decision. The starts
    are already taken from the scratch: once applied, ``FREE`` equals it again."""
    ordered = regs[POLICY] == EASY
    for d in range(regs[NDEC]):
        j, off, k = ji[DEC_JOB, d], ji[DEC_OFF, d], ji[DEC_LEN, d]
        if _check(ji, req, mat, rows, regs, j, off, k) == REFUSED:
            for e in range(d):
                _hold(
                    ji, req, mat, tot, rows, ji[DEC_JOB, e], ji[DEC_OFF, e], ji[DEC_LEN, e], 1, FREE
                )
            mat[SCRATCH, :, :] = mat[FREE]
            tot[SCRATCH, :] = tot[FREE]
            return REFUSED
        _hold(ji, req, mat, tot, rows, j, off, k, -1, FREE)
    for d in range(regs[NDEC]):
        j = ji[DEC_JOB, d]
        p, q = ji[QPREV, j], ji[QNEXT, j]
        if p == -1:
            regs[QHEAD] = q
        else:
            ji[QNEXT, p] = q
        if q == -1:
            regs[QTAIL] = p
        else:
            ji[QPREV, q] = p
        regs[QLEN] -= 1
        ji[STATUS, j] = RUNNING
        jf[JF_START, j] = t
        jf[JF_PLANNED_END, j] = t + jf[JF_PLANNED, j]
        _run_insert(ji, jf, regs, j, ordered)
        ji[ALLOC_OFF, j] = ji[DEC_OFF, d]
        ji[ALLOC_LEN, j] = ji[DEC_LEN, d]
        ji[START_ORDER, regs[NSTARTED]] = j
        regs[NSTARTED] += 1
        _heap_push(ji, jf, regs, t + jf[JF_DURATION, j], j)
    regs[NROWS] += regs[USED]
    return FINISHED


@njit
def run_steps(st, max_steps):
    """Advance the simulation by at most ``max_steps`` instants: FINISHED, PAUSED or REFUSED."""
    return _run_steps(
        st.ji,
        st.jf,
        st.req,
        st.mat,
        st.tot,
        st.weights,
        st.rows,
        st.dl,
        st.regs,
        st.fregs,
        st.memo,
        max_steps,
    )


@njit
def _run_steps(ji, jf, req, mat, tot, weights, rows, dl, regs, fregs, memo, max_steps):
    n = ji.shape[1]
    inf = math.inf
    ordered = regs[POLICY] == EASY
    steps = 0
    while True:
        t_heap = jf[JF_HEAP_T, 0] if regs[HSIZE] > 0 else inf
        si = regs[SUBMITTED]
        t_sub = jf[JF_SUBMIT, si] if si < n else inf
        t = t_heap if t_heap < t_sub else t_sub
        if t == inf:
            return FINISHED
        happened = False
        # 1. ends (the scratch is freed too: it equals ``FREE`` between calls)
        while regs[HSIZE] > 0 and jf[JF_HEAP_T, 0] == t:
            j = _heap_pop(ji, jf, regs)
            _run_remove(ji, regs, j, ordered)
            off, k = ji[ALLOC_OFF, j], ji[ALLOC_LEN, j]
            _hold(ji, req, mat, tot, rows, j, off, k, 1, FREE)
            _hold(ji, req, mat, tot, rows, j, off, k, 1, SCRATCH)
            jf[JF_END, j] = t
            ji[STATUS, j] = COMPLETED
            regs[NDONE] += 1
            regs[ENDED] += 1
            happened = True
        # 2. submissions (every job is admitted)
        while si < n and jf[JF_SUBMIT, si] == t:
            tail = regs[QTAIL]
            ji[QPREV, si] = tail
            ji[QNEXT, si] = -1
            if tail == -1:
                regs[QHEAD] = si
            else:
                ji[QNEXT, tail] = si
            regs[QTAIL] = si
            regs[QLEN] += 1
            ji[STATUS, si] = QUEUED
            if regs[NEWFIRST] == -1:
                regs[NEWFIRST] = si
            si += 1
            happened = True
        regs[SUBMITTED] = si
        # 3. dispatch
        if happened and regs[QLEN] > 0:
            c = regs[NCALL]
            queue_before, running_before = regs[QLEN], regs[NRUN]
            for k in range(D_INFO, dl.shape[0]):
                dl[k, c] = math.nan
            regs[NDEC] = 0
            regs[USED] = 0
            t0 = monotonic_ns()
            call_policy(ji, jf, req, mat, tot, weights, rows, dl, regs, fregs, memo, t)
            elapsed = (monotonic_ns() - t0) * 1e-9
            regs[ENDED] = 0
            regs[NEWFIRST] = -1
            dl[D_TIME, c] = t
            if _apply(ji, jf, req, mat, tot, rows, regs, t) == REFUSED:
                return REFUSED
            dl[D_QUEUE, c] = queue_before
            dl[D_RUNNING, c] = running_before
            dl[D_STARTED, c] = regs[NDEC]
            dl[D_ELAPSED, c] = elapsed
            regs[NCALL] = c + 1
        if regs[QLEN] > 0 and regs[HSIZE] == 0 and regs[SUBMITTED] >= n:
            dl[D_TIME, regs[NCALL]] = t
            return _refuse(regs, STALLED, regs[QHEAD], -1)
        steps += 1
        if steps >= max_steps:
            return PAUSED


# ======================================================================================
# 6. Availability profile (conservative backfilling's search and compression)
# ======================================================================================
# The arrays of :class:`hpcdispatch.planning.profile.AvailabilityProfile`: ``times``
# (segment starts, ``inf`` past ``hi``), ``free`` (segments x nodes x resources, one "node"
# holding the pooled totals when the profile is not node-level), ``totals`` (segments x
# resources); live segments are ``[lo, hi)``. The functions below are the profile's
# ``_split``, ``_apply`` and ``earliest`` (unconstrained requests, first or best fit) with
# the same float operations, so they return exactly what the Python methods return
# (``tests/test_profile_compiled.py`` compares them).


@njit
def profile_split(times, free, totals, lo, hi, t, blocks):
    """Make ``t`` a segment boundary; return (absolute index of the segment starting at
    ``t``, new ``hi``). The caller guarantees room for one more segment. ``blocks``
    (:func:`_block_minima`; none when it has no rows) are kept up to date: the blocks from
    the split on are made concrete first (segments move across them), then recomputed."""
    a, b = lo, hi
    while a < b:  # searchsorted(times[lo:hi], t, "left")
        m = (a + b) >> 1
        if times[m] < t:
            a = m + 1
        else:
            b = m
    pos = a
    if pos < hi and times[pos] == t:
        return pos, hi
    with_blocks = blocks.shape[0] > 0
    if with_blocks:
        first = (pos - 1 - lo) // BLOCK if pos > lo else 0
        for blk in range(first, (hi - lo + BLOCK - 1) // BLOCK):
            _block_concrete(free, totals, lo, hi, blocks, blk)
    n_nodes, n_res = free.shape[1], free.shape[2]
    for s in range(hi, pos, -1):
        times[s] = times[s - 1]
        for n in range(n_nodes):
            for r in range(n_res):
                free[s, n, r] = free[s - 1, n, r]
        for r in range(n_res):
            totals[s, r] = totals[s - 1, r]
    times[pos] = t  # the new segment starts with the values of the one it splits
    for n in range(n_nodes):
        for r in range(n_res):
            free[pos, n, r] = free[pos - 1, n, r]
    for r in range(n_res):
        totals[pos, r] = totals[pos - 1, r]
    if with_blocks:  # the segments from pos on moved up by one: their blocks changed
        _block_minima(totals, lo, hi + 1, blocks, (pos - lo) // BLOCK)
    return pos, hi + 1


@njit
def profile_apply(times, free, totals, lo, hi, start, end, nodes, amounts, sign, blocks, lazy):
    """Take (``sign`` +1) or give back (-1) ``amounts[i]`` on ``nodes[i]`` during
    ``[start, end)``; return the new ``hi``. Room for two more segments is the caller's.

    ``blocks`` (none when it has no rows) are kept up to date: the minimum of a block wholly
    inside the interval changes by the amounts, the (at most two) others are recomputed.
    With ``lazy`` (a pooled profile: one "node", node 0), a block wholly inside takes the
    change in its pending add instead of in each of its segments."""
    if start < times[lo]:
        start = times[lo]
    if end <= start:
        return hi
    k, hi = profile_split(times, free, totals, lo, hi, start, blocks)
    j = hi
    if end != math.inf:
        j, hi = profile_split(times, free, totals, lo, hi, end, blocks)
    n_res = free.shape[2]
    with_blocks = blocks.shape[0] > 0 and j > k
    first = last = 0
    if with_blocks:
        first, last = (k - lo) // BLOCK, (j - 1 - lo) // BLOCK
    for blk in range(first, last + 1):
        whole = with_blocks and blk * BLOCK >= k - lo and (blk + 1) * BLOCK <= j - lo
        if whole:
            for i in range(nodes.shape[0]):
                for r in range(n_res):
                    a = amounts[i, r]
                    d = -a if sign > 0 else a
                    blocks[blk, 0, r] += d
                    if lazy:
                        blocks[blk, 1, r] += d
            if lazy:
                continue
        s_from, s_to = k, j
        if with_blocks:
            s_from = lo + blk * BLOCK if lo + blk * BLOCK > k else k
            s_to = lo + (blk + 1) * BLOCK if lo + (blk + 1) * BLOCK < j else j
        for s in range(s_from, s_to):
            for i in range(nodes.shape[0]):
                n = nodes[i]
                for r in range(n_res):
                    a = amounts[i, r]
                    free[s, n, r] -= a if sign > 0 else -a
                    totals[s, r] -= a if sign > 0 else -a
    if with_blocks:
        _block_minima_one(totals, lo, hi, blocks, first)
        if last != first:
            _block_minima_one(totals, lo, hi, blocks, last)
    return hi


#: segments per block of the block minima that let the compression's pooled test skip a
#: whole block of segments that all pass
BLOCK = 32


@njit
def _block_minima_one(totals, lo, hi, blocks, b):
    """``blocks[b, 0]``: the minimum over the live segments of block ``b`` (``[lo + b *
    BLOCK, lo + (b + 1) * BLOCK)`` before ``hi``) of ``totals`` plus the block's pending add
    ``blocks[b, 1]``."""
    end = lo + (b + 1) * BLOCK
    if end > hi:
        end = hi
    for r in range(totals.shape[1]):
        m = np.iinfo(np.int64).max
        for x in range(lo + b * BLOCK, end):
            if totals[x, r] < m:
                m = totals[x, r]
        blocks[b, 0, r] = m + blocks[b, 1, r]


@njit
def _block_minima(totals, lo, hi, blocks, first):
    """Recompute the block minima of the blocks from ``first`` to the last live one."""
    for b in range(first, (hi - lo + BLOCK - 1) // BLOCK):
        _block_minima_one(totals, lo, hi, blocks, b)


@njit
def _block_concrete(free, totals, lo, hi, blocks, b):
    """Add block ``b``'s pending add (a pooled profile's: node 0) to its segments."""
    end = lo + (b + 1) * BLOCK
    if end > hi:
        end = hi
    for r in range(totals.shape[1]):
        d = blocks[b, 1, r]
        if d != 0:
            for x in range(lo + b * BLOCK, end):
                totals[x, r] += d
                free[x, 0, r] += d
            blocks[b, 1, r] = 0


@njit
def _window_end(times, lo, n, j, e):
    """First relative index ``>= j`` whose segment starts at or after ``e`` (``n`` if none):
    galloping from ``j``, then a binary search (windows' ends only move forward)."""
    if j >= n or times[lo + j] >= e:
        return j
    step = 1
    a = j  # times[lo + a] < e
    b = j + 1
    while b < n and times[lo + b] < e:
        a = b
        step *= 2
        b = a + step
    if b > n:
        b = n
    a += 1
    while a < b:  # first index in [a, b) with times >= e
        m = (a + b) >> 1
        if times[lo + m] < e:
            a = m + 1
        else:
            b = m
    return a


@njit
def _next_pooled_window(
    times, totals, lo, n, k, j, passed, before, duration, need, credit, c_start, c_end, blocks
):
    """The first relative segment ``k' >= k`` with ``times[lo + k'] < before`` whose window
    (the segments starting before ``times[lo + k'] + duration``) passes the pooled filter
    (every segment's totals, plus ``credit`` on segments starting in ``[c_start, c_end)``,
    cover ``need``); segments ``[k, passed)`` are known to pass and ``j`` is a
    window end no later than ``k``'s. Returns ``(k', window end, passed)``, ``k' = -1``
    when there is none.

    Each window is read from its end backwards, down to what is known to pass: a failing
    segment ``b`` rules out every start up to ``b`` (their windows all contain it), so the
    next candidate is ``b + 1``, and the segments between ``b`` and the window's end are
    known to pass. On a crowded profile a window is rejected after reading one segment or a
    few, where a forward scan reads every segment up to the first failing one. With block
    minima (``blocks`` has rows: :func:`_block_minima`), a block whose minimum covers
    ``need`` is passed over whole, and a segment's value includes its block's pending add."""
    n_res = totals.shape[1]
    with_blocks = blocks.shape[0] > 0
    while k < n:
        if not times[lo + k] < before:
            return -1, j, passed
        if j < k + 1:
            j = k + 1
        j = _window_end(times, lo, n, j, times[lo + k] + duration)
        if passed < k:
            passed = k
        bad = -1
        s = j - 1
        while s >= passed:
            blk = s // BLOCK
            if with_blocks:
                covered = True
                for r in range(n_res):
                    if blocks[blk, 0, r] < need[r]:
                        covered = False
                        break
                if covered:
                    s = blk * BLOCK - 1
                    continue
            a = lo + s
            inside = times[a] >= c_start and times[a] < c_end
            for r in range(n_res):
                have = totals[a, r] + blocks[blk, 1, r] if with_blocks else totals[a, r]
                if inside:
                    have += credit[r]
                if have < need[r]:
                    bad = s
                    break
            if bad >= 0:
                break
            s -= 1
        passed = j
        if bad < 0:
            return k, j, passed
        k = bad + 1
    return -1, j, passed


@njit
def profile_earliest(
    times,
    free,
    totals,
    lo,
    hi,
    req,
    units,
    mpn,
    duration,
    before,
    not_before,
    node_level,
    kind,
    weights,
    window,
    rows,
    suffix,
    blocks,
):
    """Earliest live segment ``k`` (absolute index, ``-1``: none) with ``times[k] < before``
    whose window ``[times[k], times[k] + duration)`` passes the pooled filter (every segment's
    totals cover ``units x req``) and, when ``node_level``, where the allocator places the
    units on the element-wise minimum of the window's free matrices; starts before
    ``not_before`` are not considered. Returns ``(k, rows written)``; the allocation is in
    ``rows[:, :count]`` (node, units). ``blocks``: block minima of ``totals`` kept by the
    caller (:func:`_block_minima`; none pending on a node-level profile), or no rows.

    Window minima: both ends of the windows only move forward, so they come from a queue
    built of two stacks (each segment is read at most twice, rows in memory order):
    ``suffix[s]`` holds the minimum of ``free[s:front_end]`` for the front part and ``back``
    the minimum of ``free[front_end:pushed]``. Each segment's nodes x resources are taken as
    one flat row (``free``, ``suffix`` and ``window`` are C-contiguous), so the minima are
    one loop of ``nodes x resources`` that numba vectorises; looping nodes, then a handful of
    resources, took about twice as long on the README's default workload (128 nodes x 2)."""
    n = hi - lo
    n_res = totals.shape[1]
    n_nodes = free.shape[1]
    zero = np.int64(0)  # not a literal: one compiled _window_end and allocate for every caller
    k0 = _window_end(
        times, lo, n, zero, not_before
    )  # the first segment starting at or after not_before
    need = np.empty(n_res, dtype=np.int64)
    for r in range(n_res):
        need[r] = req[r] * units
    no_credit = np.zeros(n_res, dtype=np.int64)
    j = k0
    passed = k0  # segments [k, passed) are known to pass the pooled filter
    # the minima run over each segment's nodes x resources as one flat row (vectorised)
    width = n_nodes * n_res
    free_rows = free.reshape((free.shape[0], width))
    suffix_rows = suffix.reshape((suffix.shape[0], suffix.shape[1] * suffix.shape[2]))
    window_row = window.reshape(width)
    back = np.empty(width, dtype=np.int64)
    back_empty = True
    front_end = lo + k0  # suffix minima are valid for [a, front_end) once a flip has happened
    pushed = lo + k0
    k = k0
    while True:
        k, j, passed = _next_pooled_window(
            times,
            totals,
            lo,
            n,
            k,
            j,
            passed,
            before,
            duration,
            need,
            no_credit,
            math.inf,
            math.inf,
            blocks,
        )
        if k < 0:
            break
        if not node_level:
            return lo + k, 0
        a = lo + k
        if pushed < a:  # segments before the window were never needed
            pushed = a
            front_end = a
            back_empty = True
        while pushed < lo + j:  # push the window's new segments onto the back stack
            row = free_rows[pushed]
            if back_empty:
                for x in range(width):
                    back[x] = row[x]
                back_empty = False
            else:
                for x in range(width):
                    v = row[x]
                    if v < back[x]:
                        back[x] = v
            pushed += 1
        if a >= front_end:  # front exhausted: move the back stack to the front as suffix minima
            last = suffix_rows[pushed - 1]
            row = free_rows[pushed - 1]
            for x in range(width):
                last[x] = row[x]
            for s in range(pushed - 2, a - 1, -1):
                out = suffix_rows[s]
                row = free_rows[s]
                nxt = suffix_rows[s + 1]
                for x in range(width):
                    v = row[x]
                    w = nxt[x]
                    out[x] = v if v < w else w
            front_end = pushed
            back_empty = True
        front = suffix_rows[a]
        if back_empty:
            for x in range(width):
                window_row[x] = front[x]
        else:
            for x in range(width):
                v = front[x]
                b = back[x]
                window_row[x] = b if b < v else v
        count = allocate(kind, window, req, mpn, units, weights, rows, zero)
        if count >= 0:
            return lo + k, count
        k += 1
    return -1, 0


#: how many failed pooled tests :func:`profile_compress` remembers within one pass
FAILS = 32


@njit
def _known_failing_until(f_need, f_dur, f_lo, f_hi, count, req, units, duration, not_before, s0):
    """The first start the pooled test of a reservation (``req`` x ``units`` for ``duration``,
    currently at ``s0``) still has to try, given the failures remembered in this pass: a
    failure of a request no larger in any resource and no longer, whose range starts at or
    before ``not_before``, rules out every start ``t`` in its range whose window's failing
    segment lies before ``s0`` (``t + f_dur < s0``: the reservation's own slot, credited to
    it, is not in that window). Splitting a segment inside a range keeps its starts failing
    (the new start's window reaches the same failing segment), taking capacity keeps them
    failing, and the ranges are cut where a moved reservation gave capacity back."""
    best = not_before
    n_res = req.shape[0]
    for i in range(count):
        if f_dur[i] > duration or f_lo[i] > not_before:
            continue
        ok = True
        for r in range(n_res):
            if f_need[i, r] > req[r] * units:
                ok = False
                break
        if not ok:
            continue
        until = f_hi[i] if f_hi[i] < s0 - f_dur[i] else s0 - f_dur[i]
        if until > best:
            best = until
    return best


@njit
def profile_compress(
    times,
    free,
    totals,
    lo,
    hi,
    node_level,
    kind,
    weights,
    q_req,
    q_units,
    q_mpn,
    q_start,
    q_end,
    q_off,
    q_nodes,
    q_amts,
    q_checked,
    log_a,
    log_b,
    log_n,
    moved,
    out_off,
    out_len,
    out_rows,
    window,
    rows,
    suffix,
):
    """Conservative backfilling's compression over reservations in queue order: each one is
    taken out, the earliest start strictly before its current start is searched
    (:func:`profile_earliest`), and it moves there if one exists, else it is put back.

    Reservation ``q`` holds ``q_amts[i]`` on ``q_nodes[i]`` for ``i`` in
    ``[q_off[q], q_off[q + 1])`` during ``[q_start[q], q_end[q])``. A moved reservation gets
    ``moved[q] = 1``, its new start and end in ``q_start``/``q_end`` and its allocation in
    ``out_rows[:, out_off[q]:out_off[q] + out_len[q]]`` (empty for a pooled profile).

    Pruning (exact): ``log_a/log_b[:log_n]`` are the intervals in which capacity was given
    back, in order; reservation ``q`` was at its earliest possible start when the log had
    ``q_checked[q]`` entries. Taking capacity never lets a job start earlier, so a window
    that fits now but did not then overlaps an interval logged since: only starts in
    ``(min a - duration, max b)`` are searched, and a reservation with nothing logged since
    its check is skipped. A moved reservation logs the part of its old interval it gave back
    (all of it on a node-level profile, where it may use other nodes now). Returns the new ``hi``
    and log length; the caller guarantees room for two more segments and one more log entry
    per reservation."""
    n_res = totals.shape[1]
    need_row = np.zeros((1, n_res), dtype=np.int64)
    zero_node = np.zeros(1, dtype=np.int64)
    # Failures of the pooled test seen in this pass (a ring of the last FAILS): no start in
    # [f_lo, f_hi) has a window of f_dur with f_need free on every segment, counting no
    # credit (the test counted the reservation's own slot as free, which only adds capacity).
    f_need = np.zeros((FAILS, n_res), dtype=np.int64)
    f_dur = np.zeros(FAILS)
    f_lo = np.zeros(FAILS)
    f_hi = np.zeros(FAILS)
    f_n = 0
    w = 0
    # Block minima of the totals over the room the caller made (segments may be added); on a
    # pooled profile, changes to whole blocks wait in the blocks' pending adds until the end.
    blocks = np.zeros(((times.shape[0] - lo) // BLOCK + 1, 2, n_res), dtype=np.int64)
    lazy = not node_level
    # +1 / -1 and 0 as plain int64 values, not literals: numba would compile profile_apply,
    # _window_end and _block_minima once per literal (each a second of a first run)
    taking, giving_back, zero = np.int64(1), np.int64(-1), np.int64(0)
    _block_minima(totals, lo, hi, blocks, zero)
    need = np.empty(n_res, dtype=np.int64)  # a reservation's units x request ...
    credit = np.empty(n_res, dtype=np.int64)  # ... and its own slot's capacity, summed over nodes
    # The hull of the log since a reservation's check, in O(1): suffix minima / maxima of the
    # log as it is at the start of the pass, and the hull of what the pass appends (checks are
    # set after the pass reads them, so none is past the length at the start; one that were
    # would only widen the hull, which prunes less, never wrongly).
    log_n0 = log_n
    suffix_a = np.empty(log_n0 + 1)
    suffix_b = np.empty(log_n0 + 1)
    suffix_a[log_n0] = math.inf
    suffix_b[log_n0] = -math.inf
    for i in range(log_n0 - 1, -1, -1):
        suffix_a[i] = log_a[i] if log_a[i] < suffix_a[i + 1] else suffix_a[i + 1]
        suffix_b[i] = log_b[i] if log_b[i] > suffix_b[i + 1] else suffix_b[i + 1]
    added_a = math.inf
    added_b = -math.inf
    for q in range(q_units.shape[0]):
        s0 = q_start[q]
        e0 = q_end[q]
        duration = e0 - s0
        c = q_checked[q] if q_checked[q] < log_n0 else log_n0
        first_a = suffix_a[c] if suffix_a[c] < added_a else added_a
        last_b = suffix_b[c] if suffix_b[c] > added_b else added_b
        before = s0 if s0 < last_b else last_b
        if not before > times[lo]:  # nothing given back since its check could let it start earlier
            q_checked[q] = log_n
            continue
        nodes = q_nodes[q_off[q] : q_off[q + 1]]
        amts = q_amts[q_off[q] : q_off[q + 1]]
        req = q_req[q]
        units = q_units[q]
        not_before = first_a - duration
        if not_before < times[lo]:
            not_before = times[lo]
        search_from = _known_failing_until(
            f_need, f_dur, f_lo, f_hi, min(f_n, FAILS), req, units, duration, not_before, s0
        )
        candidate = -1
        if search_from < before:  # the pooled test, with its own slot counted as free
            for r in range(n_res):
                need[r] = req[r] * units
                credit[r] = 0
                for i in range(amts.shape[0]):
                    credit[r] += amts[i, r]
            k = _window_end(times, lo, hi - lo, zero, search_from)
            candidate, _, _ = _next_pooled_window(
                times, totals, lo, hi - lo, k, k, k, before, duration, need, credit, s0, e0, blocks
            )
        if candidate < 0:
            q_checked[q] = log_n  # cannot move even by pooled capacity: the profile is not touched
            slot = f_n % FAILS
            for r in range(n_res):
                f_need[slot, r] = req[r] * units
            f_dur[slot] = duration
            f_lo[slot] = not_before
            f_hi[slot] = before
            f_n += 1
            continue
        hi = profile_apply(
            times, free, totals, lo, hi, s0, e0, nodes, amts, giving_back, blocks, lazy
        )  # splits only after it
        if node_level:  # no start before the candidate passes the pooled filter
            k, count = profile_earliest(
                times,
                free,
                totals,
                lo,
                hi,
                req,
                units,
                q_mpn[q],
                duration,
                before,
                times[lo + candidate],
                node_level,
                kind,
                weights,
                window,
                rows,
                suffix,
                blocks,
            )
        else:  # taken out, its slot is free: the pooled filter with credit was the whole test
            k, count = lo + candidate, 0
        if k >= 0 and times[k] < s0:
            start = times[k]
            moved[q] = 1
            q_start[q] = start
            q_end[q] = start + duration
            if node_level:
                new_nodes = np.empty(count, dtype=np.int64)
                new_amts = np.empty((count, n_res), dtype=np.int64)
                for i in range(count):
                    out_rows[0, w + i] = rows[0, i]
                    out_rows[1, w + i] = rows[1, i]
                    new_nodes[i] = rows[0, i]
                    for r in range(n_res):
                        new_amts[i, r] = rows[1, i] * req[r]
                out_off[q] = w
                out_len[q] = count
                w += count
                hi = profile_apply(
                    times,
                    free,
                    totals,
                    lo,
                    hi,
                    start,
                    start + duration,
                    new_nodes,
                    new_amts,
                    taking,
                    blocks,
                    lazy,
                )
            else:
                for r in range(n_res):
                    need_row[0, r] = need[r]
                hi = profile_apply(
                    times,
                    free,
                    totals,
                    lo,
                    hi,
                    start,
                    start + duration,
                    zero_node,
                    need_row,
                    taking,
                    blocks,
                    lazy,
                )
            # capacity was given back where the old interval is not covered by the new one: all
            # of [s0, e0) on a node-level profile (other nodes may be used now), only its
            # uncovered end [max(s0, start + duration), e0) on a pooled one
            gave = s0
            if not node_level and start + duration > gave:
                gave = start + duration
            log_a[log_n] = gave
            log_b[log_n] = e0
            log_n += 1
            if gave < added_a:
                added_a = gave
            if e0 > added_b:
                added_b = e0
            for i in range(min(f_n, FAILS)):  # windows reaching into [gave, e0) may fit now
                if f_hi[i] > gave - f_dur[i]:
                    f_hi[i] = gave - f_dur[i]
        else:
            hi = profile_apply(
                times, free, totals, lo, hi, s0, e0, nodes, amts, taking, blocks, lazy
            )
        q_checked[q] = log_n
    for blk in range((hi - lo + BLOCK - 1) // BLOCK):
        _block_concrete(free, totals, lo, hi, blocks, blk)
    return hi, log_n


# ======================================================================================
# 7. Entry points: the functions called from Python, compiled ahead of a run
# ======================================================================================


def entry_signatures() -> dict[str, tuple]:
    """The argument types each function called from Python is compiled for: what its callers
    pass (C-ordered arrays, writable but for the engine's request rows). ``install_time``
    compiles these when hpcdispatch is installed; ``tests/test_compiled.py`` checks that real
    runs need no other."""
    i, f, b = types.int64, types.float64, types.boolean
    f1, i1, b1 = f[::1], i[::1], types.int8[::1]
    i2, i3 = i[:, ::1], i[:, :, ::1]
    return {
        "run_steps": (typeof(example_state()), i),
        "profile_earliest": (f1, i3, i2, i, i, i1, i, i, f, f, f, b, i, f1, i2, i2, i3, i3),
        "profile_compress": (
            f1,
            i3,
            i2,
            i,
            i,
            b,
            i,
            f1,
            i2,
            i1,
            i1,
            f1,
            f1,
            i1,
            i1,
            i2,
            i1,
            f1,
            f1,
            i,
            b1,
            i1,
            i1,
            i2,
            i2,
            i2,
            i3,
        ),
    }


#: the entry points keep their compiled code where an installation ships it
#: (:mod:`hpcdispatch.compiled.disk_cache`); the functions they call are compiled into them
ON_DISK = {
    name: keep_on_disk(globals()[name])
    for name in ("run_steps", "profile_earliest", "profile_compress")
}
