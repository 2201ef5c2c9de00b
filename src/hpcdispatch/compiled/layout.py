"""The compiled engine's state layout: the rows and registers of :class:`EngineState`, the
codes the event loop returns and refuses with, and the numbers of the allocators and policies.

Kept apart from the kernels (``kernels.py``, which imports numba) so that a run on the engine an
installation compiled ahead of time (:mod:`hpcdispatch.compiled.runner`) builds its state and
reads its result without importing numba. The kernels read these constants as globals, frozen
into their compiled code: the engine's disk cache and the ahead-of-time engine are both stamped
with this file's text as well as the kernels' (:func:`~hpcdispatch.compiled.disk_cache.source_stamp`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# ---- rows of ``ji`` (int64, per job) ----------------------------------------------------
UNITS, MPN = 0, 1  # units and max units per node (0 = no limit)
QNEXT, QPREV = 2, 3  # the queue: a doubly linked list over job indices, in submit order
RUN_LIST, RUN_POS = 4, 5  # running jobs: ``RUN_LIST[:regs[NRUN]]`` and each one's position
ALLOC_OFF, ALLOC_LEN = 6, 7  # a started job's allocation rows in ``rows``
START_ORDER = 8  # started jobs in start order
HEAP_SEQ, HEAP_JOB = 9, 10  # end events: a binary heap on (JF_HEAP_T, HEAP_SEQ)
STATUS = 11  # 0 pending, 1 queued, 2 running, 3 completed
DEC_JOB, DEC_OFF, DEC_LEN = 12, 13, 14  # the decision being made: job, first row, rows
REL_JOB = 15  # policy scratch
SHAPE = 16  # the job's shape: jobs with equal request rows and max per node share one
N_JI = 17
# ---- rows of ``jf`` (float64, per job) --------------------------------------------------
JF_SUBMIT, JF_DURATION, JF_PLANNED = (
    0,
    1,
    2,
)  # JF_DURATION: real run time, or the wall-time when killed
JF_PLANNED_END = 3  # start + planned duration
JF_HEAP_T = 4
JF_START, JF_END = 5, 6
JF_REL_END = 7  # policy scratch
N_JF = 8
# ---- ``mat`` (int64, k x nodes x resources) and ``tot`` (int64, k x resources) ----------
FREE, SCRATCH, SHADOW = 0, 1, 2  # free capacity, the policy's working copy, the policy's own
# ---- ``rows`` (int64, 2 x allocation rows) ----------------------------------------------
NODE, ROW_UNITS = 0, 1
# ---- ``dl``: the decision log (float64, rows x calls) -----------------------------------
D_TIME, D_QUEUE, D_RUNNING, D_STARTED, D_ELAPSED = 0, 1, 2, 3, 4
D_INFO = 5  # the policy's info values from here on, NaN = not set
# ---- integer registers (``regs``) -------------------------------------------------------
QHEAD, QTAIL, QLEN = 0, 1, 2
NRUN = 3  # running jobs
NROWS = 4  # allocation rows written by applied starts
NSTARTED = 5  # jobs started so far
HSIZE, SEQ = 6, 7  # end-event heap size, next sequence number
SUBMITTED = 8  # next job to submit
NCALL = 9  # dispatcher calls so far
NDONE = 10  # jobs ended
ENDED = 11  # jobs ended since the last call
NEWFIRST = 12  # first job submitted since the last call (-1: none)
NDEC = 13  # starts in the current decision
USED = 14  # allocation rows the current decision uses (written from ``NROWS`` on)
ERROR, ERROR_JOB, ERROR_NODE = 15, 16, 17  # why a decision was refused
ALLOCATOR, POLICY = 18, 19
POL = 32  # the policy's own registers: ``regs[POL:]``
N_REGS = 96
# ---- float registers (``fregs``) --------------------------------------------------------
PARAMS = 0  # the policy's parameters (up to 8)
F_POL = 8  # the policy's own float registers (8, then one per resource from F_POL + 8)

# error codes (``regs[ERROR]``)
NOT_QUEUED, BAD_NODES, BAD_UNITS, OVER_CAPACITY, STALLED = 1, 2, 3, 4, 5
# what :func:`engine.run_steps` returns
FINISHED, PAUSED, REFUSED = 0, 1, -1
# ``memo`` (int64, tables x 2 x shapes): per shape, the stamp of the table's current
# contents (a table is emptied by a new stamp) and the fewest units known to fail
MEMO_STAMP, MEMO_UNITS = 0, 1


class EngineState(NamedTuple):
    ji: np.ndarray  # int64 (N_JI x jobs)
    jf: np.ndarray  # float64 (N_JF x jobs)
    req: np.ndarray  # int64 (jobs x resources): per-unit request
    mat: np.ndarray  # int64 (3 x nodes x resources)
    tot: np.ndarray  # int64 (3 x resources): pooled totals of ``mat``
    weights: np.ndarray  # float64 per resource (best fit's score)
    rows: np.ndarray  # int64 (2 x allocation rows)
    dl: np.ndarray  # float64 (D_INFO + info values x calls)
    regs: np.ndarray  # int64 (N_REGS)
    fregs: np.ndarray  # float64
    memo: np.ndarray  # int64 (tables x 2 x shapes)


FIRST_FIT, BEST_FIT = 0, 1

FIFO, EASY = 0, 1
POLICIES = {"fifo": FIFO, "easy": EASY}


def example_state(n_res: int = 1) -> EngineState:
    """A state of no jobs whose arrays have the types :func:`hpcdispatch.compiled.runner.build_state`
    gives them (dtype, dimensions, C order, writable but for ``req``)."""
    i, f = np.int64, np.float64
    req = np.zeros((0, n_res), dtype=i)
    req.flags.writeable = False  # the workload's request rows, read-only
    return EngineState(
        ji=np.zeros((N_JI, 0), dtype=i),
        jf=np.zeros((N_JF, 0), dtype=f),
        req=req,
        mat=np.zeros((3, 1, n_res), dtype=i),
        tot=np.zeros((3, n_res), dtype=i),
        weights=np.zeros(n_res, dtype=f),
        rows=np.zeros((2, 1), dtype=i),
        dl=np.zeros((D_INFO, 1), dtype=f),
        regs=np.zeros(N_REGS, dtype=i),
        fregs=np.zeros(F_POL + 8 + n_res, dtype=f),
        memo=np.zeros((2, 2, 1), dtype=i),
    )
