"""The CP models: each module defines ``build(x: ModelInput) -> BuiltModel`` and ``MODEL``,
its :class:`CPModel`: :mod:`~hpcdispatch.cp.models.hcp` (HCP'19),
:mod:`~hpcdispatch.cp.models.pcp19`, :mod:`~hpcdispatch.cp.models.pcp20` and
:mod:`~hpcdispatch.cp.models.hybrid` (cp-hybrid). A model is given a :class:`ModelInput` and
returns a :class:`BuiltModel`; the solution reads back as a :class:`Schedule`.
"""

from hpcdispatch.cp.models import hcp, hybrid, pcp19, pcp20
from hpcdispatch.cp.models.common import BuiltModel, CPModel, ModelInput, Schedule

__all__ = ["BuiltModel", "CPModel", "ModelInput", "Schedule", "hcp", "hybrid", "pcp19", "pcp20"]
