"""Constraint-programming dispatching: instances, policies (CP'19 versions), the priority rule,
the models (HCP'19, PCP'19, PCP'20, cp-hybrid) and the solve loop. The dispatchers that use
them live in :mod:`hpcdispatch.dispatchers.cp`."""
