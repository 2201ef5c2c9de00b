"""The CP models: each module has ``build(...) -> BuiltModel`` and ``NODE_LEVEL_RULE``."""
