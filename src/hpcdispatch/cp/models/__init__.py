"""The CP models: each module defines ``build(x: ModelInput) -> BuiltModel`` and ``MODEL``,
its :class:`~hpcdispatch.cp.models.common.CPModel`."""
