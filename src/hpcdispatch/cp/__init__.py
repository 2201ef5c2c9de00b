"""Constraint-programming dispatching: instances, policies (CP'19 versions), the priority rule,
the models (HCP'19, PCP'19, PCP'20, cp-hybrid), the solve loop, and the pipeline that ties
them into one decision (:class:`~hpcdispatch.cp.pipeline.CPDispatcher`). The registered
dispatchers are in :mod:`hpcdispatch.dispatchers.cp`."""
