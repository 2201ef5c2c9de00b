"""The CP-based dispatchers, registered: cp-rule, HCP'19, PCP'19, PCP'20 and cp-hybrid.

Each is the shared pipeline (:class:`hpcdispatch.cp.pipeline.CPDispatcher`) with one CP
model (:mod:`hpcdispatch.cp.models`); a new CP model is a module there and five lines here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hpcdispatch.cp.models import hcp, hybrid, pcp19, pcp20
from hpcdispatch.cp.pipeline import CPDispatcher
from hpcdispatch.protocol import register


@register
class CPRule(CPDispatcher):
    """The papers' priority-rule decision alone (slowdown priority, earliest start, best fit)."""

    name = "cp-rule"
    MODEL = None
    #: no model, so job symmetry changes nothing: a run from before the option is either
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {**CPDispatcher.ADDED_PARAMS, "job_symmetry": True}


@register
class HCP(CPDispatcher):
    """HCP'19: pooled CP scheduling model, then priority-rule best-fit allocation; a job best
    fit cannot place is postponed and the scheduling model solved again (the papers' iterations
    between the two stages; ``allocation_iterations`` in each decision's info)."""

    name = "hcp"
    MODEL = hcp.MODEL
    RESOLVE_UNPLACED = True
    #: runs from before ``on_unplaced`` postponed an unplaced job without re-solving
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {
        **CPDispatcher.ADDED_PARAMS,
        "on_unplaced": "postpone",
    }


@register
class PCP19(CPDispatcher):
    """PCP'19: one CP model for scheduling and per-node allocation (optional interval copies)."""

    name = "pcp19"
    MODEL = pcp19.MODEL


@register
class PCP20(CPDispatcher):
    """PCP'20: one CP model whose size does not grow with the system (positions, NoOverlap2D)."""

    name = "pcp20"
    MODEL = pcp20.MODEL


@register
class CPHybrid(CPDispatcher):
    """cp-hybrid: pooled future, exact node-level start-now packing on node classes."""

    name = "cp-hybrid"
    MODEL = hybrid.MODEL
